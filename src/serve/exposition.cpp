#include "serve/exposition.hpp"

#include "report/probe_output.hpp"

namespace ngxtls::serve {

namespace {

std::string_view type_name(metric_type t) {
  switch (t) {
    case metric_type::gauge:
      return "gauge";
    case metric_type::counter:
      return "counter";
    case metric_type::histogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

metric_family::metric_family(std::string name, metric_type type, std::string help)
    : name_(std::move(name)), help_(std::move(help)), type_(type) {}

void metric_family::add(const label_set& labels, double value, std::string_view suffix) {
  lines_.push_back(probe::sample_line(name_ + std::string(suffix), labels, value));
}

void metric_family::write(std::string& out) const {
  if (lines_.empty()) return;
  out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " ";
  out += type_name(type_);
  out += '\n';
  for (const auto& l : lines_) out += l + "\n";
}

std::string probe_exposition(const probe::target_result& t, double duration_seconds,
                             double age_seconds) {
  report::prometheus_options o;
  o.target_label = false;
  o.duration_seconds = duration_seconds;
  o.result_age_seconds = age_seconds;
  return report::probe_prometheus({t}, o);
}

}  // namespace ngxtls::serve
