#pragma once
// What the sandbox does with each directive, in one table: in the TLS servers it runs (the
// generated config) and in the whole-config `nginx -t` (the operator's files mirrored), with the
// reason its notes give the user.

#include <string_view>

namespace ngxtls::sandbox {

/// What a TLS server the sandbox runs does with a directive of the linted server.
enum class in_server {
  not_copied,   ///< not a TLS setting: the generated server writes its own listen, names, location
  kept,         ///< copied as written
  left_out,     ///< left out, noted with the reason
  certificate,  ///< paired with its key by position, or a stand-in pair (stand_in_certificates)
  file_copied,  ///< its file copied for nginx; left out, noted with the reason, when unreadable
  ticket_key,   ///< its file copied, else a stand-in key file of the same size
  trusted_ca,   ///< the stand-in issuer when certificates are stood in; else its file copied,
                ///< else left out
  client_ca,    ///< as trusted_ca, but an unreadable file gets a CA of the sandbox's own (left
                ///< out, ssl_verify_client would make nginx refuse the server)
  resolver,     ///< without a network namespace, left out when off-host; in one, left out when
                ///< given by host name (nginx would resolve it while it loads the config)
  responder,    ///< left out when off-host without a network namespace
};

/// What the whole-config test does with a directive of the operator's files.
enum class in_whole_config {
  kept,              ///< as written
  left_out,          ///< left out, noted with the reason when it has one
  code_left_out,     ///< code the sandbox does not run (its module is not loaded): left out
  module_left_out,   ///< load_module: left out; an unknown directive may then be the module's
  include_mirrored,  ///< pointed at the mirrored files it includes
  hosts_loopback,    ///< host names nginx resolves while it loads the config stand as 127.0.0.1
  log_in_run,        ///< a log file: pointed into the run directory
  path_in_run,       ///< a path nginx writes (temp, cache): pointed into the run directory
  unix_socket,       ///< listen unix:...: the socket file goes into the run directory
  file_translated,   ///< a file nginx reads: the sandbox's copy or stand-in, else as configured
  server_block,      ///< a server without a certificate gets the sandbox's stand-in
  http_block,        ///< temp paths and access_log the http block does not set go into the run
};

/// One row of the table: the directive (or a pattern of names) and what happens to it.
struct directive_policy {
  enum class match { name, prefix, suffix, contains };
  std::string_view pattern;
  match how = match::name;
  in_server server = in_server::not_copied;
  in_whole_config whole = in_whole_config::kept;
  /// nginx keeps every occurrence in one server (an array); else only the last counts.
  bool repeatable = false;
  std::string_view server_reason;  ///< why it is left out of the TLS servers (or stood in)
  std::string_view whole_reason;   ///< why the whole-config test leaves it out
};

/// The TLS servers' policy for `name`: its own row's; a name without one is copied into no
/// server, and one named ssl_* (another module's, or code: ssl_*_by_lua*) is left out with the
/// reason of k_other_ssl_directive.
const directive_policy& server_policy(std::string_view name);
/// The whole-config test's policy for `name`: the first row that matches it (names first, then
/// the patterns in table order); kept when none does.
const directive_policy& whole_config_policy(std::string_view name);

}  // namespace ngxtls::sandbox
