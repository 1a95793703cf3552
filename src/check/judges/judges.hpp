#pragma once
// The judges of check::judge, one file per probe question (judges/QUESTION.cpp), and what they
// share. Internal to the check library: check/check.hpp is its interface.

#include <map>
#include <string>
#include <vector>

#include "check/check.hpp"

namespace ngxtls::check::judges {

/// The probe results that speak for one finding (check.cpp, relevant()).
using results = std::vector<const probe::target_result*>;

/// The run of `r` for `protocol` ("TLSv1.3") and `mechanism` ("ticket") that completed and
/// was supported; null when none.
const probe::run_result* find_run(const probe::target_result& r, const std::string& protocol,
                                  const std::string& mechanism);
/// "TARGET (SNI NAME)", or the target alone when no SNI (or the SNI is the target) was sent.
std::string label(const probe::target_result& r);
/// "A/B".
std::string frac(int a, int b);
/// The port of a probed "ip:port" / "[v6]:port"; 0 when there is none.
int port_of(const std::string& address);
/// The config port of a result: its port through `port_map` (sandbox port -> config port).
int config_port(const probe::target_result& r, const std::map<int, int>& port_map);
/// Whether SNI `sni` selects a server labelled `label` (its first server_name), as nginx
/// matches it (config::server_name_matches); no SNI selects no server by name.
bool name_matches(const std::string& label, const std::string& sni);

/// tls13_resumes: TLS 1.3 resumption rate against the tickets that arrived.
void tls13_resumes(checked_finding& c, const results& rs, const judge_options& o);
/// tls12_resumes: TLS 1.2 resumption by ticket and by session ID.
void tls12_resumes(checked_finding& c, const results& rs);
/// early_data_replayed: a replayed 0-RTT first flight accepted and answered, or refused / 425.
void early_data_replayed(checked_finding& c, const results& rs);
/// closes_without_close_notify: how the server ended connections, and the strict client's rate.
void closes_without_close_notify(checked_finding& c, const results& rs);
/// key_domains: ticket key names behind one name, and sessions across a reload.
void key_domains(checked_finding& c, const results& rs, const judge_options& o);
/// saved_session_resumes: a session saved before the change, offered after it.
void saved_session_resumes(checked_finding& c, const results& rs, const judge_options& o);
/// session_id_resumption: TLS 1.2 session IDs resumed partly (a per-worker cache).
void session_id_resumption(checked_finding& c, const results& rs);
/// tls13_handshake: a TLS 1.3 handshake refused or completed.
void tls13_handshake(checked_finding& c, const results& rs);
/// protocols_per_name: the protocols accepted under the name against its own ssl_protocols.
void protocols_per_name(checked_finding& c, const results& rs);
/// staple_present: OCSP staples over the retries.
void staple_present(checked_finding& c, const results& rs);
/// hsts_header_served: Strict-Transport-Security in the response to HEAD /.
void hsts_header_served(checked_finding& c, const results& rs);
/// settings_per_name: the ticket key names, lifetime or session IDs under this name against
/// the setting the default server overrides (finding::overridden).
void settings_per_name(checked_finding& c, const results& rs,
                       const std::vector<probe::target_result>& all, const judge_options& o);
/// session_crosses_names: sessions taken under another name of the socket (options.crossings).
void session_crosses_names(checked_finding& c, const judge_options& o);
/// Whether nginx -t's [warn] lines can answer question `q`.
bool answered_by_warning(engine::probe_question q);
/// nginx_t_warns_at_line, socket_options_warned: nginx -t's own [warn], when it says what the
/// finding says (confirmed; true). False when no warning answers it.
bool nginx_t_warning(checked_finding& c, engine::probe_question q, const judge_options& o);
/// handshake_under_name: a TLS handshake under the name of a server written without ssl.
void handshake_under_name(checked_finding& c, const results& rs, const judge_options& o);

/// quic_tokens_kept: NEW_TOKEN tokens offered across a reload or to the other instances, in
/// `quic` (the QUIC probes of the finding's QUIC sockets).
void quic_tokens_kept(checked_finding& c, const results& quic, const judge_options& o);
/// quic_early_data: 0-RTT over QUIC accepted or rejected, in `quic`, against the finding's word.
void quic_early_data(checked_finding& c, const results& quic);

/// upstream_connections: a new upstream TLS connection per request through the location.
void upstream_connections(checked_finding& c, const judge_options& o);
/// upstream_resumption: whether nginx's new upstream TLS connections were resumed.
void upstream_resumption(checked_finding& c, const judge_options& o);
/// upstream_sni: whether the stand-in upstream received a server name.
void upstream_sni(checked_finding& c, const judge_options& o);
/// upstream_verification: requests completed to a stand-in whose certificate is for another
/// name, or 502.
void upstream_verification(checked_finding& c, const judge_options& o);

}  // namespace ngxtls::check::judges
