// What the judges share.

#include <map>
#include <string>
#include <vector>

#include "check/judges/judges.hpp"
#include "config/values.hpp"

namespace ngxtls::check::judges {

const probe::run_result* find_run(const probe::target_result& r, const std::string& protocol,
                                  const std::string& mechanism) {
  for (const auto& run : r.protocols)
    if (probe::to_string(run.protocol) == protocol &&
        probe::to_string(run.mechanism) == mechanism && !run.error && run.supported)
      return &run;
  return nullptr;
}

std::string label(const probe::target_result& r) {
  return r.sni.empty() || r.sni == r.target ? r.target : r.target + " (SNI " + r.sni + ")";
}

std::string frac(int a, int b) {
  return std::to_string(a) + "/" + std::to_string(b);
}

// The port of "ip:port" / "[v6]:port"; 0 when there is none.
int port_of(const std::string& address) {
  return config::port_of_address(address);
}

// Whether SNI `sni` selects a server labelled `label` (its first server_name), as nginx
// matches it; no SNI selects no server by name.
bool name_matches(const std::string& label, const std::string& sni) {
  return !sni.empty() && config::server_name_matches(label, sni);
}

// The config port of a result.
int config_port(const probe::target_result& r, const std::map<int, int>& port_map) {
  int port = port_of(r.address);
  if (auto it = port_map.find(port); it != port_map.end()) port = it->second;
  return port;
}

}  // namespace ngxtls::check::judges
