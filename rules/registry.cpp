// The one list that registers every rule (CONVENTIONS, Rules).
#include "rules/rules.hpp"

namespace ngxtls::engine {

const std::vector<rule>& all_rules() {
  static const std::vector<rule> catalog = {
      rules::utf8_bom(),
      rules::empty_config(),
      rules::no_tls_server(),
      rules::include_dir_unreadable(),
      rules::tls13_resumption_disabled(),
      rules::tls12_resumption_disabled(),
      rules::ticket_keys_not_shared(),
      rules::ticket_key_rotation(),
      rules::ocsp_stapling_dead(),
      rules::ocsp_staple_invalid(),
      rules::unused_suppression(),
      rules::file_not_inspected(),
      rules::session_cache_per_worker(),
      rules::session_setting_ignored(),
      rules::session_timeout_too_long(),
      rules::session_cache_too_small(),
      rules::cross_server_resumption(),
      rules::protocols_ignored_per_sni(),
      rules::listen_protocols_differ(),
      rules::early_data_replay(),
      rules::legacy_protocols(),
      rules::tls13_missing(),
      rules::weak_ciphers(),
      rules::certificate_expiry(),
      rules::weak_key(),
      rules::key_mismatch(),
      rules::private_key_readable(),
      rules::chain_incomplete(),
      rules::certificate_name_mismatch(),
      rules::dhparam_weak(),
      rules::ecdh_curve_unknown(),
      rules::obsolete_directive(),
      rules::unknown_directive(),
      rules::directive_not_allowed(),
      rules::directive_arguments(),
      rules::hsts_missing(),
      rules::hsts_dropped(),
      rules::ssl_certificate_missing(),
      rules::ssl_certificate_key_missing(),
      rules::certificate_without_tls(),
      rules::duplicate_listen(),
      rules::certificate_variable_unknown(),
      rules::certificate_variable(),
      rules::tls_return_444(),
      rules::upstream_tls_per_request(),
      rules::upstream_session_reuse_off(),
      rules::upstream_not_verified(),
      rules::upstream_sni_missing(),
      rules::upstream_tls_config_error(),
      rules::quic_without_tcp_tls(),
      rules::quic_not_advertised(),
      rules::quic_without_tls13(),
      rules::quic_reuseport(),
      rules::quic_host_key_missing(),
      rules::quic_early_data(),
  };
  return catalog;
}

const rule* find_rule(const std::string& id) {
  return find_rule(all_rules(), id);
}

std::vector<finding> run(const model::model& m, const lint_options& opts, unsigned threads) {
  return run(all_rules(), m, opts, threads);
}

run_result run_counted(const model::model& m, const lint_options& opts, unsigned threads) {
  return run_counted(all_rules(), m, opts, threads);
}

}  // namespace ngxtls::engine
