#pragma once
// Helpers for the `ngxtls serve` tests: the exporter run as a process on a free loopback port,
// and HTTP requests to it through cpp-httplib's client (no doctest macros here).

#include <httplib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/server_process.hpp"

namespace ngxtls::test {

/// `ngxtls serve --listen 127.0.0.1:PORT --config DIR/serve.toml` (plus `extra` arguments),
/// logging to DIR/serve.log; returns once the port accepts TCP.
struct serve_process {
  int port = free_port();
  std::filesystem::path config;
  std::unique_ptr<server_process> proc;

  serve_process(const temp_dir& dir, const std::string& config_text,
                const std::vector<std::string>& extra = {})
      : config(dir.write("serve.toml", config_text)) {
    std::vector<std::string> argv{ngxtls_binary(), "serve",
                                  "--listen",      "127.0.0.1:" + std::to_string(port),
                                  "--config",      config.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc = std::make_unique<server_process>(argv, (dir.path() / "serve.log").string(), port);
  }

  /// True when the exporter's log (stdout and stderr) contains `text`.
  bool log_has(const std::string& text) const {
    return proc->log().find(text) != std::string::npos;
  }

  /// A client for the exporter, with generous timeouts (a probe may take seconds).
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(std::chrono::seconds(30));
    return c;
  }

  /// GET /probe?target=...&module=... with an optional scrape timeout header.
  httplib::Result probe(const std::string& target, const std::string& module = "",
                        const std::string& scrape_timeout = "") const {
    httplib::Params params{{"target", target}};
    if (!module.empty()) params.emplace("module", module);
    httplib::Headers headers;
    if (!scrape_timeout.empty())
      headers.emplace("X-Prometheus-Scrape-Timeout-Seconds", scrape_timeout);
    auto c = client();
    return c.Get("/probe", params, headers);
  }
};

/// The value of the first sample line of `text` that starts with `series` followed by a space
/// (e.g. "ngxtls_probe_success" or "ngxtls_resumption_ratio{protocol=\"TLSv1.3\",...}"); NaN when
/// absent.
inline double sample(const std::string& text, const std::string& series) {
  std::size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return std::nan("");
}

}  // namespace ngxtls::test
