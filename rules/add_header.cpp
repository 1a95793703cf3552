#include "rules/add_header.hpp"

#include <cctype>
#include <map>

#include "rules/common.hpp"

namespace ngxtls::rules {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The level below `parent` whose block holds `own` and, possibly, `add_header_inherit`.
header_level level_of(const header_level& parent, const config::directive* block,
                      config::list<config::directive> children, bool inherit_directive) {
  header_level here;
  here.block = block;
  here.inherit = parent.inherit;
  here.inherit_where = parent.inherit_where;
  for (const auto& d : children) {
    if (d.has_block) continue;
    if (d.name == "add_header") here.own.push_back(&d);
    if (d.name == "more_set_headers") here.more_set.push_back(&d);
    if (inherit_directive && d.name == "add_header_inherit" && d.args.size() == 1) {
      here.inherit = d.args[0].value();
      here.inherit_where = &d;
    }
  }
  if (here.own.empty()) {
    if (here.inherit != "off") here.headers = parent.headers;
  } else {
    if (here.inherit == "merge") here.headers = parent.headers;
    here.headers.insert(here.headers.end(), here.own.begin(), here.own.end());
  }
  return here;
}

// Per run: the http block holding each server directive, and each http block's own level
// (worked out once: a fleet of 15,000 servers shares one http block).
struct http_levels {
  std::map<const config::directive*, const config::directive*> http_of;
  std::map<const config::directive*, header_level> level;
};

const http_levels& levels_of(const engine::context& ctx) {
  const auto& m = ctx.model();
  return ctx.shared<http_levels>("add_header.http_levels", [&] {
    http_levels out;
    if (!m.cfg) return out;
    const bool inherit_directive = m.versions.nginx >= model::version{1, 29, 3};
    for (const auto& top : m.cfg->root) {
      if (top.name != "http" || !top.has_block) continue;
      out.level[&top] = level_of(header_level{}, &top, top.block, inherit_directive);
      for (const auto& d : top.block)
        if (d.name == "server" && d.has_block) out.http_of[&d] = &top;
    }
    return out;
  });
}

}  // namespace

bool adds_header(const config::directive& d, std::string_view name) {
  return d.name == "add_header" && d.args.size() >= 2 && iequals(d.args[0].value(), name) &&
         !d.args[1].value().empty();
}

bool has_header(const std::vector<const config::directive*>& headers, std::string_view name) {
  for (const auto* d : headers)
    if (adds_header(*d, name)) return true;
  return false;
}

std::optional<header_drop> header_dropped(const header_level& here, const header_level& parent,
                                          std::string_view name) {
  if (!has_header(parent.headers, name) || has_header(here.headers, name)) return std::nullopt;
  header_drop drop;
  for (const auto* d : parent.headers)
    if (!drop.inherited && adds_header(*d, name)) drop.inherited = d;
  drop.by_inherit_off = here.own.empty();  // `add_header_inherit off` with no header of its own
  drop.at = drop.by_inherit_off ? here.inherit_where : here.own.front();
  if (!drop.at) return std::nullopt;
  return drop;
}

std::string level_label(const header_level& here, const model::server& s) {
  if (here.block == s.where || !here.block) return "this server";
  std::string label(here.block->name.view());
  for (const auto& a : here.block->args) (label += ' ') += a.value();
  return label;
}

std::string add_header_text(const config::directive& d) {
  std::string value;
  for (const auto& a : d.args) {
    const std::string_view v = a.value();
    const bool quote = v.find_first_of(" ;\"'") != std::string_view::npos;
    (value += value.empty() ? "" : " ") += quote ? "\"" + std::string(v) + "\"" : std::string(v);
  }
  return value;
}

bool passes_to_backend(const model::server& s) {
  bool passes = false;
  if (!s.where) return false;
  walk(s.where->block, [&](const config::directive& d) {
    const std::string_view n = d.name.view();
    passes = passes || n == "proxy_pass" || n == "fastcgi_pass" || n == "uwsgi_pass" ||
             n == "scgi_pass" || n == "grpc_pass";
  });
  return passes;
}

void visit_header_levels(
    const engine::context& ctx, const model::server& s,
    const std::function<void(const header_level& here, const header_level& parent)>& visit) {
  if (!s.where) return;
  const auto& m = ctx.model();
  const auto& levels = levels_of(ctx);
  // add_header_inherit exists from nginx 1.29.3; an older nginx refuses the directive.
  const bool inherit_directive = m.versions.nginx >= model::version{1, 29, 3};
  header_level http;
  if (auto it = levels.http_of.find(s.where); it != levels.http_of.end())
    http = levels.level.at(it->second);
  const header_level server = level_of(http, s.where, s.where->block, inherit_directive);
  visit(server, http);
  std::function<void(const header_level&, config::list<config::directive>)> descend =
      [&](const header_level& parent, config::list<config::directive> children) {
        for (const auto& d : children) {
          if (!d.has_block || (d.name != "location" && d.name != "if")) continue;
          const header_level here = level_of(parent, &d, d.block, inherit_directive);
          visit(here, parent);
          descend(here, d.block);
        }
      };
  descend(server, s.where->block);
}

}  // namespace ngxtls::rules
