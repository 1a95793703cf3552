#pragma once
// `check`: each lint finding held against probe evidence - confirmed, refuted or not testable.
// The only place where config facts and live measurements meet (CONVENTIONS, The house).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.hpp"
#include "probe/results.hpp"

namespace ngxtls::check {

enum class verdict { confirmed, refuted, not_testable };
/// "confirmed", "refuted", "not_testable".
std::string to_string(verdict v);

/// One probe number a verdict rests on, e.g. {"TLSv1.3 ticket resumed", "0/20"}.
struct probe_fact {
  std::string name;
  std::string value;
  std::string target;  ///< the probed target (and SNI) it came from
};

/// A lint finding with its verdict. The finding is kept whatever the verdict: refuted
/// findings are reported as such, never dropped.
struct checked_finding {
  engine::finding finding;
  verdict result = verdict::not_testable;
  std::string reason;                ///< one sentence: why this verdict
  std::vector<probe_fact> evidence;  ///< the probe numbers behind it
};

/// One configured ssl_session_ticket_key file and its 16-byte key name (lowercase hex, as
/// tickets carry it; docs/nginx-facts.md#ticket-key-rotation). The key itself is never read into
/// the report.
struct configured_key {
  std::string path;
  std::string key_name_hex;  ///< empty when the file could not be read here
  std::string server;        ///< server label of the default server that lists it
  bool encrypting = false;   ///< first in its list: the key that seals new tickets
  std::vector<int> ports;    ///< ports of the listen sockets whose default server lists it
};

/// Every ticket key file the config's socket default servers list.
std::vector<configured_key> configured_keys(const engine::context& ctx);

/// Which configured file sealed the live tickets, per key name seen; or that the endpoint seals
/// with a key the config does not hold; or, when the socket's default server names no key
/// file, that it is nginx's automatic key. `port_map` maps probed ports to the config's ports
/// (check --sandbox); without an entry a port is taken as it is. One line each, for the report.
std::vector<std::string> match_key_names(const std::vector<configured_key>& keys,
                                         const std::vector<probe::target_result>& results,
                                         const std::map<int, int>& port_map = {});

/// A session taken with one server name and offered with another on the same socket, per
/// protocol: does it resume there, is it refused, or does the server make a full handshake?
struct session_crossing {
  std::string from_sni;  ///< SNI the session was taken with ("" = none: the default server)
  std::string to_sni;    ///< SNI it was offered with
  int port = 0;          ///< the linted config's port of the socket
  std::string target;    ///< probed address, for the report
  std::string protocol;  ///< "TLSv1.3" or "TLSv1.2"
  bool taken = false;    ///< the first name gave a session to offer
  int attempts = 0;      ///< offers that completed a handshake
  int resumed = 0;       ///< of those, resumed
  int failed = 0;        ///< offers whose handshake failed
  std::string failure;   ///< the last failure's text (e.g. the alert)
  std::map<int, int> http_statuses;  ///< HTTP status of the offers' responses -> offers
};

/// "resumed 4/4", "full handshake 0/4", "handshake failed 4/4 (...)" or "no session".
std::string describe(const session_crossing& c);

/// A `[warn]` nginx -t printed for the linted config (check --sandbox).
struct nginx_warning {
  source_location where;  ///< the directive warned about; file empty when unknown
  int port = 0;           ///< config port of the listen line warned about; 0 otherwise
  std::string message;
};

/// Requests per variant of each TLS upstream in `check --sandbox`.
inline constexpr int k_upstream_requests = 50;
/// Client connections they come from (taking turns, one request in flight).
inline constexpr int k_upstream_client_connections = 5;

/// What nginx did through one variant of a TLS upstream in `check --sandbox`: the requests
/// driven through nginx and what the stand-in upstream saw (sandbox/upstream_standin.hpp).
struct upstream_counts {
  bool measured = false;         ///< the variant ran and requests were driven through it
  int requests = 0;              ///< client requests sent through nginx
  int ok = 0;                    ///< answered 2xx
  int bad_gateway = 0;           ///< answered 502
  int failed = 0;                ///< other statuses and failures
  int connections = 0;           ///< TLS connections nginx opened to the stand-in
  int full_handshakes = 0;       ///< completed, not resumed
  int resumed = 0;               ///< completed, resumed
  int upstream_requests = 0;     ///< requests the stand-in answered
  int client_certificates = 0;   ///< connections on which nginx presented a client certificate
  std::vector<std::string> sni;  ///< distinct SNI values received ("" for none)
  std::vector<std::string> protocols;  ///< distinct protocols negotiated
};

/// `check --sandbox --load`: requests per second through the location as configured and with
/// the keepalive fix, measured one after the other in the same sandbox.
struct upstream_price {
  int connections = 0;  ///< client connections, each with a request in flight
  int duration_ms = 0;  ///< per variant
  double configured_rps = 0, fixed_rps = 0;
  int configured_upstream_connections = 0, fixed_upstream_connections = 0;
  int configured_full_handshakes = 0, fixed_full_handshakes = 0;
};

/// One TLS upstream of the config as `check --sandbox` measured it.
struct upstream_measurement {
  source_location pass;  ///< the *_pass directive
  std::string server;    ///< server label
  std::string location;  ///< "/api/" ("" in stream)
  std::string ssl_name;  ///< the name nginx sends and verifies; the stand-in's certificate name
  upstream_counts as_configured;
  upstream_counts wrong_name;           ///< stand-in certificate for another name
  upstream_counts fixed;                ///< keepalive, HTTP/1.1, Connection "", session reuse
  std::optional<upstream_price> price;  ///< --load
};

/// "50 requests through /api/ opened 50 upstream TLS connections: 50 full handshakes, 0
/// resumed, no SNI" (SNI "SNI backend.example.com"; stream: "through the stream server ...").
std::string describe(const upstream_measurement& m, const upstream_counts& c);

/// Options of the judgement.
struct judge_options {
  /// Several endpoints (or backends via --connect) stand for the instances behind one name:
  /// one key domain at 100% on all of them refutes ticket-keys-not-shared.
  bool several_endpoints = false;
  /// A --sess-in session (saved before a deploy) was offered: ticket-key-rotation is testable.
  bool session_from_file = false;
  /// Sandbox: probed port -> port of the linted config's listen socket (findings name the
  /// latter). Empty: ports are taken as they are.
  std::map<int, int> port_map;
  /// Sandbox: directives nginx -t rejected, by location in the linted config, with nginx's
  /// message. A finding at one of them is confirmed by that message.
  std::vector<std::pair<source_location, std::string>> rejected;
  /// Sandbox: nginx -t's [warn] lines. A finding nginx warns about (obsolete-directive at the
  /// same line, listen-protocols-differ on the same port) is confirmed by them.
  std::vector<nginx_warning> warnings;
  /// Sandbox: config ports where the sandbox added `ssl` to the listens (sandbox::ssl_added_ports):
  /// a TLS handshake there does not show the config's own ssl flag.
  std::set<int> ssl_added_ports;
  /// Sessions offered across server names (cross-server-resumption).
  std::vector<session_crossing> crossings;
  /// Sandbox: servers that were not started (label -> why); their findings are not testable.
  std::map<std::string, std::string> untested;
  /// Sandbox --reload: the results are of sessions taken before a reload and offered after it
  /// (runs with session_source "sess_in").
  bool reload = false;
  /// Sandbox: the responses come from the sandbox's own `location / { return 200 }`, not from
  /// the server's add_header, locations or upstreams, so response headers say nothing about them.
  bool sandbox_responses = false;
  /// Sandbox: the TLS upstreams measured through stand-ins (upstream findings' judges match
  /// them by the finding's *_pass fact).
  std::vector<upstream_measurement> upstreams;
  /// Sandbox: the QUIC probe of each QUIC socket it serves, per server name (only
  /// target_result::quic is set; with --reload, made after the reload, carrying what was taken
  /// before it). The QUIC judges read these, never the TCP probes.
  std::vector<probe::target_result> quic;
  /// Sandbox: probed UDP port -> port of the linted config's QUIC listen socket.
  std::map<int, int> quic_port_map;
  /// The catalog the findings' rules come from (their rule::confirmed_by); null: the built-in.
  const engine::rule_catalog* catalog = nullptr;
};

/// The probe question that confirms `f`: its own (finding::question), else its rule's
/// (rule::confirmed_by in `catalog`, null: the built-in catalog), else none.
engine::probe_question question_of(const engine::finding& f,
                                   const engine::rule_catalog* catalog = nullptr);

/// Whether `check` has a judge for `q` (judge(), or probe_findings() for staple_valid): every
/// question but `none`. Rule docs promise what these answer.
bool answers(engine::probe_question q);

/// Judges each finding against the probe results of the targets whose SNI is the finding's
/// server (or all results when none matches by name), by the judge of its probe question
/// (question_of()). The questions of the built-in rules:
/// - tls13-resumption-disabled: confirmed when TLS 1.3 resumption is 0% while tickets arrive;
///   refuted when it resumes (a `note` about stateful resumption is confirmed when it resumes).
/// - ticket-keys-not-shared: confirmed when more than one ticket key name is seen or the rate is
///   partial; not testable on a single endpoint at 100% (the reload/instance hazard is not
///   visible there); refuted with several endpoints all at 100% with one key name.
/// - ticket-key-rotation: with a --sess-in session, confirmed when it no longer resumes, refuted
///   when it does; key file size and mode findings are not testable by a probe.
/// - ocsp-stapling-dead: confirmed when no staple arrived over the retries; refuted when valid
///   staples arrived; not testable when staples arrive but are not valid (that is
///   ocsp-staple-invalid, from probe_findings).
/// - session-cache-per-worker: confirmed when TLS 1.2 session-ID resumption is partial
/// (docs/nginx-facts.md#session-id-cache); 100% or 0% is not testable (one worker may take every
/// connection under light load).
/// - tls13-missing: confirmed when a TLS 1.3 handshake is refused, refuted when one completes.
/// - protocols-ignored-per-sni: with this server's SNI, confirmed when a protocol is accepted
///   or refused against the server's own ssl_protocols (docs/nginx-facts.md#default-server-rules),
///   refuted when every protocol tried follows them.
/// - with --reload (options.reload): ticket-keys-not-shared is confirmed when a session taken
///   before the reload no longer resumes after it.
/// - cross-server-resumption: with a session taken at another name of the socket and offered
///   at the finding's server (options.crossings), confirmed when it resumes there or the
///   handshake fails (the fix's access_denied), refuted when every offer ends in a full handshake.
/// - session-setting-ignored: ssl_session_ticket_key confirmed when tickets at this server's
///   name carry the key names seen at another name of the socket (refuted when they differ);
///   ssl_session_timeout confirmed when the ticket lifetime is not this server's own timeout
///   (refuted when it is); ssl_session_cache confirmed when this server has a cache, the
///   default server none, and TLS 1.2 session IDs never resume under its name.
/// - hsts-missing: confirmed when the response to HEAD / has no Strict-Transport-Security,
///   refuted when it has; not testable in the sandbox (options.sandbox_responses).
/// - listen-protocols-differ: confirmed by nginx -t's "protocol options redefined" on the
///   socket, or (a server written without ssl) by a TLS handshake under its name, unless the
///   sandbox added the ssl flag there (options.ssl_added_ports).
/// - obsolete-directive: confirmed by a [warn] of nginx -t at the same line.
/// - quic-host-key-missing (options.quic): with quic_retry on, confirmed when a NEW_TOKEN token
///   offered after the reload (--reload) or to the other instance (--instances 2) is answered
///   with a Retry, refuted when every offer is taken without one; not testable without
///   quic_retry (nginx asks for no token) or on one instance without --reload.
/// - quic-early-data (options.quic): 0-RTT over QUIC accepted or rejected, against what the
///   finding says the build does.
/// - a finding at a directive nginx -t rejected (options.rejected): confirmed by nginx's message.
/// - a finding of a server the sandbox did not start (options.untested): not testable.
/// - everything else: not testable.
std::vector<checked_finding> judge(const std::vector<engine::finding>& findings,
                                   const std::vector<probe::target_result>& results,
                                   const judge_options& options = {});

/// Findings only a probe can make, not predicted by any lint rule: one of the rule that
/// declares probe_question::staple_valid (`ocsp-staple-invalid`; an error unless
/// `ctx.options().severity_overrides` say otherwise; none when the rule is deselected, or
/// suppressed inline at its location) per probed target whose staples are not all valid
/// (probe::ocsp_status::invalid), confirmed, with the staple's verdict and reason. Located at the
/// `ssl_stapling_file`, else `ssl_stapling`, else `ssl_certificate` of the server that answered: on
/// the target's port (mapped through `port_map`), the server whose server_name matches the SNI,
/// else the socket's default server; the config's first line when no socket of the config has that
/// port. `sandboxed`: the results are of `check --sandbox`, where a certificate that cannot be read
/// here runs as a stand-in while an ssl_stapling_file is served as it is; such a server's staple
/// belongs to another certificate, so it yields no finding.
std::vector<checked_finding> probe_findings(const engine::context& ctx,
                                            const std::vector<probe::target_result>& results,
                                            const std::map<int, int>& port_map = {},
                                            bool sandboxed = false);

}  // namespace ngxtls::check
