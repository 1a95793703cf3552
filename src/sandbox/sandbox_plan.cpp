// The planning phases of sandbox::generate(): ports, servers (certificates and directives),
// workers and modules, listens (sandbox_plan.hpp).

#include "sandbox/sandbox_plan.hpp"

#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "config/paths.hpp"
#include "config/values.hpp"
#include "sandbox/directive_policy.hpp"
#include "tls/ciphers.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

// The key type the server's own TLS 1.2 cipher list can use: RSA when every suite it enables
// authenticates with RSA (an EC certificate would fail every TLS 1.2 handshake), EC otherwise,
// also when no protocol below TLS 1.3 is on (TLS 1.3 suites serve any key type).
standin_key preferred_standin_key(const model::server& s) {
  const auto* protocols = s.get("ssl_protocols");
  if (!model::protocols_enable(protocols, "TLSv1.2") &&
      !model::protocols_enable(protocols, "TLSv1.1") &&
      !model::protocols_enable(protocols, "TLSv1"))
    return standin_key::ec;
  const auto* ciphers = s.get("ssl_ciphers");
  if (!ciphers || ciphers->first().empty()) return standin_key::ec;
  bool rsa = false, ecdsa = false;
  try {
    for (const auto& c : tls::expand_cipher_string(std::string(ciphers->first()))) {
      rsa = rsa || c.auth == "RSA";
      ecdsa = ecdsa || c.auth == "ECDSA";
    }
  } catch (const std::exception&) {
    return standin_key::ec;  // nginx -t reports the list; the key type does not matter then
  }
  return rsa && !ecdsa ? standin_key::rsa : standin_key::ec;
}

std::string describe_key(const tls::pki_options& o) {
  if (o.key_type == "rsa") return "RSA " + std::to_string(o.rsa_bits);
  if (o.key_type == "ec") return "EC " + o.curve;
  return "Ed25519";
}

// Key types already served by the server's readable certificates: with two or more
// certificates the stand-ins add the kind that is missing, so that RSA and EC are both served
// as nginx would serve both.
std::set<standin_key> served_key_kinds(const model::model& m, const model::setting* certs) {
  std::set<standin_key> served;
  for (std::size_t i = 0; certs && i < certs->values.size(); ++i) {
    const auto& c = certs->values[i];
    if (c.args.empty() || c.args.front().rfind("data:", 0) == 0 ||
        c.args.front().find('$') != std::string::npos)
      continue;
    const std::string real = resolve(m, std::string(c.args.front()));
    if (!readable_file(real)) continue;
    try {
      const auto chain = tls::read_certificate_chain(real);
      if (!chain.empty() && chain.front().key_type == "RSA") served.insert(standin_key::rsa);
      if (!chain.empty() && chain.front().key_type == "EC") served.insert(standin_key::ec);
    } catch (const std::exception&) {
      // Not a certificate nginx could serve: it serves no key type.
    }
  }
  return served;
}

// Whether `arg` (an address of resolver, a URL of a responder) is a host name, not an address.
bool host_name(const std::string& arg) {
  std::string h = host_of(arg);
  if (h.size() > 1 && h.front() == '[') h = h.substr(1, h.size() - 2);
  in_addr v4{};
  in6_addr v6{};
  return !loopback_host(h) && ::inet_pton(AF_INET, h.c_str(), &v4) != 1 &&
         ::inet_pton(AF_INET6, h.c_str(), &v6) != 1;
}

}  // namespace

std::string resolve(const model::model& m, const std::string& path) {
  if (path.empty() || !m.cfg) return path;
  // Absolute: the sandbox nginx runs with another prefix.
  return fs::absolute(config::resolve_file(m.cfg->conf_prefix, path)).lexically_normal().string();
}

bool readable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

bool literal_name(const std::string& n) {
  return config::kind_of_server_name(n) == config::server_name_kind::exact &&
         config::name_selecting(n).has_value();
}

