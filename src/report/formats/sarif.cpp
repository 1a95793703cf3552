// --format sarif: SARIF 2.1.0 for code scanning (report/sarif_output.hpp).

#include "report/format.hpp"
#include "report/sarif_output.hpp"

namespace ngxtls::report {

const report_format& sarif_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "sarif";
    f.lint = [](const lint_report& r, const output_context& ctx, std::ostream& out) {
      write_sarif(r, ctx.working_dir, out);
    };
    f.check = [](const check_report& r, const output_context& ctx, std::ostream& out) {
      write_check_sarif(r, ctx.working_dir, out);
    };
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
