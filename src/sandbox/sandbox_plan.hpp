#pragma once
// The sandbox's plan of one generation (internal to src/sandbox): what each phase of
// sandbox::generate() adds and the later ones read, and the helpers the phases share.

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/values.hpp"
#include "model/model.hpp"
#include "sandbox/sandbox.hpp"
#include "tls/certificate.hpp"
#include "tls/pki.hpp"

namespace ngxtls::sandbox {

/// The sandbox's view of one server: what to emit, what was dropped.
struct sandbox::server_plan {
  std::size_t index = 0;  ///< index into model::servers
  std::string label;
  bool dropped = false;
  /// Directive and arguments (sandbox paths), and the linted directive of each.
  std::vector<std::pair<std::string, std::vector<std::string>>> lines;
  std::vector<const config::directive*> origins;
  std::vector<std::size_t> sockets;  ///< indexes into model::sockets
  /// Stand-in PKIs of its certificates (empty: every certificate is the real one).
  std::vector<tls::pki_paths> standin_pkis;
  bool real_ocsp_url = false;     ///< a leaf names an OCSP responder off this host
  bool all_have_ocsp_url = true;  ///< every readable leaf names one
  bool ocsp_url_unknown = false;  ///< a certificate could not be read
  bool responder_kept = false;    ///< its own ssl_stapling_responder is in `lines`
};

/// What kind of line of the rendered config a line is.
enum class line_kind { other, server_head, listen, directive, stream_head, upstream };

/// What one rendered line stands for, to blame the right thing when nginx -t rejects it.
struct sandbox::line_origin {
  line_kind what = line_kind::other;
  std::size_t server = 0;                    ///< index into model::servers
  const config::directive* where = nullptr;  ///< the linted directive
  std::size_t plan_server = 0;               ///< directives: index into servers
  std::size_t line = 0;                      ///< directives: index into server_plan::lines
  int port = 0;                              ///< listen lines: the linted config's port
  std::size_t upstream = 0;                  ///< upstream lines: index into upstream_plans
};

/// Key types a stand-in certificate can have when the real one is not readable.
enum class standin_key { ec, rsa };

/// One certificate pair of a server, as stand_in_certificates plans it.
struct sandbox::certificate_pair {
  std::string carg, karg;    ///< the configured certificate and key ("" when none)
  std::string creal, kreal;  ///< resolved absolute paths
  bool cert_ok = false;      ///< nginx can read the certificate (data:, or a readable copy)
  /// The leaf and chain, when the certificate file is readable here.
  std::optional<std::vector<tls::certificate_info>> chain;
  standin_key key_kind = standin_key::ec;  ///< a stand-in's key when the chain is unknown
  std::size_t pairs_in_server = 0;         ///< how many pairs the server has
};

// The plan of one generation: what each phase of generate() adds, read by the later ones.
struct sandbox::generation_plan {
  /// A listen line as written (options kept, so that nginx reports duplicate default servers and
  /// duplicate listen options as production would), moved to the socket's loopback port.
  struct listen_line {
    std::string head;  ///< "listen 127.0.0.1:P"
    std::string text;  ///< its parameters after `ssl`
    const config::directive* where = nullptr;
    int port = 0;            ///< the linted config's port
    std::size_t socket = 0;  ///< index into model::sockets
    bool ssl = false;        ///< written with `ssl`
    bool quic = false;       ///< a `listen ... quic` line (UDP: never given `ssl`)
  };

  std::map<std::size_t, int> port_of_socket;  ///< model::sockets index -> loopback port
  std::vector<server_plan> servers;
  std::vector<std::string> modules;     ///< load_module paths (the build's stream module)
  std::vector<std::string> temp_paths;  ///< *_temp_path lines inside the run directory
  std::map<std::size_t, std::vector<listen_line>> listens_of;   ///< servers index -> lines
  std::set<std::pair<std::size_t, std::size_t>> dropped_lines;  ///< (servers index, line)
  bool stream_dropped = false;  ///< the stream block is left out (no stream module)

  /// One TLS upstream and variant as the sandbox runs it (plan_upstreams).
  struct upstream_lines {
    std::size_t upstream = 0;  ///< index into model::tls_upstreams
    upstream_variant variant = upstream_variant::as_configured;
    std::size_t server = 0;             ///< index into model::servers
    std::vector<std::string> block;     ///< the upstream block (http or stream level)
    std::vector<std::string> location;  ///< the location (http) or server lines (stream)
    const upstream_standin* standin = nullptr;
    bool dropped = false;  ///< nginx -t rejected one of its lines
  };
  std::vector<upstream_lines> upstream_plans;
};

/// One rendered config and what each of its lines stands for (index 0 unused: lines are
/// 1-based).
struct sandbox::rendered_config {
  std::string text;
  std::vector<line_origin> origin_of_line;
};

/// A closed local port for stand-in OCSP URLs: connecting is refused at once, nothing leaves the
/// host.
inline constexpr const char* k_dead_responder = "http://127.0.0.1:9/";

/// `path` as configured, absolute (the sandbox nginx runs with another prefix).
std::string resolve(const model::model& m, const std::string& path);
/// A regular file this process can read.
bool readable_file(const std::string& path);
/// A server name that is one host name (not a wildcard, regex, variable or `_`).
bool literal_name(const std::string& n);
/// A random free 127.0.0.1 port (TCP, or UDP when `udp`) not in `taken` (added to it). Throws
/// target_error when none is found.
int free_loopback_port(std::set<int>& taken, bool udp = false);
/// Whether 127.0.0.1:`port` binds right now (TCP, or UDP when `udp`).
bool loopback_port_free(int port, bool udp);
/// The message of nginx's log line `l`: without its place when that is the sandbox config
/// `conf_path` (its line then in `line`), else with the place nginx named (`line` 0).
std::string message_in_sandbox_config(const config::nginx_log_line& l, const std::string& conf_path,
                                      int& line);

}  // namespace ngxtls::sandbox