void sandbox::assign_ports(const model::model& m, generation_plan& plan) {
  for (std::size_t k = 0; k < m.sockets.size(); ++k) {
    const auto& sock = m.sockets[k];
    if (sock.context == model::context_kind::mail) {
      notes_.push_back({"", "mail socket " + sock.name() +
                                ": not started, the sandbox runs http and stream servers"});
      continue;
    }
    if (sock.quic && (!build_.serves_quic() || sock.context != model::context_kind::http)) {
      // Without HTTP/3 a quic listen stays on the TCP socket of its address, for nginx -t to
      // judge; a QUIC socket beside a TCP one is said once, by its listens.
      const bool tcp_twin = std::any_of(m.sockets.begin(), m.sockets.end(), [&](const auto& o) {
        return !o.quic && o.context == sock.context && o.address == sock.address &&
               o.port == sock.port;
      });
      if (!tcp_twin)
        notes_.push_back({"", "listen socket " + sock.name() +
                                  " is QUIC (UDP) only: not started, this nginx has no HTTP/3"});
      continue;
    }
    bool tls = sock.ssl || sock.quic;
    // `ssl on` (nginx < 1.25.1) makes every listen of the server TLS.
    for (auto si : sock.servers) tls = tls || model::is_on(m.servers[si].get("ssl"));
    if (!tls) continue;
    // The same socket keeps its port across generations (reload_into).
    const std::string key = (sock.quic                                     ? "quic "
                             : sock.context == model::context_kind::stream ? "stream "
                                                                           : "http ") +
                            sock.name();
    auto known = ports_by_name_.find(key);
    plan.port_of_socket[k] =
        known != ports_by_name_.end() ? known->second : free_loopback_port(taken_, sock.quic);
    ports_by_name_[key] = plan.port_of_socket[k];
    if (!sock.quic)
      material_.show_address_as("127.0.0.1:" + std::to_string(plan.port_of_socket[k]), sock.name());
  }
}

void sandbox::plan_servers(const model::model& m, generation_plan& plan) {
  for (std::size_t si = 0; si < m.servers.size(); ++si) {
    server_plan p;
    p.index = si;
    p.label = model::server_label(m, m.servers[si]);
    for (const auto& [k, port] : plan.port_of_socket)
      if (std::find(m.sockets[k].servers.begin(), m.sockets[k].servers.end(), si) !=
          m.sockets[k].servers.end())
        p.sockets.push_back(k);
    if (p.sockets.empty()) continue;
    stand_in_certificates(m, p);
    plan_directives(m, p);
    // The files nginx gets instead of the configured ones, for the whole-config test.
    for (std::size_t li = 0; li < p.lines.size(); ++li)
      if (const auto* d = p.origins[li];
          d && !p.lines[li].second.empty() && p.lines[li].second.front().rfind(run_dir_, 0) == 0)
        sandbox_path_of_[{d->file, d->offset}] = p.lines[li].second.front();
    plan.servers.push_back(std::move(p));
  }
}

