// ngxtls harden: a hardened, version-aware TLS snippet from a profile.

#include "harden/harden.hpp"

#include <unistd.h>

#include <memory>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "engine/engine.hpp"
#include "engine/pipeline.hpp"
#include "report/format.hpp"

namespace ngxtls::cli {

namespace {

struct harden_args {
  std::string profile = "intermediate";
  std::string nginx_version, openssl_version;
  std::string tickets;  // "" = fleet with --ticket-key-dir, else host
  std::string ticket_key_dir;
  std::string ocsp = "auto";
  std::string cert, key, trusted_cert;
  std::string resolver = "127.0.0.1";
  std::int64_t expected_sessions = 0;
  std::string format = "text";
  std::string output;
  std::string config_file;
  std::vector<std::string> upstreams, upstream_ssl_names;
  std::string upstream_ca;
  int upstream_keepalive = 16;
  bool upstream_keepalive_given = false;  ///< --upstream-keepalive on the command line
};

int run_harden(const harden_args& a) {
  // The same .ngxtls.toml and version choice as lint's (engine/pipeline.hpp).
  auto pc = engine::load_project(a.config_file, engine::all_rules(), say_on_stderr);
  auto v = engine::choose_versions(a.nginx_version, a.openssl_version, pc, nginx_inspector());

  harden::harden_options o;
  o.profile = a.profile;
  o.nginx = v.nginx;
  o.openssl = v.openssl;
  o.versions_source = "nginx from " + v.nginx_source + ", OpenSSL from " + v.openssl_source;
  if (a.tickets == "fleet")
    o.tickets = harden::tickets_mode::fleet;
  else if (a.tickets == "host")
    o.tickets = harden::tickets_mode::host;
  o.ticket_key_dir = a.ticket_key_dir;
  o.ocsp = a.ocsp == "on"    ? harden::ocsp_mode::on
           : a.ocsp == "off" ? harden::ocsp_mode::off
                             : harden::ocsp_mode::automatic;
  o.cert_file = a.cert;
  o.key_file = a.key;
  o.trusted_certificate = a.trusted_cert;
  o.resolver = a.resolver;
  if (a.expected_sessions > 0) o.expected_sessions = a.expected_sessions;
  if (a.upstreams.empty() &&
      (!a.upstream_ca.empty() || !a.upstream_ssl_names.empty() || a.upstream_keepalive_given))
    throw usage_error(
        "--upstream-ca, --upstream-ssl-name and --upstream-keepalive shape the blocks that "
        "--upstream NAME=ADDRESS writes: give --upstream too");
  o.upstreams = harden::parse_upstreams(a.upstreams, a.upstream_ssl_names);
  o.upstream_trusted_certificate = a.upstream_ca;
  o.upstream_keepalive = a.upstream_keepalive;

  auto s = harden::generate(o);
  report::output_context ctx;
  if (pc) ctx.project_config = pc->path;
  const auto& format = report::format_for(report::command::harden, a.format);
  write_output(a.output, [&](std::ostream& os) { format.harden(s, ctx, os); });
  return exit_ok;
}

}  // namespace

void register_harden(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<harden_args>();
  auto* sub = app.add_subcommand(
      "harden", "Print a hardened nginx TLS snippet (Mozilla profile, resumption done right)");
  sub->add_option("--profile", a->profile, "Mozilla Server Side TLS 6.0 profile")
      ->check(CLI::IsMember({"modern", "intermediate"}));
  add_version_options(sub, a->nginx_version, a->openssl_version,
                      "nginx version to target (default: nginx -V)",
                      "OpenSSL version nginx runs with");
  sub->add_option("--tickets", a->tickets,
                  "fleet: shared key files (default with --ticket-key-dir); host: this host only")
      ->check(CLI::IsMember({"fleet", "host"}));
  sub->add_option("--ticket-key-dir", a->ticket_key_dir,
                  "directory of current.key and previous.key (same on every host)");
  sub->add_option("--ocsp", a->ocsp, "auto: staple when --cert names an OCSP responder")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  sub->add_option("--cert", a->cert, "ssl_certificate file (read for its OCSP responder URL)");
  sub->add_option("--key", a->key, "ssl_certificate_key file (only written into the snippet)");
  sub->add_option("--trusted-cert", a->trusted_cert,
                  "ssl_trusted_certificate for stapling (issuer and root)");
  sub->add_option("--resolver", a->resolver, "resolver address for the OCSP responder");
  sub->add_option("--expected-sessions", a->expected_sessions,
                  "sessions the shared cache must hold (about 4,000 per MB)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  sub->add_option("--upstream", a->upstreams,
                  "NAME=ADDRESS: an upstream block NAME and a location proxying to it over TLS "
                  "(ADDRESS host:port, [v6]:port or unix:/PATH; repeat NAME for more servers)")
      ->allow_extra_args(false);
  sub->add_option("--upstream-ca", a->upstream_ca,
                  "proxy_ssl_trusted_certificate: the CA that issued the backends' certificates");
  sub->add_option("--upstream-ssl-name", a->upstream_ssl_names,
                  "NAME=HOST: proxy_ssl_name (and SNI) for upstream NAME (default: its first "
                  "server's host name, else NAME)")
      ->allow_extra_args(false);
  sub->add_option("--upstream-keepalive", a->upstream_keepalive,
                  "idle connections each worker keeps per upstream block")
      ->check(CLI::Range(1, 100000))
      ->each([a](const std::string&) { a->upstream_keepalive_given = true; });
  sub->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember(report::format_names(report::command::harden)));
  sub->add_option("-o,--output", a->output, "write the snippet to FILE");
  sub->add_option("--config", a->config_file, ".ngxtls.toml to use (default: found in . or above)");
  sub->callback([a, &run] { run = [a] { return run_harden(*a); }; });
}

}  // namespace ngxtls::cli
