#pragma once
// `ngxtls check` as one call, as engine::lint is for lint: lint the config, start the sandbox
// or aim at the live endpoints, probe every server name, offer sessions across names, judge
// each finding, price the resumption findings under load, and say what nginx rejected that no
// rule predicted. The command line parses the flags, calls run() and prints the result.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/check.hpp"
#include "engine/pipeline.hpp"
#include "probe/load.hpp"
#include "probe/prober.hpp"

namespace ngxtls::check {

/// What `check --sandbox` ran and changed, for the report.
struct sandbox_summary {
  std::string nginx_binary;    ///< path of the nginx that ran
  std::string nginx_version;   ///< its `nginx -v` line
  int instances = 1;           ///< masters on each port (reuseport)
  int workers = 1;             ///< worker processes per master
  bool pid_namespace = false;  ///< teardown held by a PID namespace (else process groups)
  bool reload = false;         ///< sessions were taken before a reload and offered after it
  /// Per served socket: {configured "address:port", sandbox "127.0.0.1:port"}.
  std::vector<std::pair<std::string, std::string>> sockets;
  /// {server label, what the sandbox changed or could not test}; empty label = the whole sandbox.
  std::vector<std::pair<std::string, std::string>> notes;
  /// {server label, why it was not started}.
  std::vector<std::pair<std::string, std::string>> untested;
};

/// `check --sandbox`'s `nginx -t` of the whole config (sandbox::whole_config_test).
struct nginx_test_summary {
  std::string verdict;    ///< "passed", "rejected", "not_testable" or "skipped"
  source_location where;  ///< rejected / not_testable: the operator's FILE:LINE; else empty
  std::string message;    ///< nginx's [emerg] message; skipped: why the test did not run
  std::string reason;     ///< not_testable: why the message is not the config's verdict
};

/// What `check` is asked to do.
struct check_request {
  /// lint's request for the one config (paths = {config}, command "check"): .ngxtls.toml,
  /// versions, rule selection, --baseline, --strict-files.
  engine::lint_request lint;
  std::vector<std::string> endpoints;  ///< --endpoint: live targets serving the config
  std::vector<std::string> connect;    ///< --connect: backends dialled instead, SNI kept
  bool sandbox = false;                ///< --sandbox: run the config in a throwaway nginx
  std::string nginx;                   ///< --nginx as given ("" = nginx on PATH)
  int instances = 1;                   ///< --instances: masters per port (reuseport)
  bool reload = false;                 ///< --reload: reload between taking and offering
  /// The prober's options (attempts, in flight, timeout, protocols, OCSP, --sess-in); `stop`
  /// is set by run() from `stop` below.
  probe::probe_options probe;
  int max_names = 16;  ///< --max-names: server names probed at most
  bool load = false;   ///< --load (with --sandbox): price the findings about resumption
  int load_duration_s = probe::load_options{}.duration_s;  ///< --duration, per load phase
  /// Ctrl-C for --load (the probes and the load stop at once; the report is partial); null:
  /// nothing stops them.
  const std::atomic<bool>* stop = nullptr;
};

/// What run() borrows from the command line.
struct check_hooks {
  /// The lint pipeline's hooks for the nginx the check runs with (`nginx -V` of the sandbox's
  /// binary, else of nginx on PATH).
  std::function<engine::lint_hooks(const std::string& nginx_binary)> lint_hooks;
  /// Called once the config is linted, before the first probe (the command line starts
  /// catching Ctrl-C there).
  std::function<void()> before_probes;
  /// Progress lines for stderr (a load starting); the text is not yet safe for a terminal.
  std::function<void(const std::string&)> say;
  /// The step the check is at ("linting CONFIG", the sandbox's steps, "probing 3 server names:
  /// 1 done", "judging the findings", ...), each time it changes, for a progress line that is
  /// redrawn in place; the text is not yet safe for a terminal (null: none).
  std::function<void(const std::string&)> step;
  /// What stopped an interrupted run ("Ctrl-C", "SIGTERM"), for the report's notes; null:
  /// "Ctrl-C".
  std::function<std::string()> interrupt_cause;
};

/// Everything one check made: lint's run, each finding with its verdict, the probes, and why
/// the exit code is what it is.
struct check_run {
  engine::lint_run lint;  ///< the lint pipeline's run (its findings: see `checked`)
  /// The lint findings, then those only the probe made (probe_findings), each with its verdict.
  std::vector<checked_finding> checked;
  std::vector<probe::target_result> probes;  ///< every target probed
  /// --sandbox: the QUIC probe of each QUIC socket served, per server name (only `quic` set).
  std::vector<probe::target_result> quic_probes;
  std::vector<std::string> key_names;  ///< which configured key file sealed the live tickets
  std::vector<std::string> notes;      ///< what was not tested and why
  /// What stops nginx and no lint finding predicted (nginx -t rejections).
  std::vector<std::string> errors;
  std::optional<sandbox_summary> sandbox;  ///< set by --sandbox
  /// --sandbox: each TLS upstream measured through the sandbox's stand-ins (with --load, priced).
  std::vector<upstream_measurement> upstreams;
  std::optional<nginx_test_summary> nginx_test;  ///< set when the sandbox ran
  std::string sandbox_failure;  ///< why the sandbox did not run ("" = it ran, or no --sandbox)
  bool unreachable = false;     ///< a target could not be probed, or the sandbox did not run
  bool unpredicted = false;     ///< nginx rejects the config where no lint rule said so
  int unmeasured_phases = 0;    ///< load phases that could not be measured
  bool interrupted = false;     ///< `stop` was set: the report is partial
};

/// Throws usage_error for a request that cannot run (--sandbox with --endpoint, --load without
/// --sandbox, a --duration out of range, ...), before anything is read.
void validate(const check_request& request);

/// The nginx binary `check --sandbox` runs: `given` (--nginx) when it is an executable file,
/// else nginx on PATH or in /usr/sbin. Throws usage_error with the one message for each case.
std::string sandbox_nginx(const std::string& given);

/// Runs the check (validate() first). With --sandbox, enters a loopback-only network namespace
/// before any thread exists (NGXTLS_SANDBOX_NO_NETNS=1 skips it). Throws usage_error,
/// input_error (the config), target_error (a probe that cannot start).
check_run run(const check_request& request, const check_hooks& hooks);

/// Server names worth an SNI probe of a live endpoint: the literal names of ssl servers (no
/// wildcard, regex, "_" or `$`: config::name_selecting of an exact name), each once, at most
/// `max`.
std::vector<std::string> probe_names(const model::model& m, std::size_t max);

}  // namespace ngxtls::check
