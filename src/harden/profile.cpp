#include "harden/profile.hpp"

#include <algorithm>
#include <sstream>
#include <toml.hpp>

#include "base/error.hpp"
#include "harden/profiles_data.hpp"

namespace ngxtls::harden {

namespace {

[[noreturn]] void fail(const std::string& src, const toml::value& at, const std::string& msg) {
  auto loc = at.location();
  throw input_error(
      {src, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())}, msg);
}

const toml::value& need(const std::string& src, const toml::value& table, const std::string& key) {
  if (!table.is_table() || !table.contains(key)) fail(src, table, "missing key \"" + key + "\"");
  return table.at(key);
}

std::string str(const std::string& src, const toml::value& table, const std::string& key) {
  const auto& v = need(src, table, key);
  if (!v.is_string()) fail(src, v, "\"" + key + "\" must be a string");
  return v.as_string().str;
}

std::int64_t integer(const std::string& src, const toml::value& table, const std::string& key) {
  const auto& v = need(src, table, key);
  if (!v.is_integer()) fail(src, v, "\"" + key + "\" must be an integer");
  return v.as_integer();
}

bool boolean(const std::string& src, const toml::value& table, const std::string& key) {
  const auto& v = need(src, table, key);
  if (!v.is_boolean()) fail(src, v, "\"" + key + "\" must be true or false");
  return v.as_boolean();
}

std::vector<std::string> strings(const std::string& src, const toml::value& table,
                                 const std::string& key) {
  const auto& v = need(src, table, key);
  if (!v.is_array()) fail(src, v, "\"" + key + "\" must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : v.as_array()) {
    if (!e.is_string()) fail(src, e, "\"" + key + "\" must be an array of strings");
    out.push_back(e.as_string().str);
  }
  return out;
}

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> out;
  for (const auto& [name, text] : embedded::profiles) out.emplace_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

profile parse_profile(std::string_view toml_text, const std::string& source) {
  toml::value root;
  try {
    std::istringstream in{std::string(toml_text)};
    root = toml::parse(in, source);
  } catch (const toml::syntax_error& e) {
    auto loc = e.location();
    throw input_error(
        {source, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())},
        "TOML syntax error");
  }
  profile p;
  p.name = str(source, root, "name");
  p.guideline = str(source, root, "guideline");
  p.guideline_url = str(source, root, "guideline_url");
  p.summary = str(source, root, "summary");
  p.oldest_clients = strings(source, root, "oldest_clients");
  p.protocols = strings(source, root, "protocols");
  if (p.protocols.empty())
    fail(source, root.at("protocols"), "\"protocols\" must name at least one protocol");
  p.ciphers = strings(source, root, "ciphers");
  p.ciphersuites = strings(source, root, "ciphersuites");
  p.prefer_server_ciphers = boolean(source, root, "prefer_server_ciphers");
  const auto& curves = need(source, root, "curves");
  if (!curves.is_array())
    fail(source, curves, "\"curves\" must be an array of tables ([[curves]])");
  for (const auto& c : curves.as_array()) {
    curve cv;
    cv.name = str(source, c, "name");
    auto v = model::version::parse(str(source, c, "min_openssl"));
    if (!v)
      fail(source, c.at("min_openssl"), "\"min_openssl\" must be a version such as \"3.5.0\"");
    cv.min_openssl = *v;
    p.curves.push_back(std::move(cv));
  }
  p.hsts_max_age_s = integer(source, need(source, root, "hsts"), "max_age_s");
  const auto& session = need(source, root, "session");
  p.session_timeout = str(source, session, "timeout");
  p.session_timeout_s = integer(source, session, "timeout_s");
  p.expected_sessions = integer(source, session, "expected_sessions");
  if (p.session_timeout_s <= 0 || p.expected_sessions <= 0)
    fail(source, session, "session timeout_s and expected_sessions must be positive");
  p.ocsp_staple = boolean(source, need(source, root, "ocsp"), "staple");
  if (root.contains("differences")) {
    const auto& diffs = root.at("differences");
    if (!diffs.is_array())
      fail(source, diffs, "\"differences\" must be an array of tables ([[differences]])");
    for (const auto& d : diffs.as_array())
      p.differences.push_back({str(source, d, "topic"), str(source, d, "mozilla"),
                               str(source, d, "ngxtls"), str(source, d, "why")});
  }
  return p;
}

namespace {
[[noreturn]] void unknown_profile(const std::string& name) {
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw usage_error("unknown profile \"" + name + "\" (known: " + known + ")");
}
}  // namespace

std::string_view profile_text(const std::string& name) {
  for (const auto& [n, text] : embedded::profiles)
    if (n == name) return text;
  unknown_profile(name);
}

profile load_profile(const std::string& name) {
  return parse_profile(profile_text(name), "rules/profiles/" + name + ".toml");
}

}  // namespace ngxtls::harden
