#pragma once
// `check --sandbox --load`: what each finding about resumption costs this config in handshakes
// per second, measured with the load phases against the sandbox nginx.

#include <map>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "probe/load.hpp"
#include "probe/target.hpp"

namespace ngxtls::cli {

/// True for the rules of the built-in catalog that declare engine::rule::costs_resumption.
bool is_resumption_rule(const std::string& rule);

/// For each finding about resumption in `checked`, loads the sandbox target that speaks for it
/// (its server name, else a target on one of its ports; `port_map` maps sandbox ports to the
/// configured ones), each target at most once, stores the figures in that target's result in
/// `probes` (so the JSON's `probe` record carries them) and adds a note per finding with the
/// capacity at the measured resumption rate and at full resumption. `targets` are the probed
/// targets, in the order of `probes`.
void load_resumption_findings(const std::vector<check::checked_finding>& checked,
                              const std::vector<probe::target>& targets,
                              std::vector<probe::target_result>& probes,
                              const std::map<int, int>& port_map, const probe::load_options& o,
                              std::vector<std::string>& notes);

}  // namespace ngxtls::cli
