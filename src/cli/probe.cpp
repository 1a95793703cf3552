// `ngxtls probe TARGET...`: measure session resumption, ticket keys, staples and handshake
// times on live endpoints. Exit code 3 when a target cannot be probed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "probe/load.hpp"
#include "probe/prober.hpp"
#include "report/format.hpp"
#include "report/terminal_text.hpp"

namespace ngxtls::cli {
namespace {

struct probe_args {
  std::vector<std::string> targets;
  std::optional<std::string> sni, connect, targets_file, sess_in, sess_out;
  // The prober's defaults (probe_options), the only place they are set.
  int attempts = probe::probe_options{}.attempts, per_target = probe::probe_options{}.per_target,
      parallel = probe::probe_options{}.parallel, timeout_ms = probe::probe_options{}.timeout_ms,
      total_timeout_ms = probe::probe_options{}.total_timeout_ms,
      keepalive_wait_ms = probe::probe_options{}.keepalive_wait_ms;
  bool tls12 = false, tls13 = false, no_http = false, fresh = false, no_ocsp = false,
       early_data = false, no_strict_client = false, quic = false, no_quic = false;
  std::string format = "text";
  std::string color = "auto";  ///< --color
  // --load and its settings (probe::load_options holds the defaults).
  bool load = false, request = false, concurrency_given = false;
  int duration_s = probe::load_options{}.duration_s;
  std::optional<double> max_rate;
  /// --fail-under: exit 1 when a measured run's resumption rate is below this (0..1).
  std::optional<double> fail_under;
};

// The runs of `results` whose resumption rate is below `threshold`, as one line each for
// stderr. A run counts when it was measured: the protocol was accepted, a session was offered
// and at least one attempt completed (a refused protocol or a target that could not be probed
// has its own message and exit code).
std::vector<std::string> runs_below(const std::vector<probe::target_result>& results,
                                    double threshold) {
  std::vector<std::string> out;
  for (const auto& t : results) {
    if (t.error) continue;
    for (const auto& r : t.protocols) {
      if (!r.supported || r.error || r.attempts == 0) continue;
      if (r.session_offered && r.rate >= threshold) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%d of %d resumed (%.0f%%), below --fail-under %g", r.resumed,
                    r.attempts, r.rate * 100, threshold);
      out.push_back(
          t.target + " " + probe::run_label(r) + ": " +
          (r.session_offered ? std::string(buf) : "no session to resume, below --fail-under"));
    }
  }
  return out;
}

std::string rate_text(const std::optional<double>& r) {
  if (!r) return "no rate cap";
  char buf[64];
  // %g: a rate below 1/s is not "at most 0".
  std::snprintf(buf, sizeof buf, "at most %g connections/s", *r);
  return buf;
}

// Runs the load phases against the one probed target (after its ordinary probe, or what Ctrl-C
// left of it) and stores them in its result.
void run_load_phase(const probe_args& a, const probe::target& t, probe::target_result& r) {
  probe::load_options o;
  o.duration_s = a.duration_s;
  if (a.concurrency_given) o.concurrency = a.per_target;
  o.max_rate = a.max_rate;
  o.request = a.request;
  o.timeout_ms = a.timeout_ms;
  o.stop = &interrupt_guard::flag();
  o.on_plan = [&](const std::vector<std::string>& phases) {
    std::cerr << "ngxtls: load on " << report::terminal_safe(r.target) << " ("
              << report::terminal_safe(r.address) << "): " << phases.size() << " phases of "
              << o.duration_s << " s (";
    for (std::size_t i = 0; i < phases.size(); ++i) std::cerr << (i ? "; " : "") << phases[i];
    std::cerr << "), " << o.concurrency << " connections in flight, " << rate_text(o.max_rate)
              << (o.request ? ", one HEAD / per connection" : "") << "; Ctrl-C or SIGTERM stops\n";
  };
  // On a terminal, the running phase's countdown and rate under its line, redrawn at most 4
  // times a second and erased before the next line and at the end.
  status_line live;
  o.on_phase = [&live](const std::string& name) {
    live.clear();
    std::cerr << "ngxtls: load: " << name << "\n";
  };
  if (live.on())
    o.on_tick = [&live](const probe::load_tick& t) {
      live.show("load: " + probe::tick_text(t), probe::load_tick_ms - 50);
    };
  r.load = probe::run_load(t, r, o);
}

// A one-line progress bar on stderr, redrawn at most every 100 ms (and when all planned
// connections are done); only when stderr is a TTY.
class progress_bar {
 public:
  void update(const probe::progress& p) {
    const int width = 30;
    const int filled = p.planned > 0 ? std::min(width, p.done * width / p.planned) : 0;
    line_.show("[" + std::string(filled, '=') + std::string(width - filled, ' ') + "] " +
                   std::to_string(p.done) + "/" + std::to_string(p.planned) + " connections, " +
                   std::to_string(p.targets_done) + "/" + std::to_string(p.targets) + " targets",
               p.done < p.planned ? 100 : 0);
  }

