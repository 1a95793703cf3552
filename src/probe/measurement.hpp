#pragma once
// A probe measurement module: it folds what finished connections saw into its part of the
// result, may ask the plan for more connections, and renders its part as text, JSON and
// Prometheus metrics. The loop (prober.cpp) owns the connections and the concurrency; the
// modules only fold and render. Adding a measurement is adding one module file and registering
// it in measurements.cpp (docs/architecture.md, "Adding a probe measurement").

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/plan.hpp"

namespace ngxtls::probe {

/// Where a module writes its text: the stream, and how to make text from a peer (names,
/// error texts) safe to print on a terminal.
struct text_sink {
  std::ostream& out;                      ///< the report being written
  std::string (*safe)(std::string_view);  ///< escapes every byte a terminal would act on
};

/// Label name -> value pairs of one sample, in the order written; values as measured (the
/// writer escapes them).
using label_set = std::vector<std::pair<std::string, std::string>>;

/// `l` followed by `name="value"`.
label_set with_label(label_set l, std::string name, std::string value);

/// Prometheus gauge families and their samples, printed family by family in declaration order:
/// the one writer of probe results in the text exposition format 0.0.4 (`probe --format
/// prometheus` and `serve`'s /probe, through report::probe_prometheus). Names and labels follow
/// Prometheus's conventions, which `promtool check metrics` checks: base units (seconds,
/// `_timestamp_seconds`, `_ratio` for 0..1), `_info` for a label set whose value is 1, no
/// `quantile` label outside a summary (`stat="median"` and the like instead).
class metric_set {
 public:
  /// Declares the gauge family `name` with its HELP text; `before`, when it names a declared
  /// family, puts this one just before it. Declaring a name twice keeps the first.
  void declare(std::string name, std::string help, std::string_view before = {});
  /// Adds the sample `name{labels} value`; the family must have been declared.
  void add(std::string_view name, const label_set& labels, double value);
  /// The exposition text: HELP, TYPE and samples of every family that has samples.
  std::string render() const;
  /// Every declared family's name, in output order (with samples or not).
  std::vector<std::string> names() const;

 private:
  struct family {
    std::string name, help;
    std::vector<std::string> lines;
  };
  std::vector<family> families_;
};

/// A sample value as the text format writes it: the shortest form that reads back as `v`,
/// NaN, +Inf, -Inf.
std::string sample_value(double v);

/// `v` escaped for a Prometheus label value (backslash, double quote, line feed).
std::string label_value(const std::string& v);

/// One sample line of the text format, `name{labels} value`, without the line feed (no braces
/// without labels).
std::string sample_line(std::string_view name, const label_set& labels, double value);

/// One measurement. Every hook has a do-nothing default; a module overrides what it needs.
/// Probe hooks run on the loop thread; output hooks only read results.
class measurement {
 public:
  virtual ~measurement() = default;

  /// Short name, e.g. "timings" (used in docs and to place text blocks).
  virtual std::string_view name() const = 0;

  // The probe.

  /// Called once per target when its probe starts (also for a target that then cannot be
  /// resolved): initialises the module's part of `t.res` and returns the module's working
  /// state for `t` (null when it needs none), kept until the target is finished.
  virtual std::unique_ptr<module_state> start_target(target_state& t) const;
  /// Folds the finished connection `c` of `t` (`run` null for role retry). Called while `c`'s
  /// SSL object still holds the handshake (peer chain, staple).
  virtual void on_connection(target_state& t, module_state* state, run_state* run,
                             const connection& c) const;
  /// Extra full handshakes to open with the first one of `run` (0 = none).
  virtual int full_handshakes_at_start(const run_state& run) const;
  /// True while the module wants more full handshakes in `run` after its attempts (the plan
  /// opens up to -c at a time, at most max_extra_full_handshakes per run).
  virtual bool wants_full_handshakes(const target_state& t, const module_state* state,
                                     const run_state& run) const;
  /// True while the module wants another connection after every run finished (the plan opens
  /// one at a time, retry_interval_ms apart, until no module wants one or the deadline).
  virtual bool wants_retry(const target_state& t, const module_state* state) const;
  /// `run` is over: compute its summaries.
  virtual void finish_run(target_state& t, module_state* state, run_state& run) const;
  /// Every connection of `t` is over: compute the target's summaries.
  virtual void finish_target(target_state& t, module_state* state) const;

  // Output.

  /// Verdict lines about one run, appended to `out`.
  virtual void run_verdicts(const run_result& r, std::vector<std::string>& out) const;
  /// Verdict lines about the target, appended after every run's.
  virtual void target_verdicts(const target_result& t, std::vector<std::string>& out) const;
  /// Text detail lines of one run (only for runs with connections).
  virtual void run_text(const run_result& r, text_sink& out) const;
  /// Text detail lines of the target, after the runs'.
  virtual void target_text(const target_result& t, text_sink& out) const;
  /// The module whose target text this module's goes before ("" = in registry order).
  virtual std::string_view target_text_before() const;
  /// Fields of one run's JSON object (docs/probe-json.md).
  virtual void run_json(const run_result& r, nlohmann::json& out) const;
  /// Fields of the target's JSON object.
  virtual void target_json(const target_result& t, nlohmann::json& out) const;
  /// Declares the module's metric families (once, before any sample).
  virtual void declare_metrics(metric_set& m) const;
  /// Samples of one run (only for runs with connections); `labels` names the run (and the
  /// target in a textfile with several).
  virtual void run_metrics(const run_result& r, const label_set& labels, metric_set& m) const;
  /// Samples of the target; `labels` names the target in a textfile with several (else empty).
  virtual void target_metrics(const target_result& t, const label_set& labels, metric_set& m) const;
};

/// At most this many extra full handshakes per run (wants_full_handshakes).
inline constexpr int max_extra_full_handshakes = 24;
/// Time between two retry connections (wants_retry), ms.
inline constexpr int retry_interval_ms = 250;

/// Every registered module, in the order their results are folded and rendered.
const std::vector<const measurement*>& measurements();

}  // namespace ngxtls::probe
