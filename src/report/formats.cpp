#include "report/format.hpp"

namespace ngxtls::report {

// One accessor per format (report/formats/NAME.cpp), each returning a function-local static.
const report_format& text_format();
const report_format& json_format();
const report_format& sarif_format();
const report_format& github_format();
const report_format& prometheus_format();
const report_format& crossplane_format();
const report_format& gitlab_format();
const report_format& junit_format();
const report_format& checkstyle_format();

const std::vector<const report_format*>& formats() {
  // The order of --format's choices in every command's help.
  static const std::vector<const report_format*> all = {
      &text_format(),   &json_format(),       &sarif_format(),
      &github_format(), &prometheus_format(), &crossplane_format(),
      &gitlab_format(), &junit_format(),      &checkstyle_format(),
  };
  return all;
}

std::string_view to_string(command c) {
  switch (c) {
    case command::lint:
      return "lint";
    case command::check:
      return "check";
    case command::probe:
      return "probe";
    case command::parse:
      return "parse";
    case command::harden:
      return "harden";
  }
  return "";
}

bool report_format::serves(command c) const {
  switch (c) {
    case command::lint:
      return static_cast<bool>(lint);
    case command::check:
      return static_cast<bool>(check);
    case command::probe:
      return static_cast<bool>(probe);
    case command::parse:
      return static_cast<bool>(parse);
    case command::harden:
      return static_cast<bool>(harden);
  }
  return false;
}

std::vector<std::string> format_names(command c) {
  std::vector<std::string> out;
  for (const auto* f : formats())
    if (f->serves(c)) out.emplace_back(f->name);
  return out;
}

const report_format& format_for(command c, std::string_view name) {
  for (const auto* f : formats())
    if (f->name == name && f->serves(c)) return *f;
  throw usage_error(std::string(to_string(c)) + ": no report format " + std::string(name));
}

}  // namespace ngxtls::report
