// The registry of probe measurement modules, and what they share for rendering.
#include <charconv>
#include <cmath>
#include <sstream>

#include "probe/measurement.hpp"

namespace ngxtls::probe {

// Each module file defines its accessor; the list below registers it. Its place in the list
// is the place of its output.
const measurement& resumption_module();
const measurement& tickets_module();
const measurement& timings_module();
const measurement& ocsp_module();
const measurement& certificate_module();
const measurement& load_module();
const measurement& headers_module();
const measurement& close_module();
const measurement& early_data_module();
const measurement& quic_module();

const std::vector<const measurement*>& measurements() {
  static const std::vector<const measurement*> all = {
      &resumption_module(),  &tickets_module(), &timings_module(), &ocsp_module(),
      &certificate_module(), &load_module(),    &headers_module(), &close_module(),
      &early_data_module(),  &quic_module(),
  };
  return all;
}

std::unique_ptr<module_state> measurement::start_target(target_state&) const {
  return nullptr;
}
void measurement::on_connection(target_state&, module_state*, run_state*, const connection&) const {
}
int measurement::full_handshakes_at_start(const run_state&) const {
  return 0;
}
bool measurement::wants_full_handshakes(const target_state&, const module_state*,
                                        const run_state&) const {
  return false;
}
bool measurement::wants_retry(const target_state&, const module_state*) const {
  return false;
}
void measurement::finish_run(target_state&, module_state*, run_state&) const {}
void measurement::finish_target(target_state&, module_state*) const {}
void measurement::run_verdicts(const run_result&, std::vector<std::string>&) const {}
void measurement::target_verdicts(const target_result&, std::vector<std::string>&) const {}
void measurement::run_text(const run_result&, text_sink&) const {}
void measurement::target_text(const target_result&, text_sink&) const {}
std::string_view measurement::target_text_before() const {
  return {};
}
void measurement::run_json(const run_result&, nlohmann::json&) const {}
void measurement::target_json(const target_result&, nlohmann::json&) const {}
void measurement::declare_metrics(metric_set&) const {}
void measurement::run_metrics(const run_result&, const label_set&, metric_set&) const {}
void measurement::target_metrics(const target_result&, const label_set&, metric_set&) const {}

std::string sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

label_set with_label(label_set l, std::string name, std::string value) {
  l.emplace_back(std::move(name), std::move(value));
  return l;
}

std::string label_value(const std::string& v) {
  std::string out;
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

void metric_set::declare(std::string name, std::string help, std::string_view before) {
  for (const auto& f : families_)
    if (f.name == name) return;
  auto at = families_.end();
  if (!before.empty())
    for (auto it = families_.begin(); it != families_.end(); ++it)
      if (it->name == before) at = it;
  families_.insert(at, family{std::move(name), std::move(help), {}});
}

std::string sample_line(std::string_view name, const label_set& labels, double value) {
  std::string line(name);
  if (!labels.empty()) {
    line += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i) line += ',';
      line += labels[i].first + "=\"" + label_value(labels[i].second) + "\"";
    }
    line += '}';
  }
  line += ' ';
  line += sample_value(value);
  return line;
}

void metric_set::add(std::string_view name, const label_set& labels, double value) {
  for (auto& f : families_)
    if (f.name == name) {
      f.lines.push_back(sample_line(f.name, labels, value));
      return;
    }
}

std::vector<std::string> metric_set::names() const {
  std::vector<std::string> out;
  for (const auto& f : families_) out.push_back(f.name);
  return out;
}

std::string metric_set::render() const {
  std::ostringstream s;
  for (const auto& x : families_) {
    if (x.lines.empty()) continue;
    s << "# HELP " << x.name << " " << x.help << "\n# TYPE " << x.name << " gauge\n";
    for (const auto& line : x.lines) s << line << "\n";
  }
  return s.str();
}

}  // namespace ngxtls::probe
