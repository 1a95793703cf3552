#pragma once
// `check`: each lint finding held against probe evidence - confirmed, refuted or not testable.
// The only place where config facts and live measurements meet (CONVENTIONS, The house).

#include <string>
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
};

/// Every ticket key file the config's socket default servers list.
std::vector<configured_key> configured_keys(const engine::context& ctx);

/// Which configured file sealed the live tickets, per key name seen; or that the endpoint seals
/// with a key the config does not hold. One line each, for the report.
std::vector<std::string> match_key_names(const std::vector<configured_key>& keys,
                                         const std::vector<probe::target_result>& results);

/// Options of the judgement.
struct judge_options {
  /// Several endpoints (or backends via --connect) stand for the instances behind one name:
  /// one key domain at 100% on all of them refutes ticket-keys-not-shared.
  bool several_endpoints = false;
  /// A --sess-in session (saved before a deploy) was offered: ticket-key-rotation is testable.
  bool session_from_file = false;
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
/// - ocsp-stapling-dead: confirmed when no staple arrived over the retries; refuted when one did.
/// - everything else: not testable.
std::vector<checked_finding> judge(const std::vector<engine::finding>& findings,
                                   const std::vector<probe::target_result>& results,
                                   const judge_options& options = {});

}  // namespace ngxtls::check
