#include "report/parse_output.hpp"

#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "report/lint_output.hpp"

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

/// Streams a document whose last member is written by `hole` (a large array): `j` holds
/// `marker` in that member's place and is dumped as at `level` with indent 1, the marker is
/// replaced by what `hole` writes. rfind: config strings before it may hold anything.
template <typename Hole>
void write_with_hole(std::ostream& os, const ojson& j, int level, Hole&& hole) {
  static constexpr std::string_view quoted = "\"ngxtls:block\"";
  const std::string text = dump_nested(j, level, 1);
  const std::size_t at = text.rfind(quoted);
  os << std::string_view(text).substr(0, at);
  hole();
  os << std::string_view(text).substr(at + quoted.size());
}

/// An array at `level` (indent 1) whose items `item(i, level + 1)` writes, as nlohmann
/// prints it: `[]`, or one item per line.
template <typename Item>
void write_array(std::ostream& os, std::size_t n, int level, Item&& item) {
  if (n == 0) {
    os << "[]";
    return;
  }
  os << "[\n";
  for (std::size_t i = 0; i < n; ++i) {
    os << std::string(static_cast<std::size_t>(level + 1), ' ');
    item(i, level + 1);
    os << (i + 1 < n ? ",\n" : "\n");
  }
  os << std::string(static_cast<std::size_t>(level), ' ') << ']';
}

constexpr const char* block_marker = "ngxtls:block";

/// crossplane directives of `ds`, each written as at `level`: a directive at a time, so
/// a 20 MB config is never one JSON document in memory.
void write_crossplane_directives(std::ostream& os, const config::config& cfg,
                                 config::list<config::directive> ds, bool with_includes,
                                 int level) {
  write_array(os, ds.size(), level, [&](std::size_t i, int at) {
    const config::directive& d = ds[i];
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
    if (!d.has_block) {
      os << dump_nested(j, at, 1);
      return;
    }
    j["block"] = block_marker;
    write_with_hole(os, j, at,
                    [&] { write_crossplane_directives(os, cfg, d.block, with_includes, at + 1); });
  });
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

/// Our tree's directives of `ds`, each written as at `level` (see write_crossplane_directives).
void write_tree_directives(std::ostream& os, const config::config& cfg,
                           config::list<config::directive> ds, int level) {
  write_array(os, ds.size(), level, [&](std::size_t i, int at) {
    const config::directive& d = ds[i];
    ojson j;
    j["name"] = d.name;
    j["file"] = d.file;
    j["line"] = d.line;
    j["column"] = cfg.where(d).column;
    j["chain"] = d.chain;
    ojson args = ojson::array();
    const std::vector<config::line_column> positions = cfg.argument_positions(d);
    for (std::size_t k = 0; k < d.args.size(); ++k) {
      const auto& a = d.args[k];
      const config::line_column pos = positions[k];
      args.push_back(ojson{{"value", a.value()},
                           {"raw", a.raw()},
                           {"quote", quote_name(a.quote())},
                           {"line", pos.line},
                           {"column", pos.column}});
    }
    j["args"] = std::move(args);
    if (d.file < cfg.files.size()) {
      const auto& inc = cfg.files[d.file].includes;
      if (const auto it = inc.find(&d); it != inc.end() && !it->second.empty())
        j["includes"] = it->second;
    }
    // A lua block has no block, so `block` is always the last member when present.
    if (d.lua_body()) j["lua_body"] = *d.lua_body();
    if (!d.has_block) {
      os << dump_nested(j, at, 1);
      return;
    }
    j["block"] = block_marker;
    write_with_hole(os, j, at, [&] { write_tree_directives(os, cfg, d.block, at + 1); });
  });
}

}  // namespace

void write_crossplane(const config::config& cfg, bool single_file, std::ostream& os) {
  ojson root;
  root["status"] = "ok";
  root["errors"] = ojson::array();
  root["config"] = block_marker;
  const std::size_t n = single_file ? std::min<std::size_t>(1, cfg.files.size()) : cfg.files.size();
  write_with_hole(os, root, 0, [&] {
    write_array(os, n, 1, [&](std::size_t i, int at) {
      ojson f;
      f["file"] = cfg.files[i].path;
      f["status"] = "ok";
      f["errors"] = ojson::array();
      f["parsed"] = block_marker;
      write_with_hole(os, f, at, [&] {
        write_crossplane_directives(os, cfg, cfg.files[i].parsed, !single_file, at + 1);
      });
    });
  });
  os << "\n";
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
  ojson root;
  root["conf_prefix"] = cfg.conf_prefix;
  ojson files = ojson::array();
  for (const auto& f : cfg.files)
    files.push_back(ojson{{"path", f.path}, {"bytes", f.content.size()}});
  root["files"] = std::move(files);
  ojson chains = ojson::array();
  for (std::uint32_t c = 0; c < cfg.chains.size(); ++c) {
    ojson chain = ojson::array();
    for (const auto& fr : cfg.chain_frames(c))
      chain.push_back(ojson{{"file", fr.file}, {"line", fr.line}, {"column", fr.column}});
    chains.push_back(std::move(chain));
  }
  root["chains"] = std::move(chains);
  root["directives"] = block_marker;
  write_with_hole(os, root, 0, [&] {
    write_tree_directives(os, cfg,
                          single_file && !cfg.files.empty() ? cfg.files[0].parsed : cfg.root, 1);
  });
  os << "\n";
}

std::string render_tree_json(const config::config& cfg, bool single_file) {
  std::ostringstream out;
  write_tree_json(cfg, single_file, out);
  return std::move(out).str();
}

}  // namespace ngxtls::report
