#pragma once
// The rule catalog: one function per rule file, each returning that rule. Only rules/registry.cpp
// includes it (a rule file defines its function without it), so adding a rule recompiles the
// registry and not every rule.

#include "engine/engine.hpp"

namespace ngxtls::rules {

engine::rule utf8_bom();
/// empty-config: the main file holds no directive.
engine::rule empty_config();
/// include-dir-unreadable: an include glob skipped a directory it could not read.
engine::rule include_dir_unreadable();
engine::rule tls13_resumption_disabled();
/// tls12-resumption-disabled: TLS 1.2 without TLS 1.3 where no session can resume.
engine::rule tls12_resumption_disabled();
/// certificate-without-tls: a stream or mail server with a certificate and no TLS listen.
engine::rule certificate_without_tls();
engine::rule ticket_keys_not_shared();
engine::rule ticket_key_rotation();
engine::rule ocsp_stapling_dead();
engine::rule ocsp_staple_invalid();
engine::rule unused_suppression();
engine::rule file_not_inspected();
engine::rule session_cache_per_worker();
engine::rule session_setting_ignored();
engine::rule session_timeout_too_long();
engine::rule session_cache_too_small();
engine::rule cross_server_resumption();
engine::rule protocols_ignored_per_sni();
engine::rule listen_protocols_differ();
engine::rule early_data_replay();
engine::rule legacy_protocols();
engine::rule tls13_missing();
engine::rule weak_ciphers();
engine::rule certificate_expiry();
engine::rule weak_key();
engine::rule key_mismatch();
engine::rule private_key_readable();
engine::rule chain_incomplete();
engine::rule certificate_name_mismatch();
engine::rule dhparam_weak();
engine::rule ecdh_curve_unknown();
engine::rule obsolete_directive();
engine::rule unknown_directive();
engine::rule directive_not_allowed();
engine::rule directive_arguments();
/// hsts-missing: a TLS http server with no Strict-Transport-Security header anywhere.
engine::rule hsts_missing();
/// hsts-dropped: a block whose own add_header drops an inherited Strict-Transport-Security.
engine::rule hsts_dropped();
/// no-tls-server: no server in the configuration speaks TLS.
engine::rule no_tls_server();
/// ssl-certificate-missing: a TLS listener whose server has no certificate.
engine::rule ssl_certificate_missing();
/// ssl-certificate-key-missing: a certificate without its key.
engine::rule ssl_certificate_key_missing();
/// duplicate-listen: a listen on an address and port that nginx refuses as a duplicate.
engine::rule duplicate_listen();
/// certificate-variable-unknown: a certificate or key path names a variable nginx does not know.
engine::rule certificate_variable_unknown();
/// certificate-variable: a certificate or key chosen by a variable, which lint cannot read.
engine::rule certificate_variable();
/// tls-return-444: return 444 in a TLS server closes without close_notify: strict clients lose the
/// session.
engine::rule tls_return_444();
/// upstream-tls-per-request: A TLS upstream without connection reuse: a TLS handshake to the
/// backend for every request.
engine::rule upstream_tls_per_request();
/// upstream-session-reuse-off: Upstream TLS sessions not resumed: every new upstream connection is
/// a full handshake.
engine::rule upstream_session_reuse_off();
/// upstream-not-verified: The backend's certificate is not verified (proxy_ssl_verify off) for a
/// backend over a network.
engine::rule upstream_not_verified();
/// upstream-sni-missing: No SNI sent to a backend named by host name (proxy_ssl_server_name off).
engine::rule upstream_sni_missing();
/// upstream-tls-config-error: An upstream TLS setting nginx refuses at start.
engine::rule upstream_tls_config_error();
/// quic-without-tcp-tls: QUIC listener without a TCP TLS listener for the same names.
engine::rule quic_without_tcp_tls();
/// quic-not-advertised: QUIC listener that no Alt-Svc advertises, or Alt-Svc naming a port without
/// QUIC.
engine::rule quic_not_advertised();
/// quic-without-tls13: QUIC server whose ssl_protocols lack TLSv1.3 (nginx refuses it).
engine::rule quic_without_tls13();
/// quic-reuseport: QUIC socket with reuseport doubled, missing with several workers, or without
/// quic_bpf.
engine::rule quic_reuseport();
/// quic-host-key-missing: QUIC tokens sealed with a random key per reload, or keys differing across
/// a fleet.
engine::rule quic_host_key_missing();
/// quic-early-data: ssl_early_data on over QUIC (replayable 0-RTT, or none with the compatibility
/// layer).
engine::rule quic_early_data();

}  // namespace ngxtls::rules
