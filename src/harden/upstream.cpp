// harden --upstream: TLS to a backend done right (docs/nginx-facts.md#upstream-tls): an upstream
// block that keeps connections and shares the saved TLS sessions, and a location that sends
// HTTP/1.1 without `Connection: close`, resumes sessions, verifies the backend's certificate
// for the right name and sends that name as SNI.

#include "model/upstream.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "base/error.hpp"
#include "config/values.hpp"
#include "harden/internal.hpp"

namespace ngxtls::harden {

using model::version;

namespace {

// nginx versions where the upstream directives' behaviour changed (nginx CHANGES;
// docs/nginx-facts.md#upstream-tls for what was measured).
constexpr version upstream_keepalive_limits{1, 15, 3};  // keepalive_requests/_timeout in upstream
constexpr version keepalive_requests_1000{1, 19, 10};   // their default 100 became 1000
constexpr version tls13_default{1, 23, 4};     // proxy_ssl_protocols' default gains TLSv1.3
constexpr version no_tls10_default{1, 27, 3};  // ... and loses TLSv1 and TLSv1.1

// Characters that would end a token, start a comment or a variable where NAME, ADDRESS or HOST
// land (`proxy_pass https://NAME;`, `server ADDRESS;`, `proxy_ssl_name HOST;`).
bool plain_token(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f ||
        std::string_view(";{}\"'\\#$").find(c) != std::string_view::npos)
      return false;
  return !s.empty();
}

bool name_chars(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

// "NAME=VALUE" split at the first '='; usage_error naming `flag` when there is none.
std::pair<std::string, std::string> split_assignment(const std::string& flag,
                                                     const std::string& arg,
                                                     const std::string& form) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos)
    throw usage_error(flag + " " + arg + ": expected " + form + " (no `=`)");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

void check_name(const std::string& flag, const std::string& arg, const std::string& name) {
  if (!name_chars(name) || name.front() == '-' || name.front() == '.')
    throw usage_error(flag + " " + arg + ": NAME `" + name +
                      "` must be letters, digits, `.`, `_` or `-` (it becomes the host of "
                      "`proxy_pass https://NAME`)");
  if (name == session_zone)
    throw usage_error(flag + " " + arg + ": NAME `" + name +
                      "` is the snippet's session cache zone; the upstream's zone would clash "
                      "with it");
}

// The longest unix socket path nginx takes in an upstream `server`: sockaddr_un's sun_path less
// its NUL (a 107-byte path passes `nginx -t`, 108 bytes is `too long path`, 1.26.3).
constexpr std::size_t max_unix_path_bytes = 107;

// ADDRESS of an upstream `server`: host:port, [v6]:port or unix:/PATH, as nginx parses it.
void check_address(const std::string& arg, const std::string& address) {
  const std::string flag = "--upstream " + arg;
  if (!plain_token(address))
    throw usage_error(flag + ": ADDRESS `" + address +
                      "` is empty or holds white space or one of ; { } quotes \\ # $");
  const model::host_port hp = model::split_address(address);
  if (hp.unix_socket) {
    if (address.size() < 6 || address[5] != '/')
      throw usage_error(flag + ": a unix socket is `unix:/absolute/path`");
    if (address.size() - 5 > max_unix_path_bytes)
      throw usage_error(flag + ": the socket path is " + std::to_string(address.size() - 5) +
                        " bytes; nginx takes at most " + std::to_string(max_unix_path_bytes) +
                        " (`too long path in the unix domain socket in upstream`)");
    return;
  }
  if (address.front() == '[' && address.find(']') == std::string::npos)
    throw usage_error(flag + ": ADDRESS `" + address + "` opens `[` without closing it");
  in6_addr v6{};
  if (address.front() == '[' &&
      ::inet_pton(AF_INET6, address.substr(1, address.find(']') - 1).c_str(), &v6) != 1)
    throw usage_error(flag + ": `" + address.substr(0, address.find(']') + 1) +
                      "` is not an IPv6 address (nginx: `invalid IPv6 address in upstream`)");
  // All digits and dots, yet no IPv4 address: nginx looks it up as a host name and fails
  // (`host not found in upstream "999.1.1.1:443"`, 1.26.3). glibc's inet_aton is the test
  // that lookup applies: it takes 1.2.3 (as 1.2.0.3), which nginx accepts too.
  const std::string host = address.substr(0, address.rfind(':'));
  in_addr v4{};
  if (address.front() != '[' && !host.empty() &&
      host.find_first_not_of("0123456789.") == std::string::npos &&
      ::inet_aton(host.c_str(), &v4) == 0)
    throw usage_error(flag + ": `" + host +
                      "` is not an IPv4 address (nginx looks it up as a host name: `host not "
                      "found in upstream`)");
  const auto colon = address.rfind(':');
  const bool bracketed = address.front() == '[';
  if (!bracketed && colon != std::string::npos && address.find(':') != colon)
    throw usage_error(flag + ": an IPv6 address goes in brackets: `[v6]:port`");
  if (colon == std::string::npos || (bracketed && colon < address.find(']')))
    throw usage_error(flag + ": ADDRESS `" + address +
                      "` needs a port (host:port, [v6]:port): an upstream server without one "
                      "is port 80, not 443");
  if (!config::parse_port(std::string_view(address).substr(colon + 1)) || hp.port <= 0)
    throw usage_error(flag + ": the port of `" + address + "` is not a number from 1 to 65535");
  if (hp.host.empty()) throw usage_error(flag + ": ADDRESS `" + address + "` has no host");
}

}  // namespace

