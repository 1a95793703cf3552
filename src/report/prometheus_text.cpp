#include "report/prometheus_text.hpp"

namespace ngxtls::report {

std::string prometheus_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char ch : v) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

}  // namespace ngxtls::report
