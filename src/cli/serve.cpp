// `ngxtls serve`: a Prometheus exporter with the multi-target pattern (as blackbox_exporter):
// Prometheus names the target and the module in each scrape; docs/prometheus.md.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <thread>
#include <tuple>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "report/terminal_text.hpp"
#include "serve/exporter.hpp"
#include "serve/http_server.hpp"
#include "serve/serve_config.hpp"
#include "serve/web_config.hpp"

namespace ngxtls::cli {
namespace {

struct serve_args {
  std::string listen = serve::default_listen;
  std::optional<std::string> config, web_config;
  std::vector<std::string> allow;
};

serve::serve_config read_config(const serve_args& a) {
  auto c = a.config ? serve::load_serve_config(*a.config) : serve::default_serve_config();
  for (const auto& p : a.allow) {
    try {
      c.allow.push_back(serve::parse_allow_pattern(p));
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--allow: ") + e.what());
    }
  }
  return c;
}

// What a reload of --web.config.file changed that the log must say: basic auth switched off,
// or TLS settings that only a restart applies.
void report_web_reload(const serve_args& a, const std::optional<serve::web_config>& web,
                       const std::optional<serve::web_config>& fresh_web, bool& auth_before) {
  const bool auth_now = fresh_web && !fresh_web->basic_auth_users.empty();
  // Dropping the last user turns authentication off: say so, it is rarely meant.
  if (auth_before && !auth_now)
    std::cerr << "ngxtls serve: warning: basic_auth_users is now empty: requests are no "
                 "longer authenticated"
              << std::endl;
  auth_before = auth_now;
  // The TLS settings are read once: the front's certificate is fixed at start.
  const auto tls_of = [](const std::optional<serve::web_config>& w) {
    return w ? std::make_tuple(w->cert_file, w->key_file, w->min_version)
             : std::make_tuple(std::optional<std::string>(), std::optional<std::string>(),
                               std::string());
  };
  if (tls_of(fresh_web) != tls_of(web))
    std::cerr << "ngxtls serve: warning: tls_server_config changed in "
              << report::terminal_safe(*a.web_config)
              << ", but TLS settings take effect only at a restart: still serving "
                 "with the ones read at start"
              << std::endl;
  else if (web && web->cert_file)
    std::cerr << "ngxtls serve: tls_server_config is read only at start: a renewed "
                 "certificate or key is served after a restart"
              << std::endl;
}

int run_serve_command(const serve_args& a) {
  const auto where = serve::parse_listen_address(a.listen);
  auto config = read_config(a);
  std::optional<serve::web_config> web;
  if (a.web_config) web = serve::load_web_config(*a.web_config);
  if (config.allow.empty())
    std::cerr << "ngxtls serve: warning: the allow list is empty: every /probe is refused (set "
                 "allow = [\"HOST:PORTS\", ...] in --config, or --allow)\n";

  // Every thread started from here on inherits the mask: the signals reach only sigwait().
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  serve::exporter core(std::move(config));
  serve::http_server server(core, web);
  const int port = server.bind(where);
  const bool ipv6 = where.host.find(':') != std::string::npos;
  const std::string shown =
      (ipv6 ? "[" + where.host + "]" : where.host) + ":" + std::to_string(port);
  std::cerr << "ngxtls serve: listening on " << (web && web->cert_file ? "https" : "http") << "://"
            << shown << std::endl;
  if (!serve::is_loopback_address(where.host) && !(web && !web->basic_auth_users.empty())) {
    const bool any = where.host == "0.0.0.0" || where.host == "::";
    std::cerr << "ngxtls serve: warning: " << shown << " is not a loopback address and "
              << (web && web->cert_file ? "basic auth is off (TLS encrypts but lets anyone in)"
                                        : "neither basic auth nor TLS is set")
              << ": "
              << (any ? "every host that can reach this machine"
                      : "every host that can reach " + where.host)
              << " on port " << port
              << " can now run probes of the allow list through this exporter and read its "
                 "metrics (set basic_auth_users in --web.config.file, or listen on 127.0.0.1)"
              << std::endl;
  }

  std::atomic<bool> stopping{false};
  bool auth_before = web && !web->basic_auth_users.empty();
  std::thread waiter([&] {
    for (;;) {
      int sig = 0;
      if (::sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP && !stopping) {
        // A config that fails to load leaves the running one in place.
        try {
          auto fresh = read_config(a);
          std::optional<serve::web_config> fresh_web;
          if (a.web_config) fresh_web = serve::load_web_config(*a.web_config);
          server.apply(fresh);
          core.reload(std::move(fresh));
          server.set_users(fresh_web ? fresh_web->basic_auth_users
                                     : std::map<std::string, std::string>{});
          std::cerr << "ngxtls serve: configuration reloaded (every --config key applied, the "
                       "HTTP timeouts to open connections too; basic_auth_users applied)"
                    << std::endl;
          report_web_reload(a, web, fresh_web, auth_before);
        } catch (const std::exception& e) {
          core.count_reload(false);
          std::cerr << "ngxtls serve: error: reload failed, keeping the running configuration: "
                    << report::terminal_safe(e.what()) << std::endl;
        }
        continue;
      }
      if (sig == SIGHUP) continue;
      stopping = true;
      server.stop();
      return;
    }
  });
  server.run();
  if (!stopping) {
    stopping = true;
    ::pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  std::cerr << "ngxtls serve: stopped" << std::endl;
  return exit_ok;
}

}  // namespace

void register_serve(CLI::App& app, std::function<int()>& run) {
  auto args = std::make_shared<serve_args>();
  auto* sub = app.add_subcommand(
      "serve",
      "run a Prometheus exporter: /probe?target=HOST[:PORT]&module=NAME probes one target");
  sub->add_option("--listen", args->listen,
                  std::string("ADDRESS:PORT to listen on (default ") + serve::default_listen + ")");
  sub->add_option("--config", args->config,
                  "TOML file: allow list, modules and bounds (docs/prometheus.md)");
  sub->add_option("--web.config.file", args->web_config,
                  "Prometheus web configuration file: TLS and basic auth for the endpoint");
  sub->add_option("--allow", args->allow,
                  "HOST:PORTS a target may match, added to the config's allow list "
                  "(\"*.example.com:443\")");
  sub->callback([&run, args] { run = [args] { return run_serve_command(*args); }; });
}

}  // namespace ngxtls::cli