std::vector<upstream_options> parse_upstreams(const std::vector<std::string>& upstream_args,
                                              const std::vector<std::string>& ssl_name_args) {
  std::vector<upstream_options> out;
  auto find = [&](const std::string& name) {
    return std::find_if(out.begin(), out.end(),
                        [&](const upstream_options& u) { return u.name == name; });
  };
  // nginx compares upstream names without case ("duplicate upstream"): `be` and `BE` clash.
  auto clash = [&](const std::string& name) {
    return std::find_if(out.begin(), out.end(), [&](const upstream_options& u) {
      return u.name != name && config::equal_ignoring_case(u.name, name);
    });
  };
  for (const auto& arg : upstream_args) {
    auto [name, address] = split_assignment("--upstream", arg, "NAME=ADDRESS");
    check_name("--upstream", arg, name);
    check_address(arg, address);
    if (auto other = clash(name); other != out.end())
      throw usage_error("--upstream " + arg + ": " + name + " and " + other->name +
                        " are one upstream name to nginx (it ignores case): use one spelling");
    auto it = find(name);
    if (it == out.end()) {
      out.push_back({name, {}, ""});
      it = out.end() - 1;
    }
    if (std::find(it->servers.begin(), it->servers.end(), address) != it->servers.end())
      throw usage_error("--upstream " + arg + ": " + address + " is already a server of " + name);
    it->servers.push_back(address);
  }
  for (const auto& arg : ssl_name_args) {
    auto [name, host] = split_assignment("--upstream-ssl-name", arg, "NAME=HOST");
    auto it = find(name);
    if (it == out.end())
      throw usage_error("--upstream-ssl-name " + arg + ": no --upstream " + name +
                        "=ADDRESS was given");
    if (!name_chars(host) || host.front() == '-' || host.front() == '.')
      throw usage_error("--upstream-ssl-name " + arg + ": HOST `" + host +
                        "` must be a host name (letters, digits, `.`, `_`, `-`)");
    if (!it->ssl_name.empty() && it->ssl_name != host)
      throw usage_error("--upstream-ssl-name " + arg + ": " + name + " already has the name " +
                        it->ssl_name);
    it->ssl_name = host;
  }
  return out;
}

