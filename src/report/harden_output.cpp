#include "report/harden_output.hpp"

#include <algorithm>
#include <sstream>

namespace ngxtls::report {

namespace {

// Wraps `text` into comment lines of at most ~`width` columns: the first starts with `prefix`,
// the others with "#" and as many spaces.
void comment(std::ostringstream& out, const std::string& prefix, const std::string& text,
             std::size_t width = 100) {
  std::istringstream words(text);
  std::string word, line;
  std::string lead = prefix;
  const std::string next = "#" + std::string(prefix.size() > 1 ? prefix.size() - 1 : 0, ' ');
  while (words >> word) {
    if (!line.empty() && lead.size() + line.size() + 1 + word.size() > width) {
      out << lead << line << '\n';
      line.clear();
      lead = next;
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out << lead << line << '\n';
}

void lines_of(std::ostringstream& out, const std::vector<harden::snippet_line>& lines,
              const std::string& context, const std::string& indent) {
  std::size_t col = 0;
  for (const auto& l : lines)
    if (l.context == context) col = std::max(col, l.directive.size());
  col = std::min<std::size_t>(col, 60);
  for (const auto& l : lines) {
    if (l.context != context) continue;
    if (l.directive.empty()) {
      out << indent << "# " << l.reason << '\n';
      continue;
    }
    out << indent << l.directive;
    if (!l.reason.empty()) {
      std::size_t pad = l.directive.size() < col ? col - l.directive.size() : 0;
      out << std::string(pad + 2, ' ') << "# " << l.reason;
    }
    out << '\n';
  }
}

std::string config_text(const harden::snippet& s, bool http_block) {
  std::ostringstream out;
  const std::string in = http_block ? "    " : "";
  if (http_block) out << "http {\n";
  lines_of(out, s.lines, "http", in);
  for (const auto& u : s.upstreams) {
    out << '\n' << in << "upstream " << u.name << " {\n";
    lines_of(out, u.block, "upstream", in + "    ");
    out << in << "}\n";
  }
  out << '\n' << in << "server {\n";
  lines_of(out, s.lines, "server", in + "    ");
  for (const auto& u : s.upstreams) {
    out << '\n' << in << "    location " << u.location << " {\n";
    lines_of(out, u.location_lines, "location", in + "        ");
    out << in << "    }\n";
  }
  out << in << "}\n";
  if (http_block) out << "}\n";
  return out.str();
}

}  // namespace

std::string harden_text(const harden::snippet& s, const harden_text_options& o) {
  std::ostringstream out;
  if (o.header) {
    out << "# ngxtls harden: profile " << s.profile_name << " (" << s.guideline << ", "
        << s.guideline_url << ")\n";
    out << "# target: nginx " << s.nginx.str() << ", OpenSSL " << s.openssl.str()
        << (s.versions_source.empty() ? "" : " (" + s.versions_source + ")")
        << "; tickets: " << harden::to_string(s.tickets) << "; ocsp: " << harden::to_string(s.ocsp)
        << "\n";
    comment(out, "# ",
            "The http-level lines belong in the http block, so that every server on a socket, in "
            "particular "
            "its default server, has them (docs/nginx-facts.md#default-server-rules); the server "
            "block is one TLS site.");
    for (const auto& w : s.warnings) comment(out, "# WARNING: ", w);
    for (const auto& n : s.notes) comment(out, "# note: ", n);
    if (!s.rotation.empty()) {
      out << "#\n# Ticket key rotation (every host, in this order; never breaks resumption):\n";
      for (const auto& step : s.rotation) {
        out << "#   " << step.title << '\n';
        for (const auto& c : step.commands) out << "#       " << c << '\n';
        comment(out, "#     why: ", step.why);
      }
    }
    if (!s.differences.empty()) {
      out << "#\n# Where this differs from " << s.guideline << ":\n";
      for (const auto& d : s.differences) {
        comment(out, "#   ",
                d.topic + ": Mozilla: " + d.mozilla + "; here: " + d.ngxtls + ". Why: " + d.why);
      }
    }
    out << '\n';
  }
  out << config_text(s, o.http_block);
  return out.str();
}

nlohmann::json harden_json(const harden::snippet& s,
                           const std::optional<std::string>& project_config) {
  nlohmann::json j;
  j["project_config"] = project_config ? nlohmann::json(*project_config) : nlohmann::json(nullptr);
  j["profile"] = s.profile_name;
  j["guideline"] = s.guideline;
  j["guideline_url"] = s.guideline_url;
  j["nginx_version"] = s.nginx.str();
  j["openssl_version"] = s.openssl.str();
  j["versions_source"] = s.versions_source;
  j["tickets"] = harden::to_string(s.tickets);
  j["ocsp"] = harden::to_string(s.ocsp);
  j["stapling"] = s.stapling;
  j["ticket_key_dir"] =
      s.ticket_key_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.ticket_key_dir);
  j["session_cache_mb"] = s.session_cache_mb;
  auto lines_json = [](const std::vector<harden::snippet_line>& lines) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& l : lines)
      a.push_back({{"context", l.context},
                   {"directive",
                    l.directive.empty() ? nlohmann::json(nullptr) : nlohmann::json(l.directive)},
                   {"reason", l.reason}});
    return a;
  };
  j["lines"] = lines_json(s.lines);
  j["upstreams"] = nlohmann::json::array();
  for (const auto& u : s.upstreams)
    j["upstreams"].push_back({{"name", u.name},
                              {"location", u.location},
                              {"upstream", lines_json(u.block)},
                              {"location_lines", lines_json(u.location_lines)}});
  j["warnings"] = s.warnings;
  j["notes"] = s.notes;
  j["rotation"] = nlohmann::json::array();
  for (const auto& r : s.rotation)
    j["rotation"].push_back({{"title", r.title}, {"commands", r.commands}, {"why", r.why}});
  j["differences"] = nlohmann::json::array();
  for (const auto& d : s.differences)
    j["differences"].push_back(
        {{"topic", d.topic}, {"mozilla", d.mozilla}, {"ngxtls", d.ngxtls}, {"why", d.why}});
  j["config"] = config_text(s, true);
  return j;
}

}  // namespace ngxtls::report
