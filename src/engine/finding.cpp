#include "engine/finding.hpp"

namespace ngxtls::engine {

std::string to_string(severity s) {
  switch (s) {
    case severity::error:
      return "error";
    case severity::warning:
      return "warning";
    case severity::note:
      return "note";
  }
  return "?";
}

std::optional<severity> parse_severity(const std::string& s) {
  if (s == "error") return severity::error;
  if (s == "warning") return severity::warning;
  if (s == "note") return severity::note;
  return std::nullopt;
}

std::string to_string(probe_question q) {
  switch (q) {
    case probe_question::none:
      return "none";
    case probe_question::nginx_t_verdict:
      return "nginx_t_verdict";
    case probe_question::nginx_t_warns_at_line:
      return "nginx_t_warns_at_line";
    case probe_question::tls13_resumes:
      return "tls13_resumes";
    case probe_question::tls12_resumes:
      return "tls12_resumes";
    case probe_question::key_domains:
      return "key_domains";
    case probe_question::saved_session_resumes:
      return "saved_session_resumes";
    case probe_question::staple_present:
      return "staple_present";
    case probe_question::staple_valid:
      return "staple_valid";
    case probe_question::tls13_handshake:
      return "tls13_handshake";
    case probe_question::protocols_per_name:
      return "protocols_per_name";
    case probe_question::session_id_resumption:
      return "session_id_resumption";
    case probe_question::session_crosses_names:
      return "session_crosses_names";
    case probe_question::settings_per_name:
      return "settings_per_name";
    case probe_question::handshake_under_name:
      return "handshake_under_name";
    case probe_question::socket_options_warned:
      return "socket_options_warned";
    case probe_question::hsts_header_served:
      return "hsts_header_served";
    case probe_question::early_data_replayed:
      return "early_data_replayed";
    case probe_question::closes_without_close_notify:
      return "closes_without_close_notify";
    case probe_question::upstream_connections:
      return "upstream_connections";
    case probe_question::upstream_resumption:
      return "upstream_resumption";
    case probe_question::upstream_sni:
      return "upstream_sni";
    case probe_question::upstream_verification:
      return "upstream_verification";
    case probe_question::quic_tokens_kept:
      return "quic_tokens_kept";
    case probe_question::quic_early_data:
      return "quic_early_data";
  }
  return "?";
}

std::string describe(probe_question q) {
  switch (q) {
    case probe_question::none:
      return "No probe answers it: `ngxtls check` reports it not testable";
    case probe_question::nginx_t_verdict:
      return "`ngxtls check --sandbox` confirms it when nginx -t rejects the directive it is at";
    case probe_question::nginx_t_warns_at_line:
      return "`ngxtls check --sandbox` confirms it when nginx -t warns at its line";
    case probe_question::tls13_resumes:
      return "`ngxtls check` confirms it when TLS 1.3 tickets arrive and none resumes, and "
             "refutes it when they resume";
    case probe_question::key_domains:
      return "`ngxtls check` confirms it when more than one ticket key name is seen or resumption "
             "is partial (several endpoints, `--sandbox --instances 2` or `--reload`), and "
             "refutes it when several endpoints all resume with one key name";
    case probe_question::saved_session_resumes:
      return "`ngxtls check` confirms it when a session saved before the change (`--sess-in`, or "
             "`--sandbox --baseline`) no longer resumes, and refutes it when it does";
    case probe_question::staple_present:
      return "`ngxtls check` confirms it when no OCSP staple arrives over the retries, and "
             "refutes it when every staple is valid";
    case probe_question::staple_valid:
      return "`ngxtls check` reports it, confirmed, when a staple that arrives is not valid for "
             "the chain that carried it";
    case probe_question::tls13_handshake:
      return "`ngxtls check` confirms it when a TLS 1.3 handshake is refused, and refutes it "
             "when one completes";
    case probe_question::protocols_per_name:
      return "`ngxtls check` confirms it when a protocol is accepted or refused under the "
             "server's name against its own ssl_protocols, and refutes it when every protocol "
             "follows them";
    case probe_question::tls12_resumes:
      return "`ngxtls check` confirms it when no TLS 1.2 session resumes, by ticket or by session "
             "ID, and refutes it when one does";
    case probe_question::session_id_resumption:
      return "`ngxtls check` confirms it when TLS 1.2 session-ID resumption is partial";
    case probe_question::session_crosses_names:
      return "`ngxtls check` confirms it when a session taken under another name of the socket "
             "resumes (or fails the handshake) under this one, and refutes it when it gets a "
             "full handshake";
    case probe_question::settings_per_name:
      return "`ngxtls check` compares the ticket key names, ticket lifetime and session-ID "
             "resumption under this server's name with its own settings";
    case probe_question::handshake_under_name:
      return "`ngxtls check` confirms it when nginx -t warns that the socket's options were "
             "redefined, or a TLS handshake completes under the name of the server written "
             "without ssl";
    case probe_question::socket_options_warned:
      return "`ngxtls check --sandbox` confirms it when nginx -t warns that the socket's "
             "options were redefined";
    case probe_question::hsts_header_served:
      return "`ngxtls check` reads the response to a request under this server's name: no "
             "Strict-Transport-Security header confirms it, the header refutes it";
    case probe_question::early_data_replayed:
      return "`ngxtls check --sandbox` sends `HEAD /` as TLS 1.3 early data and replays the same "
             "ticket and early data, once and from two connections at once: a replay accepted "
             "and answered (not 425 Too Early) confirms that nginx runs replays on the socket, a "
             "replay refused or answered 425 Too Early refutes it; the sandbox answers from its "
             "own `location /`, so which locations pass $ssl_early_data on is read from the "
             "configuration only";
    case probe_question::closes_without_close_notify:
      return "`ngxtls check` reads each response to `HEAD /` to its end and runs the "
             "strict-client attempts (a client that reads to EOF without ignoring a close "
             "without close_notify): connections ended without close_notify and a lower "
             "strict-client rate confirm it, connections ended with close_notify refute it";
    case probe_question::upstream_connections:
      return "`ngxtls check --sandbox` points the upstream at a stand-in TLS server of its own "
             "and sends 50 requests through the location from 5 keep-alive client connections, "
             "one at a time: a new upstream TLS connection for every request confirms it, fewer "
             "connections than requests refute it";
    case probe_question::upstream_resumption:
      return "`ngxtls check --sandbox` points the upstream at a stand-in TLS server of its own "
             "and sends 50 requests through the location: new upstream TLS connections that are "
             "all full handshakes confirm it, a resumed one refutes it; one kept connection "
             "leaves it not testable";
    case probe_question::upstream_sni:
      return "`ngxtls check --sandbox` points the upstream at a stand-in TLS server of its own "
             "that records the server name each handshake carries: handshakes without SNI "
             "confirm it, SNI received refutes it";
    case probe_question::upstream_verification:
      return "`ngxtls check --sandbox` points a copy of the location at a stand-in TLS server "
             "whose certificate is issued for another name (wrong-name.ngxtls.invalid) and sends "
             "50 requests: nginx completing them confirms it, 502 Bad Gateway refutes it";
    case probe_question::quic_tokens_kept:
      return "`ngxtls check --sandbox` runs the QUIC probe on each QUIC socket it serves: with "
             "`--reload` it takes a NEW_TOKEN token and a session before `nginx -s reload` and "
             "offers them 8 times after it, with `--instances 2` it offers one instance's token "
             "8 times, each from a new UDP port, so that both instances get it. With `quic_retry "
             "on`, offers answered with a Retry although they carried the token confirm it, "
             "offers taken without one refute it; without `quic_retry` nginx asks no client for "
             "a token, so a token it cannot read costs nothing visible and the verdict is not "
             "testable; one instance without `--reload` shows no second key (not testable)";
    case probe_question::quic_early_data:
      return "`ngxtls check --sandbox` runs the QUIC probe on each QUIC socket of the server "
             "and sends `HEAD /` as 0-RTT with a ticket that allows it, then replays it: 0-RTT "
             "accepted (and the replay answered) confirms a finding that says the build accepts "
             "0-RTT over QUIC and refutes one that says it has none; 0-RTT rejected, or tickets "
             "that allow none, the other way round";
  }
  return "?";
}

}  // namespace ngxtls::engine
