#include "report/lint_output.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "config/site_files.hpp"
#include "model/model.hpp"
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

}  // namespace

std::string indent_lines(const std::string& text, const std::string& pad) {
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
  const std::string files = std::to_string(r.files_read) + (r.files_read == 1 ? " file" : " files");
  if (r.tls_upstreams > 0)
    return "no TLS server in " + files + ": only nginx's " + std::to_string(r.tls_upstreams) +
           " TLS " + (r.tls_upstreams == 1 ? "connection" : "connections") + " to its backends " +
           (r.tls_upstreams == 1 ? "was" : "were") + " checked";
  return "no TLS server in " + files + ": nothing TLS was checked";
}

void note_reading(lint_report& r, const std::string& path, const config::config& cfg,
                  const model::model& m) {
  r.files_read += cfg.files.size();
  for (const auto& s : m.servers) r.tls_servers += model::offers_tls(s);
  r.tls_upstreams += m.tls_upstreams.size();
  if (cfg.implied == config::implied_context::none && cfg.skipped_files.empty()) return;
  const std::string how = cfg.implied == config::implied_context::none && !cfg.files.empty()
                              ? "from " + cfg.files.front().path + " and the files it includes"
                              : config::describe(cfg.implied);
  r.readings.push_back(
      {path, config::context_name(cfg.implied), how, cfg.implied_reason, cfg.skipped_files});
}

std::string readings_text(const lint_report& r) {
  std::string out;
  for (const auto& in : r.readings) {
    out += terminal_safe(in.input) + ": read " + terminal_safe(in.how);
    if (!in.why.empty()) out += " (" + terminal_safe(in.why) + ")";
    out += '\n';
    constexpr std::size_t shown = 10;
    for (std::size_t i = 0; i < in.skipped.size() && i < shown; ++i)
      out += "    skipped " + terminal_safe(in.skipped[i].first) + ": " +
             terminal_safe(in.skipped[i].second) + '\n';
    if (in.skipped.size() > shown)
      out += "    and " + std::to_string(in.skipped.size() - shown) +
             " more skipped (listed in --format json)\n";
  }
  return out;
}

