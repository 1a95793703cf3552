#pragma once
// Helpers shared by the probe integration tests (no doctest macros: plain functions).

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/prober.hpp"
#include "report/probe_output.hpp"
#include "support/nginx_instance.hpp"
#include "support/process.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

namespace ngxtls::test {

/// A `server` block listening with TLS on 127.0.0.1:`port` with the PKI's chain and key,
/// `ssl_protocols TLSv1.2 TLSv1.3` (nginx 1.22 serves no TLS 1.3 by default,
/// docs/nginx-facts.md#builtin-defaults) and `extra` directives. `listen_flags` e.g. "reuseport" or
/// "default_server".
inline std::string tls_server(int port, const tls::pki_paths& pki, const std::string& extra,
                              const std::string& listen_flags = "") {
  return "server {\n  listen 127.0.0.1:" + std::to_string(port) + " ssl " + listen_flags +
         ";\n  server_name localhost;\n  ssl_protocols TLSv1.2 TLSv1.3;\n  ssl_certificate " +
         pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key + ";\n  " + extra +
         "\n  location / { return 200 \"ok\\n\"; }\n}\n";
}

/// A `server` block with one listen socket pair on `port`, TCP TLS and QUIC (nginx built with
/// --with-http_v3_module), as tls_server otherwise.
inline std::string quic_server(int port, const tls::pki_paths& pki, const std::string& extra) {
  return "server {\n  listen 127.0.0.1:" + std::to_string(port) +
         " ssl;\n  listen 127.0.0.1:" + std::to_string(port) +
         " quic;\n  server_name localhost;\n  ssl_protocols TLSv1.2 TLSv1.3;\n" +
         "  ssl_certificate " + pki.chain + ";\n  ssl_certificate_key " + pki.leaf_key + ";\n  " +
         extra + "\n  location / { return 200 \"ok\\n\"; }\n}\n";
}

/// True when nginx `binary` was built with --with-http_v3_module.
inline bool has_http_v3(const std::string& binary) {
  auto r = run({binary, "-V"}, "", 10);
  return (r.out + r.err).find("--with-http_v3_module") != std::string::npos;
}

/// Probes 127.0.0.1:`port` with SNI localhost through the library.
inline probe::target_result probe_port(int port, probe::probe_options o) {
  auto t = probe::parse_target("127.0.0.1:" + std::to_string(port), std::string("localhost"));
  auto r = probe::run_probe({t}, o);
  return r.at(0);
}

/// The run for `protocol` ("TLSv1.3"/"TLSv1.2") and `mechanism`; throws when absent.
inline const probe::run_result& run_of(const probe::target_result& t, const std::string& protocol,
                                       const std::string& mechanism) {
  for (const auto& r : t.protocols)
    if (probe::to_string(r.protocol) == protocol && probe::to_string(r.mechanism) == mechanism)
      return r;
  throw std::runtime_error("no run " + protocol + "/" + mechanism + " in the result of " +
                           t.target);
}

/// Options for fast tests: no OCSP unless asked, `n` attempts.
inline probe::probe_options quick(int n, bool ocsp = false) {
  probe::probe_options o;
  o.attempts = n;
  o.ocsp = ocsp;
  o.timeout_ms = 5000;
  return o;
}

/// Runs the ngxtls binary with `args` and parses its stdout as JSON (throws on bad JSON).
inline nlohmann::json ngxtls_json(const std::vector<std::string>& args, int* exit_code = nullptr,
                                  std::string* err = nullptr) {
  std::vector<std::string> argv{ngxtls_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--format");
  argv.push_back("json");
  auto r = run(argv, "", 60);
  if (exit_code) *exit_code = r.exit_code;
  if (err) *err = r.err;
  return nlohmann::json::parse(r.out);
}

/// Every verdict line of `t`, joined with newlines (for substring checks).
inline std::string report_verdicts_for_test(const probe::target_result& t) {
  std::string out;
  for (const auto& v : report::probe_verdicts(t)) out += v + "\n";
  return out;
}

/// Milliseconds since `t0`.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ngxtls::test
