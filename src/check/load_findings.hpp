#pragma once
// `check --sandbox --load`: what each finding about resumption costs this config in handshakes
// per second, measured with the load phases against the sandbox nginx.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "probe/load.hpp"
#include "probe/target.hpp"

namespace ngxtls::check {

/// True for the rules of the built-in catalog that declare engine::rule::costs_resumption.
bool is_resumption_rule(const std::string& rule);

/// The probed target that speaks for `f` (an index into `probes`; probes.size() when none):
/// one whose SNI selects the finding's server (config::server_name_matches, as nginx picks the
/// server), else one on its ports; `port_map` maps sandbox ports to the configured ones.
std::size_t target_for(const engine::finding& f, const std::vector<probe::target_result>& probes,
                       const std::map<int, int>& port_map);

/// For each finding about resumption in `checked`, loads the sandbox target that speaks for it
/// (target_for), each target at most once, stores the figures in that target's result in
/// `probes` (so the JSON's `probe` record carries them) and adds a note per finding with the
/// capacity at the measured resumption rate and at full resumption. `targets` are the probed
/// targets, in the order of `probes`. `say` gets a line (not yet safe for a terminal) as each
/// load starts; `interrupt_cause` names what stopped an interrupted load ("Ctrl-C", "SIGTERM";
/// empty function: "Ctrl-C").
void load_resumption_findings(const std::vector<checked_finding>& checked,
                              const std::vector<probe::target>& targets,
                              std::vector<probe::target_result>& probes,
                              const std::map<int, int>& port_map, const probe::load_options& o,
                              std::vector<std::string>& notes,
                              const std::function<void(const std::string&)>& say = {},
                              const std::function<std::string()>& interrupt_cause = {});

}  // namespace ngxtls::check
