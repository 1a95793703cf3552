// The one list that registers every rule (CONVENTIONS, Rules).
#include "rules/rules.hpp"

namespace ngxtls::engine {

const std::vector<rule>& all_rules() {
  static const std::vector<rule> catalog = {
      rules::utf8_bom(),
      rules::tls13_resumption_disabled(),
      rules::ticket_keys_not_shared(),
      rules::ticket_key_rotation(),
      rules::ocsp_stapling_dead(),
  };
  return catalog;
}

}  // namespace ngxtls::engine
