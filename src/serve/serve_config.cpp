#include "serve/serve_config.hpp"

#include <sstream>
#include <stdexcept>
#include <toml.hpp>

#include "base/error.hpp"
#include "engine/project_config.hpp"
#include "probe/target.hpp"
#include "tls/errors.hpp"
#include "tls/file_read.hpp"

namespace ngxtls::serve {

namespace {

[[noreturn]] void fail(const std::string& file, const toml::value& at, const std::string& msg) {
  engine::toml_fail(file, at, msg);
}

std::string as_string(const std::string& file, const toml::value& v, const std::string& key) {
  return engine::toml_string(file, v, key);
}

bool as_bool(const std::string& file, const toml::value& v, const std::string& key) {
  if (!v.is_boolean()) fail(file, v, "\"" + key + "\" must be true or false");
  return v.as_boolean();
}

long long as_int(const std::string& file, const toml::value& v, const std::string& key,
                 long long lo, long long hi) {
  if (!v.is_integer() || v.as_integer() < lo || v.as_integer() > hi)
    fail(file, v,
         "\"" + key + "\" must be a whole number from " + std::to_string(lo) + " to " +
             std::to_string(hi));
  return v.as_integer();
}

bool valid_module_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

probe_module parse_module(const std::string& file, const std::string& name, const toml::value& t) {
  probe_module m;
  m.name = name;
  if (!valid_module_name(name))
    fail(file, t, "module name \"" + name + "\" must be 1 to 64 letters, digits, '_' or '-'");
  if (!t.is_table()) fail(file, t, "[modules." + name + "] must be a table");
  auto& o = m.options;
  for (const auto& [k, v] : t.as_table()) {
    if (k == "sni") {
      m.sni = as_string(file, v, k);
    } else if (k == "connect") {
      m.connect = as_string(file, v, k);
    } else if (k == "attempts") {
      o.attempts = static_cast<int>(as_int(file, v, k, 0, 1000));
    } else if (k == "connections") {
      o.per_target = static_cast<int>(as_int(file, v, k, 1, 64));
    } else if (k == "protocols") {
      if (!v.is_array() || v.as_array().empty())
        fail(file, v, "\"protocols\" must be a non-empty array of \"TLSv1.3\" and \"TLSv1.2\"");
      o.tls12 = o.tls13 = false;
      for (const auto& p : v.as_array()) {
        const std::string s = as_string(file, p, k);
        if (s == "TLSv1.3")
          o.tls13 = true;
        else if (s == "TLSv1.2")
          o.tls12 = true;
        else
          fail(file, p, "unknown protocol \"" + s + "\" (\"TLSv1.3\" or \"TLSv1.2\")");
      }
    } else if (k == "fresh_tickets") {
      o.fresh_tickets = as_bool(file, v, k);
    } else if (k == "ocsp") {
      o.ocsp = as_bool(file, v, k);
    } else if (k == "http") {
      o.http = as_bool(file, v, k);
    } else if (k == "quic") {
      // As probe's --quic / --no-quic: the QUIC figures are exported when this asks for them.
      const std::string q = as_string(file, v, k);
      if (q == "always")
        o.quic = probe::quic_mode::always;
      else if (q == "alt_svc")
        o.quic = probe::quic_mode::alt_svc;
      else if (q == "never")
        o.quic = probe::quic_mode::never;
      else
        fail(file, v, "\"quic\" must be \"always\", \"alt_svc\" or \"never\"");
    } else if (k == "timeout_ms") {
      o.timeout_ms = static_cast<int>(as_int(file, v, k, 1, 600000));
    } else {
      fail(file, v, "unknown key \"" + k + "\" in [modules." + name + "]");
    }
  }
  o.parallel = 1;
  // A probe's whole time comes from the scrape (its timeout, minus the margin): the exporter
  // sets total_timeout_ms per request.
  try {
    (void)probe::parse_target("check.invalid", m.sni, m.connect);
  } catch (const std::exception& e) {
    fail(file, t, "[modules." + name + "]: " + e.what());
  }
  return m;
}

}  // namespace

serve_config default_serve_config() {
  serve_config c;
  probe_module m;
  m.name = "default";
  m.options.parallel = 1;
  c.modules.emplace(m.name, m);
  return c;
}

serve_config load_serve_config(const std::string& path) {
  std::string text;
  try {
    text = tls::read_file_bounded(path, max_serve_config_bytes);
  } catch (const tls::file_error& e) {
    std::string why = e.reason();
    if (why.rfind("larger than", 0) == 0) why += " (max_serve_config_bytes)";
    throw input_error({path, 0, 0}, why);
  }
  engine::check_toml_nesting(path, text);
  toml::value root;
  try {
    std::istringstream in(text);
    root = toml::parse(in, path);
  } catch (const toml::syntax_error& e) {
    auto loc = e.location();
    throw input_error(
        {path, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())},
        "TOML syntax error");
  } catch (const std::runtime_error& e) {
    throw input_error({path, 0, 0}, e.what());
  }
  serve_config c = default_serve_config();
  c.path = path;
  for (const auto& [key, v] : root.as_table()) {
    if (key == "allow") {
      if (!v.is_array()) fail(path, v, "\"allow\" must be an array of \"HOST:PORTS\" strings");
      for (const auto& e : v.as_array()) {
        try {
          c.allow.push_back(parse_allow_pattern(as_string(path, e, key)));
        } catch (const std::invalid_argument& bad) {
          fail(path, e, std::string("allow: ") + bad.what());
        }
      }
    } else if (key == "max_probes_in_flight") {
      c.max_probes_in_flight = static_cast<int>(as_int(path, v, key, 1, 1024));
    } else if (key == "min_interval_seconds") {
      c.min_interval_seconds = static_cast<int>(as_int(path, v, key, 0, 86400));
    } else if (key == "max_cached_results") {
      c.max_cached_results = static_cast<std::size_t>(as_int(path, v, key, 1, 1000000));
    } else if (key == "scrape_timeout_margin_ms") {
      c.scrape_timeout_margin_ms = static_cast<int>(as_int(path, v, key, 0, 60000));
    } else if (key == "default_scrape_timeout_ms") {
      c.default_scrape_timeout_ms = static_cast<int>(as_int(path, v, key, 100, 600000));
    } else if (key == "http_read_timeout_ms") {
      c.http_read_timeout_ms = static_cast<int>(as_int(path, v, key, 100, 600000));
    } else if (key == "http_header_timeout_ms") {
      c.http_header_timeout_ms = static_cast<int>(as_int(path, v, key, 100, 600000));
    } else if (key == "http_threads") {
      c.http_threads = static_cast<int>(as_int(path, v, key, 2, 1024));
    } else if (key == "modules") {
      if (!v.is_table()) fail(path, v, "[modules] must hold tables: [modules.NAME]");
      for (const auto& [name, t] : v.as_table()) c.modules[name] = parse_module(path, name, t);
    } else {
      fail(path, v, "unknown key \"" + key + "\"");
    }
  }
  return c;
}

}  // namespace ngxtls::serve