 private:
  status_line line_;
};

// One target a line: 16 MiB is some 300,000 names.
constexpr off_t max_targets_file_bytes = 16 << 20;

// The targets to probe: the command line's, then --targets FILE's (one a line, # comments),
// each once in the order first given.
std::vector<std::string> target_texts(const probe_args& a) {
  std::vector<std::string> texts = a.targets;
  if (a.targets_file) {
    // A FIFO or device named by mistake must neither block nor grow memory without end.
    struct stat st {};
    if (::stat(a.targets_file->c_str(), &st) != 0)
      throw input_error({*a.targets_file, 0, 0},
                        std::string("cannot read targets file: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      throw input_error({*a.targets_file, 0, 0}, "cannot read targets file: not a regular file");
    if (st.st_size > max_targets_file_bytes)
      throw input_error({*a.targets_file, 0, 0}, "targets file is larger than the limit of " +
                                                     std::to_string(max_targets_file_bytes) +
                                                     " bytes");
    std::ifstream f(*a.targets_file);
    if (!f) throw input_error({*a.targets_file, 0, 0}, "cannot read targets file");
    std::string line;
    while (std::getline(f, line)) {
      auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      auto e = line.find_last_not_of(" \t\r");
      texts.push_back(line.substr(b, e - b + 1));
    }
  }
  if (texts.empty()) throw usage_error("probe: no target given (TARGET... or --targets FILE)");
  // A target named twice (on the command line, in --targets, or both) is probed once: every
  // output labels results by the text given, and Prometheus rejects two series with the same
  // labels. The first occurrence keeps its place.
  {
    std::set<std::string> seen;
    std::vector<std::string> unique;
    std::size_t dropped = 0;
    for (auto& t : texts) {
      if (seen.insert(t).second)
        unique.push_back(std::move(t));
      else
        ++dropped;
    }
    if (dropped > 0)
      std::cerr << "ngxtls: " << dropped
                << (dropped == 1 ? " duplicate target" : " duplicate targets")
                << " ignored: each target is probed once\n";
    texts = std::move(unique);
  }
  return texts;
}

// The bounds of the command line's counts and the flags that only make sense together.
void check_probe_args(const probe_args& a, std::size_t target_count) {
  if (a.sess_out && target_count != 1)
    throw usage_error("probe: --sess-out needs exactly one target");
  if (a.attempts < 0 || a.per_target < 1 || a.parallel < 1 || a.timeout_ms < 1 ||
      a.total_timeout_ms < 1)
    throw usage_error("probe: -n must be >= 0, -c, --parallel, --timeout and --total-timeout >= 1");
  // Bounds that keep the plan's counters and the descriptors in flight sane.
  if (a.attempts > 1000000 || a.per_target > 1024 || a.parallel > 65536)
    throw usage_error("probe: -n must be <= 1000000, -c <= 1024, --parallel <= 65536");
  bool load_settings = a.request || a.max_rate || a.duration_s != probe::load_options{}.duration_s;
  if (load_settings && !a.load)
    throw usage_error("probe: --duration, --max-rate and --request need --load");
  if (a.load) {
    if (target_count != 1) throw usage_error("probe: --load needs exactly one target");
    if (a.duration_s < 1 || a.duration_s > probe::max_load_duration_s)
      throw usage_error("probe: --duration must be 1.." +
                        std::to_string(probe::max_load_duration_s) + " s");
    if (a.max_rate && !(*a.max_rate > 0 && *a.max_rate <= 1e6))
      throw usage_error("probe: --max-rate must be > 0 and <= 1000000 connections/s");
  }
}

// The probe's options from the command line (without progress and interruption, which the
// command owns).
probe::probe_options options_of(const probe_args& a) {
  probe::probe_options o;
  o.attempts = a.attempts;
  o.per_target = a.per_target;
  o.parallel = a.parallel;
  o.timeout_ms = a.timeout_ms;
  o.total_timeout_ms = a.total_timeout_ms;
  if (a.tls12 || a.tls13) {
    o.tls12 = a.tls12;
    o.tls13 = a.tls13;
  }
  o.http = !a.no_http;
  o.fresh_tickets = a.fresh;
  o.early_data = a.early_data;
  o.keepalive_wait_ms = a.keepalive_wait_ms;
  o.strict_client = !a.no_strict_client;
  o.quic = a.quic ? probe::quic_mode::always
                  : (a.no_quic ? probe::quic_mode::never : probe::quic_mode::alt_svc);
  o.ocsp = !a.no_ocsp;
  o.sess_in = a.sess_in;
  o.sess_out = a.sess_out;
  return o;
}

int run_probe_command(const probe_args& a) {
  std::vector<std::string> texts = target_texts(a);
  check_probe_args(a, texts.size());
  std::vector<probe::target> targets;
  for (const auto& t : texts) targets.push_back(probe::parse_target(t, a.sni, a.connect));

  probe::probe_options o = options_of(a);
  std::unique_ptr<progress_bar> bar;
  if (::isatty(STDERR_FILENO)) {
    bar = std::make_unique<progress_bar>();
    o.on_progress = [&bar](const probe::progress& p) { bar->update(p); };
  }
  // With --load, Ctrl-C stops the probe before the load too, and the partial report is written.
  std::optional<interrupt_guard> guard;
  if (a.load) {
    guard.emplace();
    o.stop = &interrupt_guard::flag();
  }
  auto results = probe::run_probe(targets, o);
  bar.reset();
  bool interrupted = false;
  int unmeasured = 0;
  if (a.load && !results.empty()) {
    auto& r = results.front();
    interrupted = interrupt_guard::flag().load();
    // A target the probe could not reach gets no load; one Ctrl-C cut short gets its planned
    // phases, each marked not run.
    if (!r.error || interrupted) run_load_phase(a, targets.front(), r);
    if (r.load) {
      interrupted = interrupted || r.load->interrupted;
      for (const auto& p : r.load->phases) unmeasured += probe::unmeasured(p) ? 1 : 0;
    }
  }

  report::output_context ctx;
  ctx.color = use_color(a.color, STDOUT_FILENO, false);
  const auto& format = report::format_for(report::command::probe, a.format);
  write_output("", [&](std::ostream& os) { format.probe(results, ctx, os); });

  int rc = exit_ok;
  for (const auto& r : results) {
    if (r.error) {
      // The target comes from the command line or a --targets file, the error may quote it.
      say_on_stderr("error: cannot probe " + r.target + ": " + *r.error);
      rc = exit_target;
    }
    // --quic asked for QUIC: no QUIC handshake is the target failing as an unreachable one does
    // (a QUIC probe an Alt-Svc header started is a finding of the report, not a failure).
    if (r.quic && r.quic->trigger == probe::quic_trigger::asked && r.quic->error) {
      say_on_stderr("error: cannot probe " + r.target + " over QUIC" +
                    (r.quic->address.empty() ? "" : " (UDP " + r.quic->address + ")") + ": " +
                    *r.quic->error);
      rc = exit_target;
    }
  }
  if (a.sess_out && !results.empty() && results.front().error)
    say_on_stderr("error: no session written to " + *a.sess_out);
  if (interrupted) {
    std::cerr << "ngxtls: load interrupted (" << interrupt_guard::cause()
              << "): the report is partial\n";
    return interrupt_guard::exit_code();
  }
  if (a.fail_under && rc == exit_ok) {
    const auto below = runs_below(results, *a.fail_under);
    for (const auto& line : below) say_on_stderr(line);
    if (!below.empty()) rc = exit_findings;
  }
  if (unmeasured > 0) {
    std::cerr << "ngxtls: error: " << unmeasured
              << (unmeasured == 1 ? " load phase" : " load phases")
              << " could not be measured (see the report)\n";
    rc = exit_target;
  }
  return rc;
}

}  // namespace

void register_probe(CLI::App& app, std::function<int()>& run) {
  auto args = std::make_shared<probe_args>();
  const probe::probe_options defaults;
  auto* sub = app.add_subcommand(
      "probe", "measure TLS session resumption, ticket keys and OCSP staples of live endpoints");
  sub->add_option("TARGET", args->targets, "host, host:port, [v6]:port or https://host[:port]/");
  sub->add_option("--sni", args->sni, "server name to send (default: the target's host)");
  sub->add_option("--connect", args->connect,
                  "dial this address (addr[:port]) but send the target's SNI");
  sub->add_option(
      "-n", args->attempts,
      "resumption attempts per protocol run (default " + std::to_string(defaults.attempts) + ")");
  sub->add_option("-c", args->per_target,
                  "connections in flight per target (default " +
                      std::to_string(defaults.per_target) + "; with --load " +
                      std::to_string(probe::load_options{}.concurrency) + ")")
      ->each([args](const std::string&) { args->concurrency_given = true; });
  sub->add_option("--parallel", args->parallel,
                  "targets probed at once (default " + std::to_string(defaults.parallel) + ")");
  sub->add_flag("--tls1.2", args->tls12, "probe TLS 1.2 (tickets and session IDs)");
  sub->add_flag("--tls1.3", args->tls13, "probe TLS 1.3");
  sub->add_option(
      "--timeout", args->timeout_ms,
      "per connection timeout, ms (default " + std::to_string(defaults.timeout_ms) + ")");
  sub->add_option(
      "--total-timeout", args->total_timeout_ms,
      "per target deadline, ms (default " + std::to_string(defaults.total_timeout_ms) + ")");
  sub->add_option("--sess-in", args->sess_in,
                  "offer the session in this PEM file (openssl s_client format)");
  sub->add_option("--sess-out", args->sess_out,
                  "save the first session to this PEM file (mode 0600)");
  sub->add_flag("--no-http", args->no_http, "do not send HEAD / after the handshake");
  sub->add_flag("--fresh-tickets", args->fresh,
                "offer the newest ticket on every attempt (as browsers do)");
  sub->add_flag("--no-ocsp", args->no_ocsp, "do not ask for OCSP staples");
  sub->add_flag("--early-data", args->early_data,
                "TLS 1.3: send the request (HEAD /, no body) as 0-RTT early data where tickets "
                "allow it, then replay it with the same ticket, once and from two connections "
                "at once: a write to the server, so only when this is given (check --sandbox "
                "does it against its own nginx)");
  auto* quic = sub->add_flag("--quic", args->quic,
                             "probe QUIC (HTTP/3) too: on the port the TCP response's Alt-Svc "
                             "advertises for h3, else on the target's port (UDP); without this, "
                             "QUIC is probed when Alt-Svc advertises h3 on the same host");
  sub->add_flag("--no-quic", args->no_quic, "do not probe QUIC, even when Alt-Svc advertises h3")
      ->excludes(quic);
  sub->add_option("--keepalive-wait", args->keepalive_wait_ms,
                  "ms: one more connection sends a keep-alive HEAD / and waits this long for the "
                  "server to close it (e.g. past nginx's keepalive_timeout), recording whether "
                  "close_notify came first (default 0: none)")
      ->check(CLI::Range(0, 600000));
  sub->add_flag("--no-strict-client", args->no_strict_client,
                "skip the strict-client run (attempts as a client that reads to EOF without "
                "ignoring a close without close_notify)");
  sub->add_flag("--load", args->load,
                "after the probe, measure handshake capacity with fresh connections (a load "
                "on the server: one target only)");
  sub->add_option("--duration", args->duration_s,
                  "--load: seconds per phase (default " +
                      std::to_string(probe::load_options{}.duration_s) + ", at most " +
                      std::to_string(probe::max_load_duration_s) + ")");
  sub->add_option("--max-rate", args->max_rate, "--load: at most this many connections/s");
  sub->add_flag("--request", args->request, "--load: send HEAD / on every connection");
  sub->add_option("--targets", args->targets_file, "file with one target a line");
  sub->add_option("--fail-under", args->fail_under,
                  "exit 1 when a run's resumption rate (0 to 1) is below RATE (a deploy gate)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--format", args->format, "text, json or prometheus")
      ->check(CLI::IsMember(report::format_names(report::command::probe)));
  add_color_option(sub, args->color);
  sub->callback([&run, args] { run = [args] { return run_probe_command(*args); }; });
}

}  // namespace ngxtls::cli
