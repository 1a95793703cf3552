#pragma once
// Pretty JSON text written straight into a string, laid out byte for byte as
// nlohmann::json::dump(step) lays out the same value (keys must be given in nlohmann::json's
// sorted order): reports of 100,000s of findings built a json value per finding and dumped
// it, which cost more than linting.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ngxtls::report {

/// Appends `s` as a JSON string literal, escaped as nlohmann::json::dump escapes it
/// (ensure_ascii off; invalid UTF-8 replaced by U+FFFD).
void append_json_string(std::string& out, std::string_view s);

/// Writes one JSON value into `out`, nested `level` levels deep in a document indented by
/// `step` (the first line is not indented: the caller has placed it).
class json_writer {
 public:
  /// Writes into `out`, which it appends to. With `spill`, what `out` holds is written to
  /// `*spill` and `out` cleared whenever it reaches spill_size_bytes between two values, so a
  /// value of any size is written through a bounded buffer.
  explicit json_writer(std::string& out, int level = 0, int step = 2, std::ostream* spill = nullptr)
      : out_(out), spill_(spill), level_(level), step_(step) {}
  /// How much text a json_writer with a spill stream holds before writing it out.
  static constexpr std::size_t spill_size_bytes = 64 * 1024;
  /// `{` / `[`; the matching end_object() / end_array() closes it.
  void begin_object() { open('{'); }
  void begin_array() { open('['); }
  void end_object() { close('}'); }
  void end_array() { close(']'); }
  /// The key of the next value in the current object.
  void key(std::string_view k);
  /// A string value.
  void value(std::string_view s);
  /// A number value.
  void value(std::uint64_t n);
  /// `null`.
  void null_value();
  /// A value already laid out as JSON text for this place (dump_nested at this depth).
  void raw(std::string_view json_text);
  /// How deep the next value sits in the document: dump_nested's `level` for it.
  int depth() const { return level_ + static_cast<int>(has_items_.size()); }
  /// key(k), then value(v).
  void field(std::string_view k, std::string_view v) {
    key(k);
    value(v);
  }
  /// key(k), then value(n).
  void field(std::string_view k, std::uint64_t n) {
    key(k);
    value(n);
  }

 private:
  void open(char c);
  void close(char c);
  void item();  // before a value or key: the separator and the indent
  std::string& out_;
  std::ostream* spill_;
  int level_;
  int step_;
  std::vector<bool> has_items_;  // per open container: something was written in it
  bool after_key_ = false;
};

}  // namespace ngxtls::report
