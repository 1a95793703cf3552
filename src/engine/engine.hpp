#pragma once
// The rule engine: runs the rule catalog over a model and applies selection, severity
// overrides and inline suppressions.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/finding.hpp"
#include "model/model.hpp"

namespace ngxtls::engine {

class context;

/// One rule of the catalog. Everything about a rule lives in its own file under rules/
/// (CONVENTIONS, Rules).
struct rule {
  std::string id;       ///< kebab-case, e.g. "tls13-resumption-disabled"
  severity level;       ///< default severity (a rule may lower or raise per finding)
  std::string summary;  ///< one line
  std::string doc;  ///< Markdown: What it flags / Why it matters / Example / Fix / How the prober
                    ///< confirms it / Source
  std::function<void(const context&, finding_list&)> check;
  /// Found only by `check` from probe evidence (its lint check reports nothing): a suppression
  /// comment for it silences the probe's finding and is never reported unused by lint.
  bool probe_only = false;
  /// The probe question that confirms its findings in `check` (a finding may name another:
  /// finding::question).
  probe_question confirmed_by = probe_question::none;
  /// Its findings cost session resumption (ticket keys, session caches, TLS 1.3 resumption,
  /// sessions across names): `check --sandbox --load` measures what each costs in full
  /// handshakes per second.
  bool costs_resumption = false;
};

/// The rules a run applies, in a fixed order. The engine only reads the catalog it is given:
/// the rules layer builds the built-in one (rules/registry.cpp), so the engine does not link
/// against the rules.
using rule_catalog = std::vector<rule>;

/// The rule of `catalog` with that id, or null.
const rule* find_rule(const rule_catalog& catalog, std::string_view id);

/// One configuration linted as part of a fleet (`--fleet`): its label (the path) and model.
struct fleet_member {
  std::string label;
  const model::model* model = nullptr;
};

/// Options that change what rules report.
struct lint_options {
  bool strict_files = false;                    ///< missing cert/key files are errors, not notes
  const model::model* baseline = nullptr;       ///< --baseline: the config deployed before this one
  std::vector<fleet_member> fleet;              ///< --fleet: every member, this one included
  std::optional<std::set<std::string>> select;  ///< only these rule ids
  std::set<std::string> ignore;                 ///< never these rule ids
  std::map<std::string, severity> severity_overrides;
  /// Certificates expiring within this many days are reported (`.ngxtls.toml` expiry_days).
  int expiry_window_days = 30;
  /// Expected new TLS sessions per second on one instance (`.ngxtls.toml` [load]), which
  /// sizes shared session caches; nullopt: not said, cache size not judged.
  std::optional<double> new_sessions_per_second;
  /// Third-party modules declared in `.ngxtls.toml` `modules` (e.g. "lua", "headers-more"),
  /// in addition to those a config loads with `load_module`.
  std::set<std::string> modules;
};

/// A file fact looked up once per path across every server (certificates, ticket keys).
struct file_facts;

/// What a rule sees: the model, the options and cached file lookups.
class context {
 public:
  context(const model::model& m, const lint_options& opts);
  ~context();
  const model::model& model() const { return m_; }
  const lint_options& options() const { return opts_; }
  /// An ssl_* file path resolved against nginx's conf prefix (config::resolve_file()).
  std::string resolve(std::string_view path) const;
  /// A finding located at `where` (or at the socket default server's first listen when null),
  /// with its include chain filled in.
  finding make(const std::string& rule, severity level, std::string message,
               const config::directive* where) const;
  /// The location of a directive.
  source_location where(const config::directive* d) const;
  /// Shared cache of file lookups (src/tls), keyed by resolved path.
  file_facts& files() const { return *files_; }
  /// A value computed once per run and shared by the rules that need it (the three
  /// directive rules walk the tree once between them): `make()` runs on first use of `key`,
  /// once even when rules on several threads ask at the same time; `make()` may ask for
  /// other keys, not its own.
  template <typename T, typename Make>
  const T& shared(const std::string& key, Make make) const {
    std::shared_ptr<shared_slot> slot;
    {
      const std::lock_guard<std::mutex> lock(shared_mu_);
      auto& s = shared_[key];
      if (!s) s = std::make_shared<shared_slot>();
      slot = s;
    }
    std::call_once(slot->once, [&] { slot->value = std::make_shared<T>(make()); });
    return *static_cast<const T*>(slot->value.get());
  }

 private:
  struct shared_slot {
    std::once_flag once;
    std::shared_ptr<void> value;
  };
  const model::model& m_;
  const lint_options& opts_;
  std::unique_ptr<file_facts> files_;
  mutable std::mutex shared_mu_;
  mutable std::map<std::string, std::shared_ptr<shared_slot>> shared_;
  mutable std::mutex resolve_mu_;
  mutable std::map<std::string, std::string, std::less<>> resolved_;
};

/// Throws input_error at the directive when a file named by an ssl_* file directive
/// (ssl_certificate, ssl_certificate_key, ssl_trusted_certificate, ssl_client_certificate,
/// ssl_dhparam, ssl_session_ticket_key, ssl_stapling_file, ssl_crl, ssl_password_file) is a
/// FIFO, socket or device, or a file over tls::max_tls_file_bytes: reading it would block or
/// fill memory, in ngxtls or in the sandbox's nginx. Missing files are left to the rules.
void check_named_files(const model::model& m);

/// Runs every selected rule over `m` (check_named_files() first; on up to `threads` threads,
/// default: the machine's cores, at most 4; the result does not depend on it), then drops findings
/// suppressed inline with
/// `# ngxtls: ignore RULE-ID` on the finding's line or the line above, then applies severity
/// overrides; sorted by file, line, column, rule; exact duplicates (same rule, place and
/// message reached through two include sites) kept once. A suppression comment naming a rule
/// that ran but silenced nothing, or naming no rule at all, is itself reported as an
/// `unused-suppression` note (unless that rule is deselected).
std::vector<finding> run(const rule_catalog& catalog, const model::model& m,
                         const lint_options& opts, unsigned threads = 0);

/// Whether `# ngxtls: ignore RULE-ID` on the finding's line or the line above silences `f`, as
/// run() decides for lint findings; for findings made outside run() (check's probe findings).
bool suppressed_inline(const model::model& m, const finding& f);

/// What run_counted() found: the findings kept, and those past the caps, counted.
struct run_result {
  std::vector<finding> findings;  ///< as run() returns them
  /// Findings not kept: past max_findings_per_rule for their rule (counted before
  /// suppressions), or past max_findings in all; rule id -> count.
  std::map<std::string, std::size_t> dropped_per_rule;
  std::size_t dropped = 0;  ///< the sum of dropped_per_rule
};

/// run(), with the count of findings dropped at the caps (finding.hpp), for the reports.
run_result run_counted(const rule_catalog& catalog, const model::model& m, const lint_options& opts,
                       unsigned threads = 0);

// The built-in catalog and runs over it. Defined by the rules layer (rules/registry.cpp, library
// ngxtls_rules), which links against the engine, never the other way: code of the engine
// (src/engine) takes the catalog as an argument and calls none of these.

/// The built-in catalog, in a fixed order.
const rule_catalog& all_rules();
/// The built-in rule with that id, or null.
const rule* find_rule(const std::string& id);
/// run() over the built-in catalog.
std::vector<finding> run(const model::model& m, const lint_options& opts, unsigned threads = 0);
/// run_counted() over the built-in catalog.
run_result run_counted(const model::model& m, const lint_options& opts, unsigned threads = 0);

}  // namespace ngxtls::engine
