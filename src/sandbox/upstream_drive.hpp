#pragma once
// Requests driven through a sandbox nginx to its TLS upstreams: a few keep-alive HTTPS client
// connections to one 127.0.0.1 port, a bounded number of GET requests (or as many as fit in a
// time window, for --load), every read bounded and under a deadline.

#include <string>

namespace ngxtls::sandbox {

/// How many requests, from how many connections, for how long.
struct drive_options {
  int requests = 50;      ///< requests in all (split among the connections); 0: until duration_ms
  int connections = 5;    ///< client connections kept alive, one thread each
  int duration_ms = 0;    ///< > 0: no request starts after this long
  int timeout_ms = 5000;  ///< per connect, handshake, write and response
  /// One request in flight at a time, the connections taking turns: nginx then needs one
  /// upstream connection at a time, and the counts depend on the config, not on timing. False
  /// (--load): every connection has a request in flight, one thread each.
  bool one_at_a_time = true;
};

/// What came back.
struct drive_result {
  int sent = 0;                ///< requests written
  int ok = 0;                  ///< answered 2xx
  int bad_gateway = 0;         ///< answered 502 (nginx could not complete the upstream request)
  int other_status = 0;        ///< any other status
  int failed = 0;              ///< no complete response (connection error, timeout)
  int client_connections = 0;  ///< TLS connections the client opened to nginx
  double elapsed_s = 0;        ///< from the first connection to the last response
  std::string first_error;     ///< the first failure's reason, "" when none
  /// Answered requests (any status) per second of elapsed_s; 0 when none.
  double requests_per_second() const;
};

/// Sends GET `path` (Host: `host`, SNI `sni` when not empty) to 127.0.0.1:`port` over TLS.
/// Never throws for what the server does; throws std::invalid_argument for options out of range
/// (connections < 1 or > 256, requests < 0, or neither requests nor duration_ms given).
drive_result drive_requests(int port, const std::string& sni, const std::string& host,
                            const std::string& path, const drive_options& options);

}  // namespace ngxtls::sandbox
