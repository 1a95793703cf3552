#pragma once
// Helpers of the upstream TLS rules (nginx as a TLS client, model/upstream.hpp): how a finding
// names the location and the backend, the evidence of an upstream setting, and the client
// certificates of the upstreams for the certificate rules.

#include <string>
#include <vector>

#include "rules/common.hpp"

namespace ngxtls::rules {

/// "location /api/ of api.example.com" (http; a named location as written, `if` by its
/// enclosing location) or "stream server at FILE:LINE" / "stream server NAME".
std::string upstream_place(const engine::context& ctx, const model::tls_upstream& u);

/// The backend as a message names it: "upstream `pool` (10.0.0.5:443, ...)", "10.0.0.1:8443",
/// "backend.example.net".
std::string backend_label(const engine::context& ctx, const model::tls_upstream& u);

/// Evidence of the upstream setting `suffix` ("ssl_verify"): its full name, value, the level
/// that set it ("location", "server", "http", "stream", "default") and where.
engine::evidence upstream_evidence(const engine::context& ctx, const model::tls_upstream& u,
                                   std::string_view suffix);

/// The pass directive and target evidence common to every upstream finding.
void add_target_evidence(const engine::context& ctx, const model::tls_upstream& u,
                         engine::finding& f);

/// The client certificates the upstreams present (`proxy_ssl_certificate` and the grpc / uwsgi
/// ones) with static paths, each directive once, paired with the key of the same level; and the
/// place that uses each (for the finding's server). Computed once per run.
struct upstream_certificate {
  certificate_ref ref;
  std::string directive;  ///< "proxy_ssl_certificate", ...
  std::string key_directive;
  std::string place;           ///< upstream_place of the first upstream that uses it
  bool password_file = false;  ///< a proxy_ssl_password_file is in effect there
};
const std::vector<upstream_certificate>& upstream_certificates(const engine::context& ctx);

}  // namespace ngxtls::rules
