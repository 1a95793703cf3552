#include "report/json_writer.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

namespace ngxtls::report {

void append_json_string(std::string& out, std::string_view s) {
  // ASCII is escaped here, as nlohmann::json escapes it (\b \t \n \f \r \" \\, other control
  // characters as \u00xx, DEL as it is); a string with any other byte goes through
  // nlohmann::json, which checks its UTF-8. Fix snippets hold newlines: most strings of a
  // report need some escape, and a json value made per string cost a tenth of the report.
  for (const char ch : s)
    if (static_cast<unsigned char>(ch) >= 0x80) {
      out += nlohmann::json(std::string(s))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet appended
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default: {
        static constexpr char hex[] = "0123456789abcdef";
        const char esc[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
        out.append(esc, sizeof esc);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void json_writer::item() {
  if (spill_ && out_.size() >= spill_size_bytes) {
    spill_->write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
  }
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_items_.empty()) return;
  out_ += has_items_.back() ? ",\n" : "\n";
  has_items_.back() = true;
  out_.append(static_cast<std::size_t>(step_ * (level_ + static_cast<int>(has_items_.size()))),
              ' ');
}

void json_writer::open(char c) {
  item();
  out_ += c;
  has_items_.push_back(false);
}

void json_writer::close(char c) {
  const bool any = has_items_.back();
  has_items_.pop_back();
  if (any) {
    out_ += '\n';
    out_.append(static_cast<std::size_t>(step_ * (level_ + static_cast<int>(has_items_.size()))),
                ' ');
  }
  out_ += c;
}

void json_writer::key(std::string_view k) {
  item();
  append_json_string(out_, k);
  out_ += ": ";
  after_key_ = true;
}

void json_writer::value(std::string_view s) {
  item();
  append_json_string(out_, s);
}

void json_writer::value(std::uint64_t n) {
  item();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out_.append(buf, r.ptr);
}

void json_writer::null_value() {
  item();
  out_ += "null";
}

void json_writer::raw(std::string_view json_text) {
  item();
  out_ += json_text;
}

}  // namespace ngxtls::report
