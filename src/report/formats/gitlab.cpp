// --format gitlab: GitLab Code Quality (the JSON artifact of `artifacts:reports:codequality`,
// docs.gitlab.com ci/testing/code_quality: an array of issues, each with description,
// check_name, fingerprint, severity info|minor|major|critical|blocker and location.path /
// location.lines.begin). One issue per place, its path relative to the project root and its
// fingerprint the place's (report/fingerprint.hpp), so that GitLab tracks it as lines move.

#include <nlohmann/json.hpp>

#include "report/fingerprint.hpp"
#include "report/format.hpp"
#include "rules/security.hpp"

namespace ngxtls::report {

namespace {

const char* gitlab_severity(engine::severity s) {
  switch (s) {
    case engine::severity::error:
      return "critical";
    case engine::severity::warning:
      return "major";
    default:
      return "info";
  }
}

void write_gitlab(const lint_report& r, const output_context& ctx, std::ostream& out) {
  out << "[";
  bool first = true;
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const auto& f = r.findings[i];
    for (std::size_t p = 0; p <= f.also_at.size(); ++p) {
      const source_location& at = p == 0 ? f.location : f.also_at[p - 1];
      nlohmann::ordered_json issue = {
          {"type", "issue"},
          {"check_name", f.rule},
          {"description", f.message},
          {"categories", {rules::security_severity(f.rule) ? "Security" : "Bug Risk"}},
          {"severity", gitlab_severity(f.level)},
          {"fingerprint", i < r.fingerprints.size() ? r.fingerprints[i].at(p) : std::string()},
          {"location",
           {{"path", project_path(at.file, ctx.working_dir)},
            {"lines", {{"begin", std::max<std::uint32_t>(at.line, 1)}}}}}};
      if (!f.fix.empty()) issue["content"] = {{"body", "Fix:\n\n```nginx\n" + f.fix + "\n```"}};
      out << (first ? "\n  " : ",\n  ")
          << issue.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      first = false;
    }
  }
  out << (first ? "]\n" : "\n]\n");
}

}  // namespace

const report_format& gitlab_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "gitlab";
    f.lint = write_gitlab;
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
