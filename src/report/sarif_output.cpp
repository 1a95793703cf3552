#include "report/sarif_output.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "engine/engine.hpp"
#include "report/fingerprint.hpp"
#include "report/lint_output.hpp"
#include "rules/security.hpp"

namespace ngxtls::report {

namespace {

namespace fs = std::filesystem;

// RFC 3986 percent-encoding of a path, keeping '/' and the unreserved characters.
std::string uri_escape(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The path of `file` relative to `base` when it lies under it, else nullopt.
std::optional<std::string> relative_under(const std::string& file, const std::string& base) {
  if (base.empty() || file.empty()) return std::nullopt;
  std::error_code ec;
  fs::path abs = fs::absolute(file, ec).lexically_normal();
  if (ec) return std::nullopt;
  fs::path rel = abs.lexically_relative(fs::path(base).lexically_normal());
  if (rel.empty() || rel.native().rfind("..", 0) == 0) return std::nullopt;
  return rel.generic_string();
}

std::string absolute_path(const std::string& file) {
  std::error_code ec;
  fs::path abs = fs::absolute(file, ec).lexically_normal();
  return ec ? file : abs.generic_string();
}

template <typename json>
json artifact_location(const std::string& file, const std::string& working_dir) {
  if (auto rel = relative_under(file, working_dir))
    return {{"uri", uri_escape(*rel)}, {"uriBaseId", "SRCROOT"}};
  return {{"uri", "file://" + uri_escape(absolute_path(file))}};
}

// artifact_location() of every file a report's findings name, worked out once per file
// before the results are written: each place of 100,000s of findings asked the file system
// for the working directory again.
template <typename json>
using artifact_map = std::map<std::string, json, std::less<>>;

template <typename json>
artifact_map<json> artifacts_of(const lint_report& r, const std::string& working_dir) {
  artifact_map<json> out;
  auto add = [&](const source_location& l) {
    if (out.find(l.file) == out.end())
      out.emplace(l.file, artifact_location<json>(l.file, working_dir));
  };
  for (const auto& f : r.findings) {
    add(f.location);
    for (const auto& l : f.include_chain) add(l);
    for (const auto& l : f.also_at) add(l);
  }
  return out;
}

template <typename json>
json physical_location(const source_location& loc, const artifact_map<json>& artifacts) {
  json p = {{"artifactLocation", artifacts.at(loc.file)}};
  if (loc.line > 0) {
    json region = {{"startLine", loc.line}};
    if (loc.column > 0) region["startColumn"] = loc.column;
    p["region"] = region;
  }
  return p;
}

std::string sarif_level(engine::severity s) {
  switch (s) {
    case engine::severity::error:
      return "error";
    case engine::severity::warning:
      return "warning";
    default:
      return "note";
  }
}

// The first paragraph under "## What it flags" of a rule doc, for fullDescription.
std::string what_it_flags(const std::string& doc) {
  auto p = doc.find("## What it flags");
  if (p == std::string::npos) return {};
  p = doc.find('\n', p);
  if (p == std::string::npos) return {};
  auto end = doc.find("\n## ", p);
  std::string s = doc.substr(p + 1, end == std::string::npos ? std::string::npos : end - p - 1);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The rule's name as code scanning shows it beside the id: the id's words in UpperCamelCase
// ("tls13-resumption-disabled" -> "Tls13ResumptionDisabled"), as CodeQL and ESLint name theirs.
std::string rule_name(const std::string& id) {
  std::string out;
  bool upper = true;
  for (char c : id) {
    if (c == '-') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// The rule doc as plain text for help.text: Markdown headings and code fences dropped.
std::string plain_help(const std::string& doc) {
  std::string out;
  std::istringstream in(doc);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) continue;
    if (line.rfind("#", 0) == 0) line = line.substr(line.find_first_not_of("# "));
    out += line + "\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

/// One place of a finding: the finding and which of its places (0: `location`, i > 0:
/// `also_at[i - 1]`).
struct place_ref {
  std::size_t finding;
  std::size_t place;
};

// True when `f` has one fact per place, in order, each at its place.
bool facts_per_place(const engine::finding& f) {
  if (f.also_at.empty() || f.facts.size() != f.also_at.size() + 1) return false;
  for (std::size_t i = 0; i < f.facts.size(); ++i) {
    const source_location& place = i == 0 ? f.location : f.also_at[i - 1];
    if (!f.facts[i].where || *f.facts[i].where != place) return false;
  }
  return true;
}

/// One SARIF result for place `at` of finding `f`; `index` maps rule ids to their place in
/// tool.driver.rules; `fingerprint` is empty when none was worked out.
template <typename json>
json result_of(const engine::finding& f, std::size_t at,
               const std::map<std::string, std::size_t>& index, const artifact_map<json>& artifacts,
               const std::string& fingerprint) {
  json res = {{"ruleId", f.rule}};
  if (auto it = index.find(f.rule); it != index.end()) res["ruleIndex"] = it->second;
  res["level"] = sarif_level(f.level);
  res["message"] = {{"text", f.message}};
  const source_location& loc = at == 0 ? f.location : f.also_at[at - 1];
  res["locations"] = json::array({{{"physicalLocation", physical_location(loc, artifacts)}}});
  // The include chain is the first place's: the others were reached through their own.
  if (at == 0 && !f.include_chain.empty()) {
    json rel = json::array();
    int id = 1;
    for (const auto& inc : f.include_chain)
      rel.push_back({{"id", id++},
                     {"physicalLocation", physical_location(inc, artifacts)},
                     {"message", {{"text", "included from here"}}}});
    res["relatedLocations"] = rel;
  }
  if (!fingerprint.empty()) res["partialFingerprints"] = {{fingerprint_key, fingerprint}};
  json props = json::object();
  if (!f.server.empty()) props["server"] = f.server;
  if (!f.fix.empty()) props["fix"] = f.fix;
  if (!f.facts.empty()) {
    json ev = json::array();
    auto add = [&](const engine::evidence& e) {
      json je = {{"name", e.name}, {"value", e.value}, {"origin", e.origin}};
      if (e.where) je["location"] = to_string(*e.where);
      ev.push_back(je);
    };
    // A summary whose evidence is one fact per place (file-not-inspected: a file per
    // directive) gives each place's result its own fact: all of them in every result made
    // the log grow with the square of the places (130 GB for 25,000 missing files).
    if (facts_per_place(f))
      add(f.facts[at]);
    else
      for (const auto& e : f.facts) add(e);
    props["evidence"] = ev;
  }
  if (!f.also_at.empty()) props["places"] = f.also_at.size() + 1;
  if (!props.empty()) res["properties"] = props;
  return res;
}

// The log, laid out in `json`'s key order: nlohmann::ordered_json keeps SARIF's customary
// order (lint), nlohmann::json sorts the keys (check's log, whose shape was fixed so).
template <typename json>
void write_sarif_log(const lint_report& r, const std::string& working_dir,
                     const sarif_additions& add, std::ostream& os) {
  json rules = json::array();
  std::map<std::string, std::size_t> index;
  for (const auto& rule : engine::all_rules()) {
    index[rule.id] = rules.size();
    json jr = {{"id", rule.id},
               {"name", rule_name(rule.id)},
               {"shortDescription", {{"text", rule.summary}}}};
    const std::string full = what_it_flags(rule.doc);
    jr["fullDescription"] = {{"text", full.empty() ? rule.summary : full}};
    jr["help"] = {{"text", plain_help(rule.doc)}, {"markdown", rule.doc}};
    jr["helpUri"] = std::string(rule_help_uri_base) + rule.id + ".md";
    jr["defaultConfiguration"] = {{"level", sarif_level(rule.level)}};
    json tags = json::array({"nginx", "tls"});
    json props = json::object();
    if (const auto security = rules::security_severity(rule.id)) {
      tags.push_back("security");
      char score[16];
      std::snprintf(score, sizeof score, "%.1f", *security);
      props["security-severity"] = score;
    }
    if (rule.costs_resumption) tags.push_back("performance");
    if (rule.confirmed_by != engine::probe_question::none) tags.push_back("confirmed-by-probe");
    props["tags"] = tags;
    props["precision"] = "high";
    jr["properties"] = props;
    rules.push_back(jr);
  }
  // The log is dumped with a marker where the results go; they are written one at a time
  // in its place, indented as they would be in the document (runs[0].results[i]: level 4).
  constexpr std::string_view marker = "ngxtls-results-go-here";
  const artifact_map<json> artifacts = artifacts_of<json>(r, working_dir);
  // One result per place: code scanning keeps an alert per result, at its one location, so a
  // change touching one of a finding's places is annotated there.
  std::vector<place_ref> places;
  places.reserve(r.findings.size());
  for (std::size_t i = 0; i < r.findings.size(); ++i)
    for (std::size_t p = 0; p <= r.findings[i].also_at.size(); ++p) places.push_back({i, p});
  auto write_results = [&] {
    if (places.empty()) {
      os << "[]";
      return;
    }
    os << "[\n";
    // A result is one place: a few hundred bytes.
    auto weight = [](std::size_t) { return std::size_t{4}; };
    write_in_order(places.size(), os, weight, [&](std::size_t k, std::string& text, std::ostream*) {
      const auto [i, p] = places[k];
      const std::string& fp = i < r.fingerprints.size() ? r.fingerprints[i].at(p) : std::string();
      json res = result_of(r.findings[i], p, index, artifacts, fp);
      if (add.result) {
        nlohmann::json sorted_res = res;
        add.result(i, sorted_res);
        res = sorted_res;
      }
      ((text += "        ") += dump_nested(res, 4)) += k + 1 < places.size() ? ",\n" : "\n      ]";
    });
  };
  json run = {{"tool",
               {{"driver",
                 {{"name", "ngxtls"},
                  {"version", NGXTLS_VERSION},
                  {"semanticVersion", NGXTLS_VERSION},
                  {"informationUri", "https://github.com/ngxtls/ngxtls"},
                  {"rules", rules}}}}}};
  if (!working_dir.empty()) {
    std::string base =
        "file://" + uri_escape(fs::path(working_dir).lexically_normal().generic_string());
    if (base.back() != '/') base += '/';
    run["originalUriBaseIds"] = {{"SRCROOT", {{"uri", base}}}};
  }
  run["results"] = marker;
  run["properties"] = {{"assumed",
                        {{"nginx", r.assumed.nginx.str()},
                         {"nginx_source", r.assumed.nginx_source},
                         {"openssl", r.assumed.openssl.str()},
                         {"openssl_source", r.assumed.openssl_source}}}};
  // As JSON's assumed.notice: the version was only assumed, and what differs on the older one.
  if (r.notice) run["properties"]["assumed"]["notice"] = notice_line(r);
  run["properties"]["project_config"] = r.project_config ? json(*r.project_config) : json(nullptr);
  run["properties"]["input_contexts"] = readings_json(r);
  run["properties"]["summary"] = {{"tls_servers", r.tls_servers}, {"files_read", r.files_read}};
  if (const std::string none = no_tls_text(r); !none.empty())
    run["properties"]["summary"]["no_tls_server"] = none;
  if (const std::size_t n = dropped_total(r); n > 0)
    run["properties"]["findings_dropped"] = {{"per_rule", r.dropped_findings}, {"total", n}};
  if (r.baseline_report)
    run["properties"]["baseline_report"] = {{"path", *r.baseline_report},
                                            {"suppressed", r.baseline_suppressed}};
  for (const auto& [k, v] : add.run_properties.items()) run["properties"][k] = v;
  json log = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", json::array({run})}};
  // Config bytes are not always UTF-8 (nginx reads bytes): replace invalid sequences.
  const std::string text = log.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string quoted = "\"" + std::string(marker) + "\"";
  const std::size_t at = text.find(quoted);
  os << std::string_view(text).substr(0, at);
  write_results();
  os << std::string_view(text).substr(at + quoted.size()) << "\n";
}

}  // namespace

void write_sarif(const lint_report& r, const std::string& working_dir, std::ostream& os) {
  write_sarif_log<nlohmann::ordered_json>(r, working_dir, sarif_additions{}, os);
}

void write_sarif_sorted(const lint_report& r, const std::string& working_dir,
                        const sarif_additions& add, std::ostream& os) {
  write_sarif_log<nlohmann::json>(r, working_dir, add, os);
}

std::string render_sarif(const lint_report& r, const std::string& working_dir) {
  std::ostringstream out;
  write_sarif(r, working_dir, out);
  return std::move(out).str();
}

namespace {

// Workflow command escaping (@actions/core escapeData / escapeProperty).
std::string escape_data(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else
      out += c;
  }
  return out;
}

std::string escape_property(const std::string& s) {
  std::string out;
  for (char c : escape_data(s)) {
    if (c == ':')
      out += "%3A";
    else if (c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

}  // namespace

void write_github(const lint_report& r, const std::string& working_dir, std::ostream& os) {
  std::string out;
  // The assumed-version notice first, as a workflow notice of its own (no file: the run's).
  if (r.notice)
    os << "::notice title=" << escape_property("ngxtls nginx version")
       << "::" << escape_data(notice_line(r)) << "\n";
  for (const auto& in : r.readings)
    os << "::notice title=" << escape_property("ngxtls input") << "::"
       << escape_data(in.input + ": read " + in.how + (in.why.empty() ? "" : " (" + in.why + ")") +
                      (in.skipped.empty()
                           ? ""
                           : "; " + std::to_string(in.skipped.size()) + " files skipped"))
       << "\n";
  if (const std::string none = no_tls_text(r); !none.empty())
    os << "::notice title=" << escape_property("ngxtls summary") << "::" << escape_data(none)
       << "\n";
  // One annotation per place, as SARIF has one result per place.
  auto annotate = [&](const engine::finding& f, const source_location& at) {
    out.clear();
    const char* cmd = f.level == engine::severity::error     ? "error"
                      : f.level == engine::severity::warning ? "warning"
                                                             : "notice";
    const std::string file = relative_under(at.file, working_dir).value_or(at.file);
    out += "::";
    out += cmd;
    out += " file=" + escape_property(file);
    if (at.line > 0) out += ",line=" + std::to_string(at.line);
    if (at.column > 0) out += ",col=" + std::to_string(at.column);
    out += ",title=" + escape_property("ngxtls " + f.rule);
    std::string body = f.message;
    if (!f.fix.empty()) body += "\nFix:\n" + f.fix;
    out += "::" + escape_data(body) + "\n";
    os << out;
  };
  for (const auto& f : r.findings) {
    annotate(f, f.location);
    for (const auto& at : f.also_at) annotate(f, at);
  }
}

std::string render_github(const lint_report& r, const std::string& working_dir) {
  std::ostringstream out;
  write_github(r, working_dir, out);
  return std::move(out).str();
}

}  // namespace ngxtls::report