void sandbox::stand_in_certificates(const model::model& m, server_plan& p) {
  const auto& s = m.servers[p.index];
  // Certificates: pairs by position, as nginx pairs ssl_certificate with ssl_certificate_key.
  const auto* certs = s.get("ssl_certificate");
  const auto* keys = s.get("ssl_certificate_key");
  std::vector<std::pair<std::string, std::string>> pairs;  // sandbox cert, key
  std::vector<std::pair<const config::directive*, const config::directive*>> pair_where;
  const std::size_t n_pairs =
      std::max(certs ? certs->values.size() : 0, keys ? keys->values.size() : 0);
  std::set<standin_key> served_keys = served_key_kinds(m, certs);
  const standin_key preferred = preferred_standin_key(s);
  // A server that rejects every handshake needs no certificate (ssl_reject_handshake, nginx
  // 1.19.4 and later per nginx's CHANGES): none is stood in for it.
  const bool needs_certificate = n_pairs > 0 || !model::is_on(s.get("ssl_reject_handshake"));
  for (std::size_t i = 0; needs_certificate && i < std::max<std::size_t>(n_pairs, 1); ++i) {
    const model::occurrence* c = certs && i < certs->values.size() ? &certs->values[i] : nullptr;
    const model::occurrence* k = keys && i < keys->values.size() ? &keys->values[i] : nullptr;
    certificate_pair cp;
    cp.pairs_in_server = n_pairs;
    cp.carg = c && !c->args.empty() ? std::string(c->args.front()) : "";
    cp.karg = k && !k->args.empty() ? std::string(k->args.front()) : "";
    cp.creal = resolve(m, cp.carg);
    cp.kreal = resolve(m, cp.karg);
    const std::string &carg = cp.carg, &karg = cp.karg;
    const bool data_cert = carg.rfind("data:", 0) == 0, data_key = karg.rfind("data:", 0) == 0;
    cp.cert_ok =
        data_cert || (!carg.empty() && carg.find('$') == std::string::npos &&
                      readable_file(cp.creal) && !material_.file_for_nginx(cp.creal, carg).empty());
    const bool key_ok = data_key || (!karg.empty() && karg.find('$') == std::string::npos &&
                                     karg.rfind("engine:", 0) != 0 && readable_file(cp.kreal) &&
                                     !material_.file_for_nginx(cp.kreal, karg).empty());
    if (cp.cert_ok && !data_cert) {
      try {
        cp.chain = tls::read_certificate_chain(cp.creal);
      } catch (const std::exception&) {
        cp.chain.reset();  // not a chain: stood in for below
      }
    }
    const bool chain_known = cp.chain && !cp.chain->empty();
    if (chain_known) {
      const auto& leaf = cp.chain->front();
      if (leaf.ocsp_urls.empty()) p.all_have_ocsp_url = false;
      for (const auto& u : leaf.ocsp_urls)
        if (u.find("127.0.0.1") == std::string::npos && u.find("localhost") == std::string::npos)
          p.real_ocsp_url = true;
    }
    if (!carg.empty() && !chain_known && !data_cert) p.ocsp_url_unknown = true;
    if (cp.cert_ok && key_ok) {
      pairs.push_back({data_cert ? carg : material_.file_for_nginx(cp.creal, carg),
                       data_key ? karg : material_.file_for_nginx(cp.kreal, karg)});
      pair_where.push_back({c ? c->where : nullptr, k ? k->where : nullptr});
      continue;
    }
    cp.key_kind = preferred;
    if (!chain_known) {
      const standin_key other = preferred == standin_key::ec ? standin_key::rsa : standin_key::ec;
      if (served_keys.count(preferred) && !served_keys.count(other)) cp.key_kind = other;
      served_keys.insert(cp.key_kind);
    }
    const tls::pki_paths& pki = stand_in_pair(m, p, cp);
    p.standin_pkis.push_back(pki);
    pairs.push_back({pki.chain, pki.leaf_key});
    pair_where.push_back({c ? c->where : nullptr, k ? k->where : nullptr});
    // No certificate at all: the whole-config test gives the server the same stand-in.
    if (carg.empty() && s.where)
      standin_for_server_[{s.where->file, s.where->offset}] = {pki.chain, pki.leaf_key};
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    p.lines.push_back({"ssl_certificate", {pairs[i].first}});
    p.origins.push_back(pair_where[i].first);
    p.lines.push_back({"ssl_certificate_key", {pairs[i].second}});
    p.origins.push_back(pair_where[i].second);
  }
}