void write_text(const lint_report& r, bool color, std::ostream& os) {
  if (r.notice) os << notice_line(r) << '\n';
  os << readings_text(r);
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
    if (!f.fix.empty()) out += "    fix:\n" + indent_lines(terminal_safe(f.fix, true), "      ");
    os << out;
  }
  os << "assumed nginx " << r.assumed.nginx.str() << " (" << terminal_safe(r.assumed.nginx_source)
     << "), OpenSSL " << r.assumed.openssl.str() << " (" << terminal_safe(r.assumed.openssl_source)
     << ")\n";
  auto counted = [&](engine::severity s, const char* one, const char* many) {
    const auto n = count(r, s);
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  os << counted(engine::severity::error, "error", "errors") << ", "
     << counted(engine::severity::warning, "warning", "warnings") << ", "
     << counted(engine::severity::note, "note", "notes");
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

namespace {

// Writes `fields` (sorted by key) whose key sorts before `before` as `key: value` items of the
// object `w` is in, advancing `next`; `before` empty writes the rest.
void write_fields_before(json_writer& w, const json_additions::fields& fields, std::size_t& next,
                         std::string_view before) {
  for (; next < fields.size() && (before.empty() || fields[next].first < before); ++next) {
    w.key(fields[next].first);
    w.raw(dump_nested(fields[next].second, w.depth()));
  }
}

json_additions::fields sorted(json_additions::fields f) {
  std::sort(f.begin(), f.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return f;
}

// Appends finding i of `r` to `text` as an item of the report's `findings` array, with
// `add`'s fields; with `spill`, text held so far may be written there (write_in_order).
void write_finding_json(const lint_report& r, const json_additions& add, std::size_t i,
                        std::string& text, std::ostream* spill) {
  const auto& f = r.findings[i];
  text += "    ";
  json_writer w(text, 2, 2, spill);
  const json_additions::fields extra =
      add.finding ? sorted(add.finding(i)) : json_additions::fields{};
  std::size_t next = 0;
  auto key = [&](std::string_view k) {
    if (!extra.empty()) write_fields_before(w, extra, next, k);
    w.key(k);
  };
  auto location = [&](const source_location& l) {
    w.begin_object();
    w.field("column", l.column);
    w.field("file", l.file);
    w.field("line", l.line);
    w.end_object();
  };
  w.begin_object();
  if (!f.also_at.empty()) {
    key("count");
    w.value(f.also_at.size() + 1);
  }
  key("evidence");
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
  if (i < r.fingerprints.size()) {
    key("fingerprints");
    w.begin_array();
    for (const auto& fp : r.fingerprints[i]) w.value(fp);
    w.end_array();
  }
  key("fix");
  w.value(f.fix);
  key("include_chain");
  w.begin_array();
  for (const auto& c : f.include_chain) {
    w.begin_object();
    w.field("file", c.file);
    w.field("line", c.line);
    w.end_object();
  }
  w.end_array();
  key("location");
  location(f.location);
  if (!f.also_at.empty()) {
    key("locations");
    w.begin_array();
    location(f.location);
    for (const auto& l : f.also_at) location(l);
    w.end_array();
  }
  key("message");
  w.value(f.message);
  key("rule");
  w.value(f.rule);
  key("server");
  w.value(f.server);
  key("severity");
  w.value(to_string(f.level));
  write_fields_before(w, extra, next, {});
  w.end_object();
  text += i + 1 < r.findings.size() ? ",\n" : "\n  ]";
}

}  // namespace

void write_json(const lint_report& r, std::ostream& os) {
  write_json(r, json_additions{}, os);
}

void write_json(const lint_report& r, const json_additions& add, std::ostream& os) {
  // The same text as one document dumped with indent 2 and keys sorted (nlohmann::json's
  // order), one finding at a time.
  const json_additions::fields top = sorted(add.top);
  std::size_t next_top = 0;
  bool first_top = true;
  // Starts top-level field `k`, after the additions that sort before it.
  auto top_key = [&](std::string_view k) {
    auto put = [&](std::string_view key) {
      std::string quoted;
      append_json_string(quoted, key);
      os << (first_top ? "{\n  " : ",\n  ") << quoted << ": ";
      first_top = false;
    };
    for (; next_top < top.size() && (k.empty() || top[next_top].first < k); ++next_top) {
      put(top[next_top].first);
      os << dump_nested(top[next_top].second, 1);
    }
    if (!k.empty()) put(k);
  };
  nlohmann::json assumed = {{"nginx", r.assumed.nginx.str()},
                            {"nginx_source", r.assumed.nginx_source},
                            {"openssl", r.assumed.openssl.str()},
                            {"openssl_source", r.assumed.openssl_source}};
  if (r.notice) assumed["notice"] = notice_line(r);
  top_key("assumed");
  os << dump_nested(assumed, 1);
  if (r.baseline_report) {
    top_key("baseline_report");
    os << dump_nested(
        nlohmann::json{{"path", *r.baseline_report}, {"suppressed", r.baseline_suppressed}}, 1);
  }
  top_key("findings");
  if (r.findings.empty())
    os << "[]";
  else
    os << "[\n";
  // A place is a location and a fingerprint (about 150 bytes), a fact about as much.
  auto weight = [&](std::size_t i) {
    const auto& f = r.findings[i];
    return 12 + 2 * (f.also_at.size() + f.facts.size() + f.include_chain.size()) +
           (f.message.size() + f.fix.size()) / 64;
  };
  write_in_order(r.findings.size(), os, weight,
                 [&](std::size_t i, std::string& text, std::ostream* spill) {
                   write_finding_json(r, add, i, text, spill);
                 });
  nlohmann::json inputs = r.inputs;
  nlohmann::json summary = {{"error", count(r, engine::severity::error)},
                            {"warning", count(r, engine::severity::warning)},
                            {"note", count(r, engine::severity::note)},
                            {"tls_servers", r.tls_servers},
                            {"files_read", r.files_read}};
  if (const std::string none = no_tls_text(r); !none.empty()) summary["no_tls_server"] = none;
  if (const std::size_t n = dropped_total(r); n > 0) {
    nlohmann::json dropped = {{"per_rule", r.dropped_findings}, {"total", n}};
    top_key("findings_dropped");
    os << dump_nested(dropped, 1);
  }
  nlohmann::json project =
      r.project_config ? nlohmann::json(*r.project_config) : nlohmann::json(nullptr);
  top_key("input_contexts");
  os << dump_nested(readings_json(r), 1);
  top_key("inputs");
  os << dump_nested(inputs, 1);
  top_key("project_config");
  os << dump_nested(project, 1);
  top_key("summary");
  os << dump_nested(summary, 1);
  top_key({});
  os << "\n}\n";
}

std::string render_json(const lint_report& r) {
  std::ostringstream out;
  write_json(r, out);
  return std::move(out).str();
}

}  // namespace ngxtls::report
