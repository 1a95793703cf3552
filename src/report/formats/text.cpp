// --format text: what a person reads on a terminal (the default of lint, check, probe, harden).

#include "report/format.hpp"
#include "report/harden_output.hpp"
#include "report/probe_output.hpp"

namespace ngxtls::report {

const report_format& text_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "text";
    f.lint = [](const lint_report& r, const output_context& ctx, std::ostream& out) {
      write_text(r, ctx.color, out);
    };
    f.check = [](const check_report& r, const output_context& ctx, std::ostream& out) {
      write_check_text(r, ctx.color, out);
    };
    f.probe = [](const std::vector<probe::target_result>& r, const output_context& ctx,
                 std::ostream& out) { out << probe_text(r, ctx.color); };
    f.harden = [](const harden::snippet& s, const output_context&, std::ostream& out) {
      out << harden_text(s);
    };
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