const tls::pki_paths& sandbox::stand_in_pair(const model::model& m, server_plan& p,
                                             const certificate_pair& cp) {
  const bool chain_known = cp.chain && !cp.chain->empty();
  const std::string pair_key = cp.creal + "\n" + cp.kreal + "\n" +
                               (chain_known                       ? "chain"
                                : cp.key_kind == standin_key::rsa ? "rsa"
                                                                  : "ec");
  if (const auto* known = material_.stand_in_pki(pair_key)) return *known;
  tls::pki_options po;
  std::string kind;
  if (chain_known) {
    try {
      po = tls::stand_in_options(cp.chain->front(), k_dead_responder);
      kind = "the same key type (" + describe_key(po) + "), names, remaining lifetime" +
             (cp.chain->front().ocsp_urls.empty() ? " and no OCSP URL"
                                                  : " and an OCSP URL (a closed local port)");
    } catch (const std::exception& e) {
      po = {};
      kind = "an EC P-256 key (" + std::string(e.what()) + ")";
    }
    // A leaf-only file stays leaf-only: nginx then finds no issuer for stapling.
    po.intermediate = true;
  } else {
    po.dns_names.clear();
    for (const auto& n : m.servers[p.index].names)
      if (literal_name(n)) po.dns_names.push_back(n);
    if (po.dns_names.empty()) po.dns_names = {"localhost"};
    if (cp.key_kind == standin_key::rsa) po.key_type = "rsa";
    const std::string why_kind =
        cp.pairs_in_server > 1            ? "one of each kind for the server's certificates"
        : cp.key_kind == standin_key::rsa ? "the TLS 1.2 cipher list authenticates with RSA only"
                                          : "the TLS 1.2 cipher list takes an EC key";
    kind = "an " + describe_key(po) + " key (" + why_kind +
           "), the server's names and no OCSP URL (the certificate is not readable here)";
  }
  // Keep the real file's shape: leaf only, or leaf and chain.
  const bool leaf_only = cp.chain && cp.chain->size() == 1 && !cp.chain->front().self_signed;
  const tls::pki_paths& pki = material_.make_stand_in_pki(pair_key, po, leaf_only);
  std::string why;
  if (cp.carg.empty())
    why =
        "no ssl_certificate applies (nginx would refuse the `listen ... ssl`): stand-in "
        "certificate with " +
        kind;
  else if (!cp.cert_ok)
    why = "ssl_certificate \"" + cp.carg + "\" is not readable here: stand-in certificate with " +
          kind;
  else
    why = "ssl_certificate_key \"" + cp.karg +
          "\" is not readable here: stand-in key and certificate with " + kind;
  notes_.push_back({p.label, why});
  if (!cp.carg.empty()) material_.show_as(pki.chain, cp.carg);
  if (!cp.karg.empty()) material_.show_as(pki.leaf_key, cp.karg);
  return pki;
}

void sandbox::plan_directives(const model::model& m, server_plan& p) {
  const auto& s = m.servers[p.index];
  for (const auto& [name_view, setting_ptr] : s.settings()) {
    const std::string name(name_view);
    const model::setting& setting = *setting_ptr;
    if (setting.from == model::origin::nginx_default) continue;
    const directive_policy& policy = server_policy(name);
    if (policy.server == in_server::not_copied || policy.server == in_server::certificate) continue;
    // HTTP/3 settings go with the QUIC sockets: without them (nginx without HTTP/3) the
    // whole-config test alone judges them, as before.
    if ((name.rfind("quic_", 0) == 0 || name.rfind("http3", 0) == 0) && !build_.serves_quic())
      continue;
    if (policy.server == in_server::left_out) {
      notes_.push_back({p.label, name + ": left out (" + std::string(policy.server_reason) + ")"});
      continue;
    }
    if (policy.repeatable) {
      for (const auto& occ : setting.values) plan_occurrence(m, p, name, occ);
    } else if (!setting.values.empty()) {
      plan_occurrence(m, p, name, setting.values.back());
    }
  }
  // Stapling from a real responder needs the network: point nginx at a closed local port
  // instead, so the load never waits on DNS, and say that staple presence is not tested.
  // Without a network namespace that holds even when some certificates have no OCSP URL.
  const bool stapling_on = model::is_on(s.get("ssl_stapling"));
  if (stapling_on && p.real_ocsp_url && (p.all_have_ocsp_url || !network_isolated_) &&
      !p.responder_kept) {
    p.lines.push_back({"ssl_stapling_responder", {k_dead_responder}});
    p.origins.push_back(nullptr);
  }
  if (stapling_on && (p.real_ocsp_url || p.ocsp_url_unknown))
    notes_.push_back(
        {p.label, std::string("ssl_stapling: ") +
                      (p.real_ocsp_url
                           ? "the certificate's OCSP responder is a real one"
                           : "the certificate is not readable here, so its OCSP URL is unknown") +
                      " and the sandbox does not reach the network: a staple cannot arrive, so its "
                      "absence proves nothing here (a missing issuer or OCSP URL still shows)"});
}

