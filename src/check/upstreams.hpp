#pragma once
// `check --sandbox` through nginx's TLS upstreams: requests driven through each location that
// proxies to TLS, counted by the sandbox's stand-in upstreams (sandbox/upstream_standin.hpp),
// and with --load the requests per second as configured and with the keepalive fix.

#include <atomic>
#include <vector>

#include "check/check.hpp"
#include "model/model.hpp"
#include "sandbox/sandbox.hpp"

namespace ngxtls::check {

/// --load: client connections with a request in flight, per variant.
inline constexpr int k_upstream_load_connections = 8;

/// Drives k_upstream_requests requests through every variant of every upstream `sb` runs, one
/// variant after another, and reads the stand-ins' counts.
std::vector<upstream_measurement> measure_upstreams(const sandbox::sandbox& sb,
                                                    const model::model& m);

/// --load: for each measured upstream, `connections` client connections each with a request in
/// flight for `duration_ms` through the as-configured route, then as long through the fixed one.
/// Stops early when `stop` is set.
void price_upstreams(const sandbox::sandbox& sb, std::vector<upstream_measurement>& measured,
                     int duration_ms, int connections, const std::atomic<bool>* stop);

}  // namespace ngxtls::check
