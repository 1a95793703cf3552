#include "report/parse_output.hpp"

#include <nlohmann/json.hpp>

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

ojson crossplane_directives(const config::config& cfg, config::list<config::directive> ds,
                            bool with_includes) {
  ojson out = ojson::array();
  for (const auto& d : ds) {
    ojson j;
    j["directive"] = d.name;
    j["line"] = d.line;
    ojson args = ojson::array();
    std::vector<std::string> values;
    values.reserve(d.args.size() + 1);
    for (const auto& a : d.args) values.emplace_back(a.value());
    if (d.name == "if") strip_if_parentheses(values);
    for (auto& v : values) args.push_back(std::move(v));
    if (d.lua_body()) args.push_back(*d.lua_body());
    j["args"] = std::move(args);
    if (with_includes && d.name == "include" && !d.has_block) {
      const auto& inc = cfg.files[d.file].includes;
      const auto it = inc.find(&d);
      j["includes"] = it == inc.end() ? std::vector<std::uint32_t>() : it->second;
    }
    if (d.has_block) j["block"] = crossplane_directives(cfg, d.block, with_includes);
    out.push_back(std::move(j));
  }
  return out;
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

ojson tree_directives(const config::config& cfg, config::list<config::directive> ds) {
  ojson out = ojson::array();
  for (const auto& d : ds) {
    ojson j;
    j["name"] = d.name;
    j["file"] = d.file;
    j["line"] = d.line;
    j["column"] = cfg.where(d).column;
    j["chain"] = d.chain;
    ojson args = ojson::array();
    const std::vector<config::line_column> positions = cfg.argument_positions(d);
    for (std::size_t i = 0; i < d.args.size(); ++i) {
      const auto& a = d.args[i];
      const config::line_column at = positions[i];
      args.push_back(ojson{{"value", a.value()},
                           {"raw", a.raw()},
                           {"quote", quote_name(a.quote())},
                           {"line", at.line},
                           {"column", at.column}});
    }
    j["args"] = std::move(args);
    if (d.file < cfg.files.size()) {
      const auto& inc = cfg.files[d.file].includes;
      if (const auto it = inc.find(&d); it != inc.end() && !it->second.empty()) j["includes"] = it->second;
    }
    if (d.has_block) j["block"] = tree_directives(cfg, d.block);
    if (d.lua_body()) j["lua_body"] = *d.lua_body();
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

std::string render_crossplane(const config::config& cfg, bool single_file) {
  ojson root;
  root["status"] = "ok";
  root["errors"] = ojson::array();
  ojson files = ojson::array();
  const std::size_t n = single_file ? std::min<std::size_t>(1, cfg.files.size()) : cfg.files.size();
  for (std::size_t i = 0; i < n; ++i) {
    ojson f;
    f["file"] = cfg.files[i].path;
    f["status"] = "ok";
    f["errors"] = ojson::array();
    f["parsed"] = crossplane_directives(cfg, cfg.files[i].parsed, !single_file);
    files.push_back(std::move(f));
  }
  root["config"] = std::move(files);
  return dump(root);
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

std::string render_tree_json(const config::config& cfg, bool single_file) {
  ojson root;
  root["conf_prefix"] = cfg.conf_prefix;
  ojson files = ojson::array();
  for (const auto& f : cfg.files)
    files.push_back(ojson{{"path", f.path}, {"bytes", f.content.size()}});
  root["files"] = std::move(files);
  ojson chains = ojson::array();
  for (const auto& c : cfg.chains) {
    ojson chain = ojson::array();
    for (const auto& fr : c)
      chain.push_back(ojson{{"file", fr.file}, {"line", fr.line}, {"column", fr.column}});
    chains.push_back(std::move(chain));
  }
  root["chains"] = std::move(chains);
  root["directives"] =
      tree_directives(cfg, single_file && !cfg.files.empty() ? cfg.files[0].parsed : cfg.root);
  return dump(root);
}

}  // namespace ngxtls::report
