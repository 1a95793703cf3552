#include "report/parse_output.hpp"

#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "report/json_writer.hpp"

namespace ngxtls::report {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) {
  // Configs are bytes; JSON needs UTF-8. Replace rather than throw (A17).
  return j.dump(1, ' ', false, ojson::error_handler_t::replace) + "\n";
}

/// crossplane's representation of `if`: the parentheses around the condition are not
/// args (crossplane's _prepare_if_args; `crossplane build` writes them back). nginx's own
/// tokens keep them, as our tree JSON does.
void strip_if_parentheses(std::vector<std::string>& args) {
  if (args.empty() || args.front().empty() || args.front().front() != '(' || args.back().empty() ||
      args.back().back() != ')') {
    return;
  }
  auto trim_left = [](std::string& s) { s.erase(0, s.find_first_not_of(" \t\r\n")); };
  auto trim_right = [](std::string& s) { s.erase(s.find_last_not_of(" \t\r\n") + 1); };
  args.front().erase(0, 1);
  trim_left(args.front());
  args.back().pop_back();
  trim_right(args.back());
  if (!args.empty() && args.back().empty()) args.pop_back();
  if (!args.empty() && args.front().empty()) args.erase(args.begin());
}

/// Text written by a json_writer, handed to `os` in pieces: a 20 MB config's tree is never
/// one string (nor one JSON document) in memory.
class chunked_text {
 public:
  explicit chunked_text(std::ostream& os) : os_(os) { text_.reserve(flush_bytes + (64u << 10)); }
  ~chunked_text() { flush(); }
  chunked_text(const chunked_text&) = delete;
  chunked_text& operator=(const chunked_text&) = delete;
  std::string& text() { return text_; }
  /// Hands what was written so far to the stream once there is enough of it.
  void maybe_flush() {
    if (text_.size() >= flush_bytes) flush();
  }
  void flush() {
    os_ << text_;
    text_.clear();
  }

 private:
  static constexpr std::size_t flush_bytes = std::size_t{1} << 20;
  std::ostream& os_;
  std::string text_;
};

/// crossplane directives of `ds` as an array (json_writer lays it out as nlohmann::json's
/// dump(1) would).
void write_crossplane_directives(json_writer& w, chunked_text& out, const config::config& cfg,
                                 config::list<config::directive> ds, bool with_includes) {
  w.begin_array();
  std::vector<std::string> values;
  for (const config::directive& d : ds) {
    w.begin_object();
    w.field("directive", d.name.view());
    w.field("line", d.line);
    w.key("args");
    w.begin_array();
    if (d.name == "if") {
      values.clear();
      for (const auto& a : d.args) values.emplace_back(a.value());
      strip_if_parentheses(values);
      for (const auto& v : values) w.value(v);
    } else {
      for (const auto& a : d.args) w.value(a.value());
    }
    if (const auto body = d.lua_body()) w.value(*body);
    w.end_array();
    if (with_includes && d.name == "include" && !d.has_block) {
      const auto& inc = cfg.files[d.file].includes;
      const auto it = inc.find(&d);
      w.key("includes");
      w.begin_array();
      if (it != inc.end())
        for (const std::uint32_t f : it->second) w.value(f);
      w.end_array();
    }
    if (d.has_block) {
      w.key("block");
      write_crossplane_directives(w, out, cfg, d.block, with_includes);
    }
    w.end_object();
    out.maybe_flush();
  }
  w.end_array();
}

const char* quote_name(config::quote_style q) {
  switch (q) {
    case config::quote_style::single_quote:
      return "single";
    case config::quote_style::double_quote:
      return "double";
    default:
      return "none";
  }
}

