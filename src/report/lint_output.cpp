#include "report/lint_output.hpp"

#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "report/json_writer.hpp"
#include "report/terminal_text.hpp"

namespace ngxtls::report {

namespace {

std::size_t count(const lint_report& r, engine::severity s) {
  std::size_t n = 0;
  for (const auto& f : r.findings) n += f.level == s;
  return n;
}

const char* color_of(engine::severity s) {
  switch (s) {
    case engine::severity::error:
      return "\x1b[1;31m";
    case engine::severity::warning:
      return "\x1b[1;33m";
    case engine::severity::note:
      return "\x1b[1;36m";
  }
  return "";
}

std::string indent(const std::string& text, const std::string& pad) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    out += pad + line + '\n';
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

nlohmann::json location_json(const source_location& l) {
  return {{"file", l.file}, {"line", l.line}, {"column", l.column}};
}

void merge_identical(std::vector<engine::finding>& findings) {
  // Evidence locations differ between servers (each its own `ssl_protocols` line): the cause
  // is the values, not where each was written. Findings are compared field by field under a
  // hash of those fields and compacted in place: a key string per finding and a second
  // vector of records were most of the report's memory on a config with many findings.
  auto hash_of = [](const engine::finding& f) {
    std::size_t h = std::hash<std::string>{}(f.rule);
    auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(std::hash<std::string>{}(f.message));
    mix(std::hash<std::string>{}(f.fix));
    mix(static_cast<std::size_t>(f.level));
    for (const auto& e : f.facts) {
      mix(std::hash<std::string>{}(e.name));
      mix(std::hash<std::string>{}(e.value));
      mix(std::hash<std::string>{}(e.origin));
    }
    return h;
  };
  auto same = [](const engine::finding& a, const engine::finding& b) {
    if (a.rule != b.rule || a.message != b.message || a.fix != b.fix || a.level != b.level ||
        a.facts.size() != b.facts.size())
      return false;
    for (std::size_t i = 0; i < a.facts.size(); ++i) {
      const auto& x = a.facts[i];
      const auto& y = b.facts[i];
      if (x.name != y.name || x.value != y.value || x.origin != y.origin) return false;
    }
    return true;
  };
  std::unordered_multimap<std::size_t, std::size_t> first;  // hash -> index of a kept one
  first.reserve(findings.size());
  std::size_t kept = 0;  // findings[0, kept) are the first of each cause
  for (std::size_t i = 0; i < findings.size(); ++i) {
    engine::finding& f = findings[i];
    const std::size_t h = hash_of(f);
    std::size_t into = kept;
    for (auto [it, end] = first.equal_range(h); it != end; ++it)
      if (same(findings[it->second], f)) {
        into = it->second;
        break;
      }
    if (into == kept) {
      first.emplace(h, kept);
      if (i != kept) findings[kept] = std::move(f);
      ++kept;
      continue;
    }
    auto& at = findings[into].also_at;
    at.push_back(std::move(f.location));
    at.insert(at.end(), std::make_move_iterator(f.also_at.begin()),
              std::make_move_iterator(f.also_at.end()));
  }
  findings.erase(findings.begin() + static_cast<std::ptrdiff_t>(kept), findings.end());
}

std::string notice_line(const lint_report& r) {
  if (!r.notice) return {};
  const auto& n = *r.notice;
  std::string out = "nginx version neither given nor detected: assumed " + r.assumed.nginx.str() +
                    " (the newest known); on nginx " + n.older.str() + ", ";
  if (n.differences.empty()) {
    out += "no finding would differ";
  } else {
    out += std::to_string(n.differences.size()) +
           (n.differences.size() == 1 ? " finding differs: " : " findings differ: ");
    const std::size_t shown = std::min<std::size_t>(n.differences.size(), 5);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& d = n.differences[i];
      if (i) out += "; ";
      out += d.rule + " at " + to_string(d.location) + " (" +
             (d.on_older ? to_string(*d.on_older) : std::string("none")) + " instead of " +
             (d.on_assumed ? to_string(*d.on_assumed) : std::string("none")) + ")";
    }
    if (shown < n.differences.size())
      out += "; and " + std::to_string(n.differences.size() - shown) + " more";
  }
  out += ". Pin it: --nginx-version " + n.older.str() + ", or nginx_version = \"" + n.older.str() +
         "\" in .ngxtls.toml";
  return out;
}

std::string no_tls_text(const lint_report& r) {
  if (r.tls_servers > 0 || r.files_read == 0) return {};
  return "no TLS server in " + std::to_string(r.files_read) +
         (r.files_read == 1 ? " file" : " files") + ": nothing TLS was checked";
}

void write_text(const lint_report& r, bool color, std::ostream& os) {
  if (r.notice) os << notice_line(r) << '\n';
  for (const auto& in : r.readings) {
    os << terminal_safe(in.input) << ": read " << terminal_safe(in.how);
    if (!in.why.empty()) os << " (" << terminal_safe(in.why) << ")";
    os << '\n';
    constexpr std::size_t shown = 10;
    for (std::size_t i = 0; i < in.skipped.size() && i < shown; ++i)
      os << "    skipped " << terminal_safe(in.skipped[i].first) << ": "
         << terminal_safe(in.skipped[i].second) << '\n';
    if (in.skipped.size() > shown)
      os << "    and " << in.skipped.size() - shown << " more skipped (listed in --format json)\n";
  }
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  std::string out;
  for (const auto& f : r.findings) {
    out.clear();
    // Names, values and paths come from the config: a terminal must not act on their bytes.
    out += std::string(bold) + terminal_safe(to_string(f.location)) + reset + ": " +
           (color ? color_of(f.level) : "") + to_string(f.level) + reset + " [" + f.rule + "] " +
           terminal_safe(f.message) + '\n';
    for (const auto& c : f.include_chain)
      out += "    included from " + terminal_safe(to_string(c)) + '\n';
    if (!f.also_at.empty()) {
      out += "    also at ";
      const std::size_t shown = std::min(f.also_at.size(), text_places_shown);
      for (std::size_t i = 0; i < shown; ++i)
        out += (i ? ", " : "") + terminal_safe(to_string(f.also_at[i]));
      if (shown < f.also_at.size())
        out += " and " + std::to_string(f.also_at.size() - shown) + " more";
      out += " (" + std::to_string(f.also_at.size() + 1) + " places" +
             (shown < f.also_at.size() ? "; every one in JSON and SARIF" : "") + ")\n";
    }
    for (const auto& e : f.facts) {
      out += "    " + terminal_safe(e.name) + " = " + terminal_safe(e.value) + "  (" +
             terminal_safe(e.origin);
      if (e.where) out += ", " + terminal_safe(to_string(*e.where));
      out += ")\n";
    }
    if (!f.fix.empty()) out += "    fix:\n" + indent(terminal_safe(f.fix, true), "      ");
    os << out;
  }
  os << "assumed nginx " << r.assumed.nginx.str() << " (" << terminal_safe(r.assumed.nginx_source)
     << "), OpenSSL " << r.assumed.openssl.str() << " (" << terminal_safe(r.assumed.openssl_source)
     << ")\n";
  os << count(r, engine::severity::error) << " errors, " << count(r, engine::severity::warning)
     << " warnings, " << count(r, engine::severity::note) << " notes";
  if (const std::string none = no_tls_text(r); !none.empty()) os << "; " << none;
  os << '\n';
  if (const std::size_t n = dropped_total(r); n > 0) {
    os << n << " more findings dropped, not shown (at most " << engine::max_findings_per_rule
       << " per rule and " << engine::max_findings << " in all are kept):";
    for (const auto& [rule, k] : r.dropped_findings) os << ' ' << rule << ' ' << k;
    os << '\n';
  }
}

std::size_t dropped_total(const lint_report& r) {
  std::size_t n = 0;
  for (const auto& [rule, k] : r.dropped_findings) n += k;
  return n;
}

std::string render_text(const lint_report& r, bool color) {
  std::ostringstream out;
  write_text(r, color, out);
  return std::move(out).str();
}

nlohmann::json readings_json(const lint_report& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& in : r.readings) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [path, reason] : in.skipped)
      skipped.push_back({{"path", path}, {"reason", reason}});
    out.push_back({{"input", in.input},
                   {"context", in.context},
                   {"how", in.how},
                   {"why", in.why},
                   {"skipped", std::move(skipped)}});
  }
  return out;
}

