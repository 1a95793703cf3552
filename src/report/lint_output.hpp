#pragma once
// Lint reports: human text and the JSON record documented in docs/lint-json.md.

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "engine/finding.hpp"
#include "engine/pipeline.hpp"
#include "model/version.hpp"

namespace ngxtls::report {

/// A finding present, or at another severity, on one nginx version but not the other.
using version_difference = engine::version_difference;
/// The older measured version the findings were also computed for, and what differs there.
using version_notice = engine::version_notice;

/// How one input was read, when not as a main nginx.conf: the block its top level was read
/// inside of, and, for a directory, the files it did not read.
struct input_reading {
  std::string input;    ///< as given
  std::string context;  ///< "http", "stream", "server", "location", "directory"
  std::string how;      ///< config::describe(): "inside http { }, as nginx reads ..."
  std::string why;      ///< what in the input decided it
  std::vector<std::pair<std::string, std::string>> skipped;  ///< directory: path, reason
};

/// Everything a lint run reports.
struct lint_report {
  std::vector<std::string> inputs;            ///< configs linted, as given
  model::assumed_versions assumed;            ///< versions the defaults were resolved for, and why
  std::vector<engine::finding> findings;      ///< sorted by file, line, column, rule
  std::optional<std::string> project_config;  ///< the .ngxtls.toml read, if any
  /// Findings not kept, per rule id: past engine::max_findings_per_rule or
  /// engine::max_findings (engine::run_counted). Reported when not empty.
  std::map<std::string, std::size_t> dropped_findings;
  /// Set when the nginx version is only assumed (the newest known): the text report's first
  /// line says so, names the findings that would differ on `older`, and how to pin it.
  std::optional<version_notice> notice;
  /// Inputs not read as a main nginx.conf (site files, snippets, directories).
  std::vector<input_reading> readings;
  /// Servers that speak TLS (model::offers_tls) and files read, over every input: a run with
  /// none says "nothing TLS was checked" on its summary line.
  std::size_t tls_servers = 0;
  std::size_t files_read = 0;
  /// TLS connections nginx opens to its backends (model::tls_upstreams): with no TLS server,
  /// those are what was checked.
  std::size_t tls_upstreams = 0;
  /// The directory paths are made relative to for code scanning (SARIF's %SRCROOT%, GitHub
  /// annotations, fingerprints): --project-root, else the git work tree holding the working
  /// directory, else the working directory. Empty: every path absolute.
  std::string project_root;
  /// report::fingerprints() of `findings`, one per place; empty when not worked out (then
  /// SARIF has no partialFingerprints and JSON no `fingerprints`).
  std::vector<std::vector<std::string>> fingerprints;
  /// --baseline-report: the previous report named, and how many places it suppressed.
  std::optional<std::string> baseline_report;
  std::size_t baseline_suppressed = 0;
};

/// Merges identical findings, as a report shows them: findings of one rule with the same
/// severity, message, fix and evidence values (their locations aside) are one cause repeated
/// in many servers. The first (in `findings`' order) is kept, with every other's location
/// (and its own also_at) appended to its also_at in order; order is otherwise kept.
void merge_identical(std::vector<engine::finding>& findings);

/// Every line of `text` (a fix snippet) with `pad` before it, each ending in '\n'.
std::string indent_lines(const std::string& text, const std::string& pad);

/// How many places of a finding the text report names before "and N more".
inline constexpr std::size_t text_places_shown = 3;
/// Adds to `r` how input `path` was read (the block a site file, snippet or folder was read in
/// and why; the files a directory input skipped) when it was not read as a main nginx.conf, and
/// counts its files and TLS servers, for the report's header and summary line.
void note_reading(lint_report& r, const std::string& path, const config::config& cfg,
                  const model::model& m);

/// r.readings as text lines ("INPUT: read inside stream { }, ... (why)", the skipped files), as
/// lint's and check's text reports begin.
std::string readings_text(const lint_report& r);

/// r.readings as the JSON array of `input_contexts` (docs/lint-json.md).
nlohmann::json readings_json(const lint_report& r);

/// "no TLS server in N files: nothing TLS was checked" when r found none, else "".
std::string no_tls_text(const lint_report& r);

/// The sum of r.dropped_findings.
std::size_t dropped_total(const lint_report& r);

/// The one-line notice (no newline): the assumed version, the findings that differ on the
/// older version (at most 5 named, then a count), and how to pin the version.
std::string notice_line(const lint_report& r);

/// Text for a terminal: one block per finding (location, severity, rule, message, evidence,
/// fix; a finding that holds in several places names the first text_places_shown more), then
/// a summary line. `color` adds ANSI colors (only on a TTY).
std::string render_text(const lint_report& r, bool color);
/// render_text() written to `out` a finding at a time (a fleet can have 100,000s of findings).
void write_text(const lint_report& r, bool color, std::ostream& out);

/// The JSON record (docs/lint-json.md): top-level `findings` (each `rule`, `severity`,
/// `message`, `location` {file, line, column}, `include_chain` [{file, line}], `evidence`
/// [{name, value, origin, location?}], `fix`, `server`, and for a finding that holds in
/// several places `count` and `locations`, every place with the first), `assumed` {nginx,
/// nginx_source, openssl, openssl_source}, `summary` {error, warning, note}, `inputs`,
/// `project_config` (the .ngxtls.toml read, or null). Pretty-printed.
std::string render_json(const lint_report& r);
/// render_json() written to `out` a finding at a time: the same bytes, without holding the
/// document (600,000 findings make 480 MB of JSON).
void write_json(const lint_report& r, std::ostream& out);

/// Fields another report adds to lint's JSON record (check: each finding's verdict, and its
/// own top-level sections). Each is placed among the record's own keys in key order, where a
/// sorted nlohmann::json object would hold it; a key the record has already is not allowed.
struct json_additions {
  /// Keys and values.
  using fields = std::vector<std::pair<std::string, nlohmann::json>>;
  fields top;  ///< top-level fields
  /// The fields added to finding i (empty = none); called for every finding, from up to 4
  /// threads at once.
  std::function<fields(std::size_t)> finding;
};
/// write_json() with `add`'s fields merged in: the same record, streamed the same way.
void write_json(const lint_report& r, const json_additions& add, std::ostream& out);

/// Most items a batch of write_in_order renders at once.
inline constexpr std::size_t write_batch_items = 512;
/// Most weight (write_in_order's unit: about 100 bytes of text) a batch holds: a batch's text
/// is held whole until it is written, so this bounds the memory the writer holds (about
/// 1 MB), however many places one finding lists.
inline constexpr std::size_t write_batch_weight = 8192;

/// Writes item 0 ... n - 1 to `out` in order, the items rendered on up to 4 threads a batch at
/// a time while the calling thread writes the batches already rendered (a report's text is the
/// last serial step of a lint run). `weight(i)` estimates item i's text in units of about 100
/// bytes; `item(i, text, spill)` appends item i's text to `text`, and when `spill` is not null
/// may write what `text` holds so far to `*spill` and clear it (json_writer does, so that an
/// item is never held whole). A batch ends at write_batch_items items or write_batch_weight;
/// an item heavier than a batch is rendered alone, by the calling thread, with `spill` set to
/// `out`. `item` must be safe to call concurrently with itself. At most twice as many batches
/// as threads are held rendered at once. An exception from `item` or `out` is rethrown here
/// after the threads have stopped.
template <typename Weight, typename Item>
void write_in_order(std::size_t n, std::ostream& out, Weight&& weight, Item&& item) {
  struct batch {
    std::size_t begin, end;
    bool alone;  ///< one item heavier than a batch: rendered by the writer, spilling to `out`
  };
  std::vector<batch> batches;
  for (std::size_t b = 0; b < n;) {
    if (weight(b) > write_batch_weight) {
      batches.push_back({b, b + 1, true});
      ++b;
      continue;
    }
    std::size_t e = b;
    for (std::size_t held = 0; e < n && e - b < write_batch_items; ++e) {
      const std::size_t w = weight(e);
      if (w > write_batch_weight || held + w > write_batch_weight) break;
      held += w;
    }
    batches.push_back({b, e, false});
    b = e;
  }
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
  const std::size_t window = 2 * threads;
  std::vector<std::string> text(window);
  std::vector<char> ready(window, 0);
  std::mutex mu;
  std::condition_variable changed;
  std::size_t claimed = 0, written = 0;
  bool stop = false;
  std::exception_ptr failure;
  auto render = [&] {
    std::unique_lock lock(mu);
    for (;;) {
      changed.wait(lock,
                   [&] { return stop || claimed == batches.size() || claimed < written + window; });
      if (stop || claimed == batches.size()) return;
      const std::size_t k = claimed++;
      if (!batches[k].alone) {
        lock.unlock();
        try {
          std::string& t = text[k % window];
          t.clear();
          for (std::size_t i = batches[k].begin; i < batches[k].end; ++i) item(i, t, nullptr);
        } catch (...) {
          lock.lock();
          if (!failure) failure = std::current_exception();
          stop = true;
          changed.notify_all();
          return;
        }
        lock.lock();
      }
      ready[k % window] = 1;
      changed.notify_all();
    }
  };
  {
    std::vector<std::jthread> pool;
    // Stops the renderers before they are joined, however the writer leaves.
    struct stopper {
      std::mutex& mu;
      std::condition_variable& changed;
      bool& stop;
      ~stopper() {
        const std::lock_guard lock(mu);
        stop = true;
        changed.notify_all();
      }
    };
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(render);
    const stopper at_end{mu, changed, stop};
    std::string alone;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      {
        std::unique_lock lock(mu);
        changed.wait(lock, [&] { return stop || ready[k % window]; });
        if (stop && !ready[k % window]) break;
      }
      if (batches[k].alone) {
        alone.clear();
        item(batches[k].begin, alone, &out);
        out << alone;
        std::string().swap(alone);
      } else {
        out << text[k % window];
      }
      const std::lock_guard lock(mu);
      ready[k % window] = 0;
      ++written;
      changed.notify_all();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

/// `value` pretty-printed by nlohmann::json with indent `step` as it appears nested `level`
/// levels deep in a document (continuation lines indented by step * level more spaces).
/// Invalid UTF-8 in strings is replaced (config bytes need not be UTF-8).
template <typename Json>
std::string dump_nested(const Json& value, int level, int step = 2) {
  const std::string text = value.dump(step, ' ', false, Json::error_handler_t::replace);
  const std::string pad(static_cast<std::size_t>(step * level), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

}  // namespace ngxtls::report