/// Our tree's directives of `ds` as an array (see write_crossplane_directives).
void write_tree_directives(json_writer& w, chunked_text& out, const config::config& cfg,
                           config::list<config::directive> ds) {
  w.begin_array();
  for (const config::directive& d : ds) {
    w.begin_object();
    w.field("name", d.name.view());
    w.field("file", d.file);
    w.field("line", d.line);
    w.field("column", d.file < cfg.files.size() ? d.column : 0);
    w.field("chain", d.chain);
    w.key("args");
    w.begin_array();
    const std::vector<config::line_column> positions = cfg.argument_positions(d);
    for (std::size_t k = 0; k < d.args.size(); ++k) {
      const auto& a = d.args[k];
      w.begin_object();
      w.field("value", a.value());
      w.field("raw", a.raw());
      w.field("quote", quote_name(a.quote()));
      w.field("line", positions[k].line);
      w.field("column", positions[k].column);
      w.end_object();
    }
    w.end_array();
    if (d.file < cfg.files.size()) {
      const auto& inc = cfg.files[d.file].includes;
      if (const auto it = inc.find(&d); it != inc.end() && !it->second.empty()) {
        w.key("includes");
        w.begin_array();
        for (const std::uint32_t f : it->second) w.value(f);
        w.end_array();
      }
    }
    // A lua block has no block, so `block` is always the last member when present.
    if (const auto body = d.lua_body()) w.field("lua_body", *body);
    if (d.has_block) {
      w.key("block");
      write_tree_directives(w, out, cfg, d.block);
    }
    w.end_object();
    out.maybe_flush();
  }
  w.end_array();
}

}  // namespace

void write_crossplane(const config::config& cfg, bool single_file, std::ostream& os) {
  chunked_text out(os);
  json_writer w(out.text(), 0, 1);
  const std::size_t n = single_file ? std::min<std::size_t>(1, cfg.files.size()) : cfg.files.size();
  w.begin_object();
  w.field("status", "ok");
  w.key("errors");
  w.begin_array();
  w.end_array();
  w.key("config");
  w.begin_array();
  for (std::size_t i = 0; i < n; ++i) {
    w.begin_object();
    w.field("file", cfg.files[i].path);
    w.field("status", "ok");
    w.key("errors");
    w.begin_array();
    w.end_array();
    w.key("parsed");
    write_crossplane_directives(w, out, cfg, cfg.files[i].parsed, !single_file);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out.text() += '\n';
}

std::string render_crossplane(const config::config& cfg, bool single_file) {
  std::ostringstream out;
  write_crossplane(cfg, single_file, out);
  return std::move(out).str();
}

std::string render_crossplane_error(const input_error& e) {
  const std::string text = e.message() + " in " + e.where().file +
                           (e.where().line ? ":" + std::to_string(e.where().line) : std::string());
  ojson line = e.where().line ? ojson(e.where().line) : ojson(nullptr);
  ojson root;
  root["status"] = "failed";
  root["errors"] = ojson::array({ojson{{"file", e.where().file}, {"error", text}, {"line", line}}});
  ojson f;
  f["file"] = e.where().file;
  f["status"] = "failed";
  f["errors"] = ojson::array({ojson{{"error", text}, {"line", line}}});
  f["parsed"] = ojson::array();
  root["config"] = ojson::array({std::move(f)});
  return dump(root);
}

void write_tree_json(const config::config& cfg, bool single_file, std::ostream& os) {
  chunked_text out(os);
  json_writer w(out.text(), 0, 1);
  w.begin_object();
  w.field("conf_prefix", cfg.conf_prefix);
  w.key("files");
  w.begin_array();
  for (const auto& f : cfg.files) {
    w.begin_object();
    w.field("path", f.path);
    w.field("bytes", f.content.size());
    w.end_object();
  }
  w.end_array();
  w.key("chains");
  w.begin_array();
  for (std::uint32_t c = 0; c < cfg.chains.size(); ++c) {
    w.begin_array();
    for (const auto& fr : cfg.chain_frames(c)) {
      w.begin_object();
      w.field("file", fr.file);
      w.field("line", fr.line);
      w.field("column", fr.column);
      w.end_object();
    }
    w.end_array();
    out.maybe_flush();
  }
  w.end_array();
  w.key("directives");
  write_tree_directives(w, out, cfg,
                        single_file && !cfg.files.empty() ? cfg.files[0].parsed : cfg.root);
  w.end_object();
  out.text() += '\n';
}

std::string render_tree_json(const config::config& cfg, bool single_file) {
  std::ostringstream out;
  write_tree_json(cfg, single_file, out);
  return std::move(out).str();
}

}  // namespace ngxtls::report
