#pragma once
// The rule catalog: one function per rule file, each returning that rule.

#include "engine/engine.hpp"

namespace ngxtls::rules {

engine::rule utf8_bom();
engine::rule tls13_resumption_disabled();
engine::rule ticket_keys_not_shared();
engine::rule ticket_key_rotation();
engine::rule ocsp_stapling_dead();

}  // namespace ngxtls::rules
