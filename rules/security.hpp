#pragma once
// Which rules are about security, and how much: the score code scanning ranks their alerts by.

#include <optional>
#include <string_view>
#include <vector>

namespace ngxtls::rules {

/// For a rule about security (what an attacker gains, not what it costs in speed or uptime):
/// its CVSS-like score, 0.1 to 10, written as SARIF `security-severity` (code scanning: 9.0
/// and up critical, 7.0 high, 4.0 medium, below that low). High for what lets an attacker read
/// or forge traffic (weak ciphers and keys, a private key others can read), medium for
/// downgrades, replays, sessions crossing into servers that check client certificates and
/// missing HSTS, low for what only widens a window (long session lifetimes). nullopt for the
/// other rules.
std::optional<double> security_severity(std::string_view rule_id);

/// The rule ids security_severity() scores, for the test that each is in the catalog.
std::vector<std::string_view> security_rule_ids();

}  // namespace ngxtls::rules
