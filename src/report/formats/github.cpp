// --format github: GitHub Actions workflow annotations (report/sarif_output.hpp).

#include "report/format.hpp"
#include "report/sarif_output.hpp"

namespace ngxtls::report {

const report_format& github_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "github";
    f.lint = [](const lint_report& r, const output_context& ctx, std::ostream& out) {
      write_github(r, ctx.working_dir, out);
    };
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
