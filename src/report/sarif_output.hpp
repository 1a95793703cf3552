#pragma once
// Lint reports for CI: SARIF 2.1.0 (code scanning) and GitHub Actions workflow annotations.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "report/lint_output.hpp"

namespace ngxtls::report {

/// Where `helpUri` of each SARIF rule points: this base followed by "<rule-id>.md" (the pages
/// generated into docs/rules/ by `ngxtls rules --write-docs`).
inline constexpr const char* rule_help_uri_base =
    "https://github.com/ngxtls/ngxtls/blob/main/docs/rules/";

/// A SARIF 2.1.0 log (OASIS sarif-v2.1.0, schema sarif-schema-2.1.0.json) with one run:
/// `tool.driver` lists every rule of the catalog (id, short and full description, the
/// Markdown doc as `help`, `helpUri`, default level); each finding is a `result` with
/// `ruleId`/`ruleIndex`, `level` (error / warning / note), the message, its location
/// (1-based line and column; the column counts bytes) and the include chain as
/// `relatedLocations`, and `properties` holding the evidence, fix and server.
/// Files under `working_dir` get relative URIs with `uriBaseId` "SRCROOT" (declared in
/// `originalUriBaseIds` as a file:// URI of `working_dir`), others absolute file:// URIs;
/// an empty `working_dir` makes every URI absolute. Pretty-printed JSON.
std::string render_sarif(const lint_report& r, const std::string& working_dir);
/// render_sarif() written to `out` a result at a time (the same bytes, without the document).
void write_sarif(const lint_report& r, const std::string& working_dir, std::ostream& out);

/// What check adds to lint's SARIF log.
struct sarif_additions {
  /// Fields set in runs[0].properties (over lint's own of the same key).
  nlohmann::json run_properties = nlohmann::json::object();
  /// Changes result i (finding i) before it is written; called from up to 4 threads at once.
  std::function<void(std::size_t, nlohmann::json& result)> result;
};
/// write_sarif() with `add` applied, every object's keys sorted (the shape of check's log):
/// the same log otherwise, streamed the same way.
void write_sarif_sorted(const lint_report& r, const std::string& working_dir,
                        const sarif_additions& add, std::ostream& out);

/// GitHub Actions workflow commands, one line per finding:
/// `::error file=F,line=L,col=C,title=RULE::MESSAGE` (`warning`, and `notice` for notes),
/// with the fix appended after a line break; paths relative to `working_dir` when under it
/// (GitHub matches annotations to repository paths). Values are escaped as the Actions
/// toolkit does (% CR LF in data; also : and , in properties).
std::string render_github(const lint_report& r, const std::string& working_dir);
/// render_github() written to `out` a line at a time.
void write_github(const lint_report& r, const std::string& working_dir, std::ostream& out);

}  // namespace ngxtls::report
