// --format prometheus: the probe's gauges in the text exposition format 0.0.4, for
// node_exporter's textfile collector (report/probe_output.hpp).

#include "report/format.hpp"
#include "report/probe_output.hpp"

namespace ngxtls::report {

const report_format& prometheus_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "prometheus";
    f.probe = [](const std::vector<probe::target_result>& r, const output_context&,
                 std::ostream& out) { out << probe_prometheus(r); };
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