namespace {

// The name the backend's certificate must hold: given, else the first server's host name, else
// NAME (nginx's default proxy_ssl_name is $proxy_host, the upstream's name).
std::string ssl_name_of(const upstream_options& u, bool& defaulted_to_block) {
  defaulted_to_block = false;
  if (!u.ssl_name.empty()) return u.ssl_name;
  const model::host_port hp = model::split_address(u.servers.front());
  if (!hp.unix_socket && model::is_host_name(hp.host)) return hp.host;
  defaulted_to_block = true;
  return u.name;
}

std::string protocols_reason(const version& nginx) {
  if (nginx < tls13_default)
    return "nginx's default before 1.23.4 is TLSv1 TLSv1.1 TLSv1.2: old protocols and no TLS 1.3 "
           "(docs/nginx-facts.md#upstream-tls)";
  if (nginx < no_tls10_default)
    return "nginx's default before 1.27.3 adds TLSv1 and TLSv1.1 "
           "(docs/nginx-facts.md#upstream-tls)";
  return "nginx's default from 1.27.3, written out so it does not depend on the version";
}

std::vector<snippet_line> block_lines(const upstream_options& u, const harden_options& o) {
  std::vector<snippet_line> lines;
  auto add = [&](std::string d, std::string why) {
    lines.push_back({"upstream", std::move(d), std::move(why)});
  };
  add("zone " + u.name + " 64k;",
      "the servers and their saved TLS sessions in shared memory: one full handshake for all "
      "workers, not one per worker (docs/nginx-facts.md#upstream-tls)");
  for (const auto& server : u.servers) {
    const model::host_port hp = model::split_address(server);
    add("server " + server + ";", !hp.unix_socket && model::is_host_name(hp.host)
                                      ? "a host name is resolved once, when nginx starts"
                                      : "");
  }
  add("keepalive " + std::to_string(o.upstream_keepalive) + ";",
      o.nginx < version{1, 30, 0}
          ? "idle connections each worker keeps: without it nginx closes every upstream "
            "connection (docs/nginx-facts.md#upstream-tls)"
          : "idle connections each worker keeps (nginx 1.30 keeps some without it)");
  if (o.nginx >= upstream_keepalive_limits) {
    add("keepalive_requests 1000;",
        o.nginx < keepalive_requests_1000
            ? "requests per kept connection (nginx's default before 1.19.10 is 100)"
            : "requests per kept connection before nginx closes it (the default)");
    add("keepalive_timeout 60s;",
        "idle time before nginx closes a kept connection: below the backend's own (nginx's "
        "keepalive_timeout default is 75s), so the backend never closes first");
  }
  return lines;
}

std::vector<snippet_line> location_lines(snippet& s, const upstream_options& u,
                                         const harden_options& o, const profile& p) {
  std::vector<snippet_line> lines;
  auto add = [&](std::string d, std::string why) {
    lines.push_back({"location", std::move(d), std::move(why)});
  };
  const bool keeps = model::keeps_upstream_connections_by_default(o.nginx);
  add("proxy_pass https://" + u.name + ";", "the upstream block: its connections are kept");
  add("proxy_http_version 1.1;",
      keeps ? "nginx 1.30's default, written out: HTTP/1.0 ends every upstream connection"
            : "nginx's default before 1.30 is 1.0, which ends every upstream connection "
              "(docs/nginx-facts.md#upstream-tls)");
  if (keeps)
    add("",
        "no `proxy_set_header Connection \"\"`: nginx 1.30 sends no Connection header of its "
        "own (docs/nginx-facts.md#upstream-tls)");
  else
    add("proxy_set_header Connection \"\";",
        "nginx sends `Connection: close` before 1.30; a level with proxy_set_header drops the "
        "inherited ones: repeat the server's proxy_set_header lines here");
  const std::vector<std::string> protocols = target_protocols(o, p);
  add("proxy_ssl_protocols " + join(protocols, " ") + ";", protocols_reason(o.nginx));
  if (std::find(protocols.begin(), protocols.end(), "TLSv1.2") != protocols.end() &&
      !p.ciphers.empty())
    add("proxy_ssl_ciphers " + join(p.ciphers, ":") + ";",
        "TLS 1.2: ECDHE + AEAD only (" + p.guideline + "; nginx's default is DEFAULT)");
  add("proxy_ssl_session_reuse on;",
      "the default, written out: a new connection resumes the saved session (off: a full "
      "handshake each time)");
  add("proxy_ssl_verify on;",
      "check the backend's certificate (nginx's default is off); the default "
      "proxy_ssl_verify_depth 1 accepts one intermediate CA (docs/nginx-facts.md#upstream-tls)");
  add("proxy_ssl_trusted_certificate " +
          nginx_quote(o.upstream_trusted_certificate.empty()
                          ? std::string("/path/to/backend-ca.pem")
                          : o.upstream_trusted_certificate) +
          ";",
      "the CA that issued the backends' certificates");
  bool defaulted = false;
  const std::string name = ssl_name_of(u, defaulted);
  add("proxy_ssl_name " + name + ";", "the name the backend's certificate must hold");
  add("proxy_ssl_server_name on;",
      "send that name as SNI (nginx's default is off): a name-based backend answers with its "
      "default server's certificate without it");
  if (defaulted)
    s.notes.push_back("proxy_ssl_name " + name + ": the certificates of " + u.name +
                      "'s servers must hold this name; give --upstream-ssl-name " + u.name +
                      "=HOST for the name they hold");
  // One location, one proxy_ssl_name: every server of the block is verified against it.
  for (const auto& server : u.servers) {
    const model::host_port hp = model::split_address(server);
    if (u.ssl_name.empty() && !hp.unix_socket && model::is_host_name(hp.host) && hp.host != name) {
      s.notes.push_back("proxy_ssl_name " + name + " is checked against every server of " + u.name +
                        ", " + hp.host +
                        " too: its certificate must hold that name (nginx has one "
                        "proxy_ssl_name per location), or give --upstream-ssl-name " +
                        u.name + "=HOST for a name they all hold");
      break;
    }
  }
  if (name != u.name)
    s.notes.push_back("nginx sends `Host: " + u.name + "` to " + u.name +
                      " (`$proxy_host`); a backend that routes by name may need "
                      "`proxy_set_header Host " +
                      name + ";` in its location");
  return lines;
}

}  // namespace