void sandbox::plan_occurrence(const model::model& m, server_plan& p, const std::string& name,
                              const model::occurrence& occ) {
  const directive_policy& policy = server_policy(name);
  std::vector<std::string> args = occ.args.strings();
  const std::string arg0 = args.empty() ? "" : args.front();
  const std::string real = resolve(m, arg0);
  auto leave_out = [&](const std::string& why) {
    notes_.push_back({p.label, name + " \"" + arg0 + "\" " + why});
  };
  switch (policy.server) {
    case in_server::resolver:
    case in_server::responder:
      if (!address_allowed(p, name, args)) return;
      if (name == "ssl_stapling_responder") p.responder_kept = true;
      break;
    case in_server::ticket_key:
      if (const std::string copy = readable_file(real) ? material_.file_for_nginx(real, arg0) : "";
          !copy.empty()) {
        args[0] = copy;
      } else {
        const auto standin = material_.ticket_key_standin(real, arg0);
        if (standin.made_now)
          notes_.push_back(
              {p.label, "ssl_session_ticket_key \"" + arg0 +
                            "\" is not readable here: stand-in key file of " +
                            std::to_string(standin.size_bytes) +
                            " bytes (the same file for every server and instance that names it)"});
        args[0] = standin.path;
      }
      break;
    case in_server::trusted_ca:
    case in_server::client_ca:
      args[0] = ca_file(p, name, real, arg0);
      if (args[0].empty()) return leave_out("is not readable here: left out");
      break;
    case in_server::file_copied:
      if (!readable_file(real) || material_.file_for_nginx(real, arg0).empty())
        return leave_out("is not readable here: left out" +
                         (policy.server_reason.empty()
                              ? std::string()
                              : " (" + std::string(policy.server_reason) + ")"));
      args[0] = material_.file_for_nginx(real, arg0);
      break;
    default:
      break;
  }
  p.lines.push_back({name, args});
  p.origins.push_back(occ.where);
}

bool sandbox::address_allowed(server_plan& p, const std::string& name,
                              const std::vector<std::string>& args) {
  const bool resolver = name == "resolver";
  if (!network_isolated_) {
    std::string off;
    for (const auto& a : args)
      if (!resolver || a.find('=') == std::string::npos)
        if (!loopback_host(host_of(a))) off = a;
    if (off.empty()) return true;
    notes_.push_back({p.label, name + " \"" + off +
                                   "\": left out (off-host, and the sandbox has no network "
                                   "namespace to keep nginx from reaching it)"});
    return false;
  }
  if (!resolver) return true;
  // nginx resolves a resolver given by name while it loads the config; with loopback only that
  // fails, and nginx -t would reject what production accepts.
  std::string by_name, off_host;
  for (const auto& a : args) {
    if (a.find('=') != std::string::npos) continue;
    if (host_name(a)) by_name = a;
    if (!loopback_host(host_of(a))) off_host = a;
  }
  if (!by_name.empty()) {
    notes_.push_back({p.label, "resolver \"" + by_name +
                                   "\": left out (a host name, which the sandbox's loopback-only "
                                   "network cannot resolve)"});
    return false;
  }
  if (!off_host.empty())
    notes_.push_back({p.label, "resolver \"" + off_host +
                                   "\": kept, but not reachable from the sandbox's loopback-only "
                                   "network: nothing it would resolve (an OCSP responder's host) "
                                   "is resolved here"});
  return true;
}

