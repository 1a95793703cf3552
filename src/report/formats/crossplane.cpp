// --format crossplane: crossplane 0.5.7's `crossplane parse` JSON (report/parse_output.hpp).

#include "report/format.hpp"
#include "report/parse_output.hpp"

namespace ngxtls::report {

const report_format& crossplane_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "crossplane";
    f.parse = [](const config::config& cfg, const output_context& ctx, std::ostream& out) {
      write_crossplane(cfg, ctx.single_file, out);
    };
    // crossplane prints its failed-status record for an input error.
    f.parse_error = [](const input_error& e, std::ostream& out) {
      out << render_crossplane_error(e);
    };
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
