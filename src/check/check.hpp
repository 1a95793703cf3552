#pragma once
// `check`: each lint finding held against probe evidence - confirmed, refuted or not testable.
// The only place where config facts and live measurements meet (CONVENTIONS, The house).

#include <map>
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
  std::string reason;                 ///< one sentence: why this verdict
  std::vector<probe_fact> evidence;   ///< the probe numbers behind it
};

/// One configured ssl_session_ticket_key file and its 16-byte key name (lowercase hex, as
/// tickets carry it; DESIGN fact 5). The key itself is never read into the report.
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
  /// Sandbox: servers that were not started (label -> why); their findings are not testable.
  std::map<std::string, std::string> untested;
  /// Sandbox --reload: the results are of sessions taken before a reload and offered after it
  /// (runs with session_source "sess_in").
  bool reload = false;
};

/// Judges each finding against the probe results of the targets whose SNI is the finding's
/// server (or all results when none matches by name). Rules:
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
/// - session-cache-per-worker: confirmed when TLS 1.2 session-ID resumption is partial (DESIGN
///   fact 2); 100% or 0% is not testable (one worker may take every connection under light load).
/// - tls13-missing: confirmed when a TLS 1.3 handshake is refused, refuted when one completes.
/// - protocols-ignored-per-sni: with this server's SNI, confirmed when a protocol is accepted
///   or refused against the server's own ssl_protocols (DESIGN fact 6), refuted when every
///   protocol tried follows them.
/// - with --reload (options.reload): ticket-keys-not-shared is confirmed when a session taken
///   before the reload no longer resumes after it.
/// - a finding at a directive nginx -t rejected (options.rejected): confirmed by nginx's message.
/// - a finding of a server the sandbox did not start (options.untested): not testable.
/// - everything else: not testable.
std::vector<checked_finding> judge(const std::vector<engine::finding>& findings,
                                   const std::vector<probe::target_result>& results,
                                   const judge_options& options = {});

/// Findings only a probe can make, not predicted by any lint rule: one `ocsp-staple-invalid`
/// (an error unless `ctx.options().severity_overrides` say otherwise; none when the rule is
/// deselected, or suppressed inline at its location) per probed target whose staples are not all
/// valid (probe::ocsp_status::invalid),
/// confirmed, with the staple's verdict and reason. Located at the `ssl_stapling_file`, else
/// `ssl_stapling`, else `ssl_certificate` of the server that answered: on the target's port
/// (mapped through `port_map`), the server whose server_name matches the SNI, else the socket's
/// default server; the config's first line when no socket of the config has that port.
/// `sandboxed`: the results are of `check --sandbox`, where a certificate that cannot be read
/// here runs as a stand-in while an ssl_stapling_file is served as it is; such a server's staple
/// belongs to another certificate, so it yields no finding.
std::vector<checked_finding> probe_findings(const engine::context& ctx,
                                            const std::vector<probe::target_result>& results,
                                            const std::map<int, int>& port_map = {},
                                            bool sandboxed = false);

}  // namespace ngxtls::check
