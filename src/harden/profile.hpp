#pragma once
// Hardening profiles: the data of Mozilla's Server Side TLS guidelines 6.0 kept in
// rules/profiles/*.toml (compiled into the binary at build time), read with toml11.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/version.hpp"

namespace ngxtls::harden {

/// A key exchange group (ssl_ecdh_curve entry) and the first OpenSSL version that has it.
struct curve {
  std::string name;            ///< OpenSSL group name, e.g. "X25519MLKEM768"
  model::version min_openssl;  ///< e.g. 3.5.0 for X25519MLKEM768 (ML-KEM arrived in OpenSSL 3.5)
};

/// One place where ngxtls departs from the guideline, with the reason.
struct difference {
  std::string topic;    ///< e.g. "session tickets"
  std::string mozilla;  ///< what the guideline's nginx output does
  std::string ngxtls;   ///< what ngxtls emits instead
  std::string why;      ///< the measured reason (citing a docs/nginx-facts.md anchor)
};

/// One profile, as rules/profiles/NAME.toml holds it.
struct profile {
  std::string name;           ///< "modern" or "intermediate"
  std::string guideline;      ///< "Mozilla Server Side TLS 6.0"
  std::string guideline_url;  ///< the guideline's JSON
  std::string summary;        ///< one line
  std::vector<std::string> oldest_clients;
  std::vector<std::string> protocols;     ///< ssl_protocols, e.g. {"TLSv1.2", "TLSv1.3"}
  std::vector<std::string> ciphers;       ///< TLS 1.2 ciphers (ssl_ciphers); empty for TLS 1.3 only
  std::vector<std::string> ciphersuites;  ///< TLS 1.3 suites
  bool prefer_server_ciphers = false;     ///< ssl_prefer_server_ciphers
  std::vector<curve> curves;              ///< ssl_ecdh_curve, in order
  std::int64_t hsts_max_age_s = 0;        ///< Strict-Transport-Security max-age, seconds
  std::string session_timeout;            ///< ssl_session_timeout value as nginx reads it ("1d")
  std::int64_t session_timeout_s = 0;     ///< the same, seconds (ticket lifetime hint)
  std::int64_t expected_sessions = 0;     ///< sessions the default cache is sized for
  bool ocsp_staple = false;               ///< the guideline asks for OCSP stapling
  std::vector<difference> differences;    ///< where ngxtls departs from the guideline
};

/// Names of the compiled-in profiles (the file names of rules/profiles/*.toml), sorted.
std::vector<std::string> profile_names();

/// The compiled-in profile `name`. Throws ngxtls::usage_error for an unknown name (listing the
/// known ones) and ngxtls::input_error when the embedded TOML is malformed (a build defect).
profile load_profile(const std::string& name);

/// The compiled-in TOML text of profile `name` (byte for byte the rules/profiles/NAME.toml the
/// binary was built from). Throws ngxtls::usage_error for an unknown name.
std::string_view profile_text(const std::string& name);

/// Parses profile TOML text; `source` names it in errors ("rules/profiles/modern.toml").
/// Throws ngxtls::input_error (with line and column) for a syntax error, a missing key or a
/// value of the wrong type.
profile parse_profile(std::string_view toml_text, const std::string& source);

}  // namespace ngxtls::harden
