// --format json: the records of docs/lint-json.md, docs/check-json.md, docs/probe-json.md,
// parse's syntax tree and harden's snippet record.

#include <nlohmann/json.hpp>

#include "report/format.hpp"
#include "report/harden_output.hpp"
#include "report/parse_output.hpp"
#include "report/probe_output.hpp"

namespace ngxtls::report {

namespace {

// Pretty-printed with a final newline; config and peer bytes that are not UTF-8 replaced.
void write_document(const nlohmann::json& doc, std::ostream& out) {
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace

const report_format& json_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "json";
    f.lint = [](const lint_report& r, const output_context&, std::ostream& out) {
      write_json(r, out);
    };
    f.check = [](const check_report& r, const output_context&, std::ostream& out) {
      write_check_json(r, out);
    };
    f.probe = [](const std::vector<probe::target_result>& r, const output_context&,
                 std::ostream& out) { write_document(probe_json(r), out); };
    f.parse = [](const config::config& cfg, const output_context& ctx, std::ostream& out) {
      write_tree_json(cfg, ctx.single_file, out);
    };
    f.harden = [](const harden::snippet& s, const output_context& ctx, std::ostream& out) {
      write_document(harden_json(s, ctx.project_config), out);
    };
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