void write_json(const lint_report& r, std::ostream& os) {
  // The same text as one document dumped with indent 2 and keys sorted (nlohmann::json's
  // order), one finding at a time.
  nlohmann::json assumed = {{"nginx", r.assumed.nginx.str()},
                            {"nginx_source", r.assumed.nginx_source},
                            {"openssl", r.assumed.openssl.str()},
                            {"openssl_source", r.assumed.openssl_source}};
  if (r.notice) assumed["notice"] = notice_line(r);
  os << "{\n  \"assumed\": " << dump_nested(assumed, 1) << ",\n  \"findings\": ";
  if (r.findings.empty())
    os << "[]";
  else
    os << "[\n";
  write_in_order(r.findings.size(), os, [&](std::size_t i) {
    const auto& f = r.findings[i];
    std::string text = "    ";
    text.reserve(1024);
    json_writer w(text, 2);
    auto location = [&](const source_location& l) {
      w.begin_object();
      w.field("column", l.column);
      w.field("file", l.file);
      w.field("line", l.line);
      w.end_object();
    };
    w.begin_object();
    if (!f.also_at.empty()) w.field("count", f.also_at.size() + 1);
    w.key("evidence");
    w.begin_array();
    for (const auto& e : f.facts) {
      w.begin_object();
      w.key("location");
      e.where ? location(*e.where) : w.null_value();
      w.field("name", e.name);
      w.field("origin", e.origin);
      w.field("value", e.value);
      w.end_object();
    }
    w.end_array();
    w.field("fix", f.fix);
    w.key("include_chain");
    w.begin_array();
    for (const auto& c : f.include_chain) {
      w.begin_object();
      w.field("file", c.file);
      w.field("line", c.line);
      w.end_object();
    }
    w.end_array();
    w.key("location");
    location(f.location);
    if (!f.also_at.empty()) {
      w.key("locations");
      w.begin_array();
      location(f.location);
      for (const auto& l : f.also_at) location(l);
      w.end_array();
    }
    w.field("message", f.message);
    w.field("rule", f.rule);
    w.field("server", f.server);
    w.field("severity", to_string(f.level));
    w.end_object();
    text += i + 1 < r.findings.size() ? ",\n" : "\n  ]";
    return text;
  });
  nlohmann::json inputs = r.inputs;
  nlohmann::json summary = {{"error", count(r, engine::severity::error)},
                            {"warning", count(r, engine::severity::warning)},
                            {"note", count(r, engine::severity::note)},
                            {"tls_servers", r.tls_servers},
                            {"files_read", r.files_read}};
  if (const std::string none = no_tls_text(r); !none.empty()) summary["no_tls_server"] = none;
  // Keys in nlohmann::json's sorted order: "findings_dropped" sorts after "findings".
  if (const std::size_t n = dropped_total(r); n > 0) {
    nlohmann::json dropped = {{"per_rule", r.dropped_findings}, {"total", n}};
    os << ",\n  \"findings_dropped\": " << dump_nested(dropped, 1);
  }
  nlohmann::json project =
      r.project_config ? nlohmann::json(*r.project_config) : nlohmann::json(nullptr);
  os << ",\n  \"input_contexts\": " << dump_nested(readings_json(r), 1);
  os << ",\n  \"inputs\": " << dump_nested(inputs, 1)
     << ",\n  \"project_config\": " << dump_nested(project, 1)
     << ",\n  \"summary\": " << dump_nested(summary, 1) << "\n}\n";
}

std::string render_json(const lint_report& r) {
  std::ostringstream out;
  write_json(r, out);
  return std::move(out).str();
}

}  // namespace ngxtls::report
