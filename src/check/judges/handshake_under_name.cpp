// The judge of probe question handshake_under_name.

#include <string>
#include <vector>

#include "check/judges/judges.hpp"

namespace ngxtls::check::judges {

// A server written without `ssl` on a TLS socket: a TLS handshake under its name shows the
// socket's ssl applies to it too.
void handshake_under_name(checked_finding& c, const std::vector<const probe::target_result*>& rs,
                          const judge_options& o) {
  if (c.finding.server.empty()) {
    c.reason = "nginx -t did not warn, and the finding names no server to probe";
    return;
  }
  for (int p : c.finding.ports)
    if (o.ssl_added_ports.count(p)) {
      c.reason =
          "nginx -t did not warn, and the sandbox added ssl to this socket's listens (no started "
          "server wrote it)";
      return;
    }
  for (const auto* r : rs)
    for (const auto& run : r->protocols)
      if (!run.error && run.supported && run.connections > 0 &&
          name_matches(c.finding.server, r->sni)) {
        c.result = verdict::confirmed;
        c.reason = "a " + run.negotiated_protocol +
                   " handshake under this name completed: the socket's ssl applies to this server";
        c.evidence.push_back({"TLS handshake", run.negotiated_protocol, label(*r)});
        return;
      }
  c.reason = "no TLS handshake under this name completed";
}

}  // namespace ngxtls::check::judges