std::string sandbox::ca_file(server_plan& p, const std::string& name, const std::string& real,
                             const std::string& arg) {
  if (!p.standin_pkis.empty()) {
    // The real CA file would not hold the stand-in's issuer.
    const std::string bundle = material_.ca_bundle(p.standin_pkis.front(), arg);
    notes_.push_back(
        {p.label,
         name + " \"" + arg +
             "\": the stand-in issuer stands in for it (assumed to hold the real issuer)"});
    return bundle;
  }
  if (readable_file(real) && !material_.file_for_nginx(real, arg).empty())
    return material_.file_for_nginx(real, arg);
  if (server_policy(name).server != in_server::client_ca) return "";
  // Left out, ssl_verify_client would make nginx refuse the server ("no ssl_client_certificate
  // for ssl_verify_client"): a CA of the sandbox's own stands in, one per file so that servers
  // sharing the file share the stand-in.
  const std::string key = "client-ca\n" + real;
  const tls::pki_paths* ca = material_.stand_in_pki(key);
  if (!ca) {
    ca = &material_.make_stand_in_pki(key, {}, false);
    notes_.push_back({p.label, name + " \"" + arg +
                                   "\" is not readable here: a CA of the sandbox's own stands in "
                                   "for it (no client certificate the real CA issued is verified "
                                   "here)"});
  }
  material_.show_as(ca->root_cert, arg);
  return ca->root_cert;
}

void sandbox::plan_workers_and_modules(const model::model& m, generation_plan& plan) {
  // The worker count as configured, capped.
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  workers_ = !m.worker_processes        ? 1
             : *m.worker_processes == 0 ? static_cast<int>(cpus)
                                        : *m.worker_processes;
  if (workers_ > max_workers_) {
    notes_.push_back({"", "worker_processes " + std::to_string(workers_) + " capped at " +
                              std::to_string(max_workers_)});
    workers_ = max_workers_;
  }
  workers_ = std::max(1, workers_);

  // Modules: none the config names (a module is code, run as the master's user at load). The
  // stream module of the build's own module directory when stream servers need it and the
  // build has it as a dynamic module; anything else the TLS servers need is built in.
  bool has_stream = false;
  for (const auto& p : plan.servers)
    has_stream = has_stream || m.servers[p.index].context == model::context_kind::stream;
  const std::string stream_module = build_.stream_module_file();
  if (has_stream && build_.stream_is_dynamic()) {
    if (trusted_module(stream_module))
      plan.modules.push_back(stream_module);
    else
      notes_.push_back(
          {"", stream_module + " is missing, or writable by others: stream servers cannot run"});
  }
  if (m.cfg)
    for (const auto& d : m.cfg->root)
      if (d.name == "load_module" && !d.args.empty()) {
        const std::string arg(d.args.front().value());
        if (!plan.modules.empty() && fs::path(arg).filename() == "ngx_stream_module.so")
          notes_.push_back({"", "load_module \"" + arg + "\": the sandbox loads the build's own " +
                                    stream_module});
        else
          notes_.push_back({"", "load_module \"" + arg +
                                    "\": left out (the sandbox loads no module a config names; "
                                    "its TLS servers need none but the stream module)"});
      }
  if (has_stream && !plan.modules.empty() && m.cfg &&
      std::none_of(m.cfg->root.begin(), m.cfg->root.end(),
                   [](const auto& d) { return d.name == "load_module"; }))
    notes_.push_back(
        {"", "the config has stream servers but loads no stream module: the sandbox loads " +
                 stream_module +
                 " (unless your nginx has the module built in, it rejects `stream` as an unknown "
                 "directive)"});

  // Limits that grow with the config: every worker holds a connection per listen socket.
  worker_connections_ = 512 + static_cast<int>(plan.port_of_socket.size());
  nofile_ = static_cast<rlim_t>(worker_connections_) +
            static_cast<rlim_t>(plan.port_of_socket.size()) + 256;
  {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
        rl.rlim_max < nofile_ && ::geteuid() != 0)
      notes_.push_back({"", "RLIMIT_NOFILE's hard limit " + std::to_string(rl.rlim_max) +
                                " is below the " + std::to_string(nofile_) + " descriptors " +
                                std::to_string(plan.port_of_socket.size()) +
                                " listen sockets need: nginx may fail to start"});
  }
  // Temp paths of the http modules this build has (each defaults to a compiled-in path such
  // as /var/lib/nginx/body, which nginx creates and, as root, chowns to its worker user).
  plan.temp_paths = {"client_body_temp_path client_body_temp;"};
  for (const char* mod : {"proxy", "fastcgi", "uwsgi", "scgi"})
    if (build_.has_http_module(mod))
      plan.temp_paths.push_back(std::string(mod) + "_temp_path " + mod + "_temp;");
}

