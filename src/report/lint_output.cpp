#include "report/lint_output.hpp"

#include <nlohmann/json.hpp>

namespace ngxtls::report {

namespace {

std::size_t count(const lint_report& r, engine::severity s) {
  std::size_t n = 0;
  for (const auto& f : r.findings) n += f.level == s;
  return n;
}

const char* color_of(engine::severity s) {
  switch (s) {
    case engine::severity::error: return "\x1b[1;31m";
    case engine::severity::warning: return "\x1b[1;33m";
    case engine::severity::note: return "\x1b[1;36m";
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

nlohmann::json location_json(const source_location& l) {
  return {{"file", l.file}, {"line", l.line}, {"column", l.column}};
}

}  // namespace

std::string render_text(const lint_report& r, bool color) {
  std::string out;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  for (const auto& f : r.findings) {
    out += std::string(bold) + to_string(f.location) + reset + ": " + (color ? color_of(f.level) : "") +
           to_string(f.level) + reset + " [" + f.rule + "] " + f.message + '\n';
    for (const auto& c : f.include_chain) out += "    included from " + to_string(c) + '\n';
    for (const auto& e : f.facts) {
      out += "    " + e.name + " = " + e.value + "  (" + e.origin;
      if (e.where) out += ", " + to_string(*e.where);
      out += ")\n";
    }
    if (!f.fix.empty()) out += "    fix:\n" + indent(f.fix, "      ");
  }
  out += "assumed nginx " + r.assumed.nginx.str() + " (" + r.assumed.nginx_source + "), OpenSSL " +
         r.assumed.openssl.str() + " (" + r.assumed.openssl_source + ")\n";
  out += std::to_string(count(r, engine::severity::error)) + " errors, " +
         std::to_string(count(r, engine::severity::warning)) + " warnings, " +
         std::to_string(count(r, engine::severity::note)) + " notes\n";
  return out;
}

std::string render_json(const lint_report& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) {
    nlohmann::json chain = nlohmann::json::array();
    for (const auto& c : f.include_chain) chain.push_back({{"file", c.file}, {"line", c.line}});
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : f.facts) {
      nlohmann::json j = {{"name", e.name}, {"value", e.value}, {"origin", e.origin}};
      j["location"] = e.where ? location_json(*e.where) : nlohmann::json(nullptr);
      ev.push_back(std::move(j));
    }
    findings.push_back({{"rule", f.rule},
                        {"severity", to_string(f.level)},
                        {"message", f.message},
                        {"location", location_json(f.location)},
                        {"include_chain", chain},
                        {"evidence", ev},
                        {"fix", f.fix},
                        {"server", f.server}});
  }
  nlohmann::json doc = {
      {"inputs", r.inputs},
      {"assumed",
       {{"nginx", r.assumed.nginx.str()},
        {"nginx_source", r.assumed.nginx_source},
        {"openssl", r.assumed.openssl.str()},
        {"openssl_source", r.assumed.openssl_source}}},
      {"findings", findings},
      {"summary",
       {{"error", count(r, engine::severity::error)},
        {"warning", count(r, engine::severity::warning)},
        {"note", count(r, engine::severity::note)}}}};
  // Config bytes are not always UTF-8 (nginx reads bytes): replace invalid sequences.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
}

}  // namespace ngxtls::report
