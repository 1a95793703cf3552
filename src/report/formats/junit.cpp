// --format junit: JUnit XML (the shape Jenkins, GitLab `artifacts:reports:junit` and most CI test
// views read: testsuites > testsuite > testcase, a failure element in a failing testcase).
// Each place of each finding is a failing testcase named by rule and place; a run without
// findings is one passing testcase, so the report is never an empty suite.

#include <map>

#include "report/fingerprint.hpp"
#include "report/format.hpp"
#include "report/xml_text.hpp"

namespace ngxtls::report {

namespace {

void write_junit(const lint_report& r, const output_context& ctx, std::ostream& out) {
  std::size_t cases = 0;
  for (const auto& f : r.findings) cases += 1 + f.also_at.size();
  const std::size_t failures = cases;
  if (cases == 0) cases = 1;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"ngxtls\" tests=\"" << cases << "\" failures=\"" << failures
      << "\" errors=\"0\">\n"
      << "  <testsuite name=\"ngxtls lint\" tests=\"" << cases << "\" failures=\"" << failures
      << "\" errors=\"0\" skipped=\"0\">\n";
  if (failures == 0) out << "    <testcase classname=\"ngxtls\" name=\"no findings\"/>\n";
  std::map<std::string, std::string> path_of;
  for (const auto& f : r.findings)
    for (std::size_t p = 0; p <= f.also_at.size(); ++p) {
      const source_location& at = p == 0 ? f.location : f.also_at[p - 1];
      auto it = path_of.find(at.file);
      if (it == path_of.end())
        it = path_of.emplace(at.file, project_path(at.file, ctx.working_dir)).first;
      const std::string place =
          it->second + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
      out << "    <testcase classname=\"" << xml_text(it->second) << "\" name=\""
          << xml_text(f.rule + " at " + place) << "\" file=\"" << xml_text(it->second)
          << "\" line=\"" << at.line << "\">\n"
          << "      <failure type=\"" << to_string(f.level) << "\" message=\""
          << xml_text(f.message) << "\">"
          << xml_text(place + ": " + to_string(f.level) + " [" + f.rule + "] " + f.message +
                          (f.fix.empty() ? "" : "\nfix:\n" + f.fix),
                      true)
          << "</failure>\n    </testcase>\n";
    }
  out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace

const report_format& junit_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "junit";
    f.lint = write_junit;
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