void sandbox::plan_listens(const model::model& m, generation_plan& plan) {
  for (std::size_t pi = 0; pi < plan.servers.size(); ++pi) plan.listens_of[pi];
  // Listen lines as written (options kept, so that nginx reports duplicate default servers and
  // duplicate listen options as production would), moved to the socket's loopback port.
  static const std::set<std::string> bind_options = {
      "backlog",  "rcvbuf",    "sndbuf",   "accept_filter", "deferred", "bind",
      "ipv6only", "reuseport", "fastopen", "so_keepalive",  "setfib"};
  std::map<std::size_t, std::pair<std::size_t, std::size_t>> options_at;  // socket -> (plan, line)
  std::set<std::size_t> has_reuseport, with_options;
  // A quic listen goes on its UDP socket's port when this nginx serves HTTP/3; otherwise it is
  // kept on the TCP socket of its address so that nginx -t judges it as production would
  // (nginx before 1.25.0, or built without --with-http_v3_module, rejects it).
  const bool quic_served = build_.serves_quic();
  for (std::size_t pi = 0; pi < plan.servers.size(); ++pi) {
    const auto& p = plan.servers[pi];
    const auto& s = m.servers[p.index];
    std::set<std::string> noted;
    for (const auto& ld : s.listens) {
      if (!ld.where) continue;
      std::size_t k = m.sockets.size();
      for (auto sk : p.sockets)
        if (m.sockets[sk].address == ld.address && m.sockets[sk].port == ld.port &&
            (!quic_served || m.sockets[sk].quic == ld.quic))
          k = sk;
      if (k == m.sockets.size()) continue;
      const bool on_udp = ld.quic && m.sockets[k].quic;
      // `ssl` is added at render time where it was written, or where no listen of the
      // socket in the rendered config has it (see render).
      std::string l;
      bool options = false;
      for (std::size_t ai = 1; ai < ld.where->args.size(); ++ai) {
        const std::string a(ld.where->args[ai].value());
        const std::string opt = a.substr(0, a.find('='));
        if (a == "ssl") continue;
        if (a == "proxy_protocol") {
          if (noted.insert(a).second)
            notes_.push_back({p.label,
                              "listen ... proxy_protocol: left out in the sandbox (the prober "
                              "sends no PROXY header; "
                              "real clients must come through the proxy)"});
          continue;
        }
        if (opt == "ipv6only") continue;  // meaningless on 127.0.0.1
        if (a == "reuseport") has_reuseport.insert(k);
        if (bind_options.count(opt)) options = true;
        l += " " + quote_token(a);
      }
      if (ld.address.rfind("unix:", 0) == 0 && noted.insert("unix").second)
        notes_.push_back({p.label, "listen " + ld.address + " runs on TCP 127.0.0.1:" +
                                       std::to_string(plan.port_of_socket[k])});
      if (ld.address.find('[') != std::string::npos && noted.insert("v6").second)
        notes_.push_back({p.label, "listen " + ld.address + ":" + std::to_string(ld.port) +
                                       " runs on 127.0.0.1 (IPv4 loopback)"});
      auto& lines = plan.listens_of[pi];
      // reuseport for --instances goes on the listen that carries the socket's options,
      // else on its first listen.
      if (!options_at.count(k) || (options && !with_options.count(k))) {
        options_at[k] = {pi, lines.size()};
        if (options) with_options.insert(k);
      }
      lines.push_back({"        listen 127.0.0.1:" + std::to_string(plan.port_of_socket[k]), l,
                       ld.where, ld.port, k, ld.ssl, on_udp});
    }
  }
  // N instances share each port through SO_REUSEPORT: one listen per socket carries it.
  if (instances_ > 1)
    for (const auto& [k, at] : options_at)
      if (!has_reuseport.count(k)) plan.listens_of[at.first][at.second].text += " reuseport";
}

}  // namespace ngxtls::sandbox
