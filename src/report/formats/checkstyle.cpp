// --format checkstyle: Checkstyle XML (checkstyle > file name= > error line column severity
// message source), which reviewdog, Jenkins' warnings plugin and gixy users' tools read. Files
// in the order of their first finding, paths relative to the project root; severities error,
// warning and info.

#include <map>
#include <vector>

#include "report/fingerprint.hpp"
#include "report/format.hpp"
#include "report/xml_text.hpp"

namespace ngxtls::report {

namespace {

void write_checkstyle(const lint_report& r, const output_context& ctx, std::ostream& out) {
  // Each place of each finding under its file.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<const engine::finding*, const source_location*>>>
      by_file;
  for (const auto& f : r.findings)
    for (std::size_t p = 0; p <= f.also_at.size(); ++p) {
      const source_location& at = p == 0 ? f.location : f.also_at[p - 1];
      const std::string path = project_path(at.file, ctx.working_dir);
      auto [it, fresh] = by_file.try_emplace(path);
      if (fresh) order.push_back(path);
      it->second.emplace_back(&f, &at);
    }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<checkstyle version=\"4.3\">\n";
  for (const auto& path : order) {
    out << "  <file name=\"" << xml_text(path) << "\">\n";
    for (const auto& [f, at] : by_file[path]) {
      const char* severity = f->level == engine::severity::error     ? "error"
                             : f->level == engine::severity::warning ? "warning"
                                                                     : "info";
      out << "    <error line=\"" << at->line << "\"";
      if (at->column > 0) out << " column=\"" << at->column << "\"";
      out << " severity=\"" << severity << "\" message=\"" << xml_text(f->message)
          << "\" source=\"ngxtls." << xml_text(f->rule) << "\"/>\n";
    }
    out << "  </file>\n";
  }
  out << "</checkstyle>\n";
}

}  // namespace

const report_format& checkstyle_format() {
  static const report_format format = [] {
    report_format f;
    f.name = "checkstyle";
    f.lint = write_checkstyle;
    return f;
  }();
  return format;
}

}  // namespace ngxtls::report
