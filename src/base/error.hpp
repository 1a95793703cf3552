#pragma once
// Typed errors shared by every layer. Only src/cli turns them into messages and exit codes.

#include <compare>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ngxtls {

/// A file's path as places name it, shared rather than copied: the places of one file all
/// hold the one string its source_file holds (a 20 MB config's findings name ~400,000 places
/// in 14,000 files; a copy of the path per place was a third of the findings' memory).
/// Used like a `const std::string&`; immutable.
class file_path {
 public:
  file_path() = default;
  file_path(std::string s);       // NOLINT: implicit, as the std::string it replaces
  file_path(std::string_view s);  // NOLINT: implicit
  file_path(const char* s);       // NOLINT: implicit
  /// The path ("" when none).
  const std::string& str() const noexcept { return p_ ? *p_ : empty_path(); }
  operator const std::string&() const noexcept { return str(); }  // NOLINT: implicit
  operator std::string_view() const noexcept { return str(); }    // NOLINT: implicit
  bool empty() const noexcept { return str().empty(); }
  std::size_t size() const noexcept { return str().size(); }
  const char* c_str() const noexcept { return str().c_str(); }
  const char* data() const noexcept { return str().data(); }
  /// True when both hold the one shared string: equal without comparing bytes.
  bool same_string(const file_path& o) const noexcept { return p_ == o.p_; }
  /// The shared string's address (null when empty): a key for maps of paths that come from
  /// one config (equal paths there share a string).
  const void* identity() const noexcept { return p_.get(); }

  friend bool operator==(const file_path& a, const file_path& b) noexcept {
    return a.p_ == b.p_ || a.str() == b.str();
  }
  friend std::strong_ordering operator<=>(const file_path& a, const file_path& b) noexcept {
    if (a.p_ == b.p_) return std::strong_ordering::equal;
    return a.str() <=> b.str();
  }
  friend bool operator==(const file_path& a, std::string_view b) noexcept { return a.str() == b; }
  friend bool operator==(const file_path& a, const std::string& b) noexcept { return a.str() == b; }
  friend bool operator==(const file_path& a, const char* b) noexcept { return a.str() == b; }
  friend std::string operator+(const file_path& a, std::string_view b) {
    std::string out = a.str();
    out += b;
    return out;
  }
  friend std::string operator+(const file_path& a, char b) { return a.str() + b; }
  friend std::string operator+(std::string_view a, const file_path& b) {
    std::string out(a);
    out += b.str();
    return out;
  }
  friend std::string operator+(const char* a, const file_path& b) {
    return std::string_view(a) + b;
  }

 private:
  static const std::string& empty_path() noexcept;
  std::shared_ptr<const std::string> p_;
};

/// A place in a configuration file: path as given or resolved, 1-based line and column (bytes).
/// line == 0 means "the whole file" (e.g. it could not be opened).
struct source_location {
  file_path file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  /// The same file, line and column.
  bool operator==(const source_location&) const = default;
  /// Ordered by file, then line, then column (the order of a report).
  auto operator<=>(const source_location&) const = default;
  /// The same file and line, whatever the column: nginx's messages name a line, not a column.
  bool same_line(const source_location& other) const {
    return file == other.file && line == other.line;
  }
};

/// "file:line:col" (or "file:line", or "file" when line/column are 0).
std::string to_string(const source_location& where);

/// Bad input: a syntax error, an unreadable or missing file, an include cycle, a limit hit.
/// `message` is in nginx's own words where nginx has them (e.g. `unexpected "}"`);
/// `include_chain` lists the include directives that led to `where`, outermost first.
/// The CLI maps it to exit code 2.
class input_error : public std::runtime_error {
 public:
  input_error(source_location where, std::string message,
              std::vector<source_location> include_chain = {});
  const source_location& where() const noexcept { return where_; }
  const std::string& message() const noexcept { return message_; }
  const std::vector<source_location>& include_chain() const noexcept { return chain_; }

  /// A place related to the error: what nginx would report before it (`first`: an earlier
  /// line nginx stops at), or where the block an end of file left open was opened.
  struct related {
    source_location where;
    std::string message;
    bool first = false;  ///< reported before the error itself (nginx stops there first)
  };
  /// The related places, in the order they were added.
  const std::vector<related>& related_places() const noexcept { return related_; }
  /// Adds a related place (see related).
  void add_related(related r) { related_.push_back(std::move(r)); }

 private:
  source_location where_;
  std::string message_;
  std::vector<source_location> chain_;
  std::vector<related> related_;
};

/// Wrong command-line use or option values that the CLI parser cannot catch (exit code 2).
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A probe target could not be reached or spoke no TLS (exit code 3).
class target_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ngxtls

/// Hashes a file_path as its string (equal paths, shared or not, hash alike).
template <>
struct std::hash<ngxtls::file_path> {
  std::size_t operator()(const ngxtls::file_path& p) const noexcept {
    return std::hash<std::string>{}(p.str());
  }
};