void add_tls_backends(snippet& s, const harden_options& o, const profile& p) {
  if (o.upstreams.empty()) return;
  if (o.upstream_keepalive < 1)
    throw usage_error("--upstream-keepalive must be at least 1 (0 keeps no connection)");
  for (const auto& u : o.upstreams) {
    if (u.servers.empty()) throw usage_error("--upstream " + u.name + ": no server");
    snippet_upstream out;
    out.name = u.name;
    out.location = o.upstreams.size() == 1 ? "/" : "/" + u.name + "/";
    out.block = block_lines(u, o);
    out.location_lines = location_lines(s, u, o, p);
    s.upstreams.push_back(std::move(out));
  }
  const std::string& ca = o.upstream_trusted_certificate;
  std::error_code ec;
  if (ca.empty())
    s.warnings.push_back(
        "proxy_ssl_trusted_certificate is a placeholder: give --upstream-ca FILE (the CA that "
        "issued the backends' certificates); nginx -t fails until it names a readable file");
  else if (ca.front() != '/')
    s.warnings.push_back("--upstream-ca " + ca +
                         " is a relative path: nginx reads it from the directory of its "
                         "nginx.conf (`SSL_CTX_load_verify_locations(\"/etc/nginx/" +
                         ca + "\")` with -c /etc/nginx/nginx.conf), not from here");
  else if (!std::filesystem::is_regular_file(ca, ec))
    s.warnings.push_back("--upstream-ca " + ca +
                         " is not a file on this machine: nginx -t fails unless it is one where "
                         "nginx runs");
}

}  // namespace ngxtls::harden
