// The external oracle: every file of the real-config corpus (test::corpus_dir()) against nginx's
// verdict (syntax) and crossplane 0.5.7's tree (shape), per MANIFEST.tsv and corpus/README.md.

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "report/parse_output.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;

/// MANIFEST.tsv: tab-separated, with CSV-style quoting ("" inside quoted fields).
std::vector<std::map<std::string, std::string>> read_manifest(const fs::path& p) {
  const std::string text = ngxtls::test::read_file(p);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty()) {
      quoted = true;
    } else if (c == '\t') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !row.empty()) {
    row.push_back(field);
    rows.push_back(row);
  }
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    std::map<std::string, std::string> m;
    for (std::size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c)
      m[rows[0][c]] = rows[r][c];
    out.push_back(std::move(m));
  }
  return out;
}

/// Keeps what crossplane's tree and ours must agree on: directive, line, args, block.
nlohmann::json shape(const nlohmann::json& parsed) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : parsed) {
    nlohmann::json j{{"directive", d["directive"]}, {"line", d["line"]}, {"args", d["args"]}};
    if (d.contains("block")) j["block"] = shape(d["block"]);
    out.push_back(std::move(j));
  }
  return out;
}

/// Files where crossplane 0.5.7 disagrees with nginx, each with the reason. nginx is the
/// authority (corpus/README.md); the test checks that each listed file does differ.
const std::map<std::string, std::string> crossplane_deviations = {
    {"files/3scale__APIcast/gateway/conf.d/echo.conf",
     "crossplane keeps backslash pairs: nginx turns \"\\r\\n\" and \"\\n$echo_request_body\" into "
     "control characters"},
    {"files/nginxinc__crossplane/tests/configs/messy/nginx.conf",
     "crossplane keeps backslash pairs (\\\\ and \\n in the return text), and reads `${uri} "
     "/abc/${uri}.html` as one token across the space: nginx ends `${uri}` at the space"},
    {"files/nginxinc__nginx-go-crossplane/testdata/configs/broken1/nginx.conf",
     "crossplane reads `${url ;` as the token `${url ` (space included): nginx ends it at the "
     "space"},
    {"files/nginxinc__nginx-go-crossplane/testdata/configs/comments-between-args-disable-parse/"
     "nginx.conf",
     "crossplane emits comments that sit between arguments as `#` directives even without "
     "--include-comments: nginx ignores them"},
    {"files/nginxinc__nginx-go-crossplane/testdata/configs/emptiness/nginx.conf",
     "crossplane keeps backslash pairs: nginx turns \"\\n\" in the return text into a line feed"},
    {"files/nginxinc__nginx-go-crossplane/testdata/configs/lua-basic/nginx.conf",
     "crossplane keeps backslash pairs: nginx turns \\r\\n in the quoted init_by_lua code into CR "
     "LF"},
};

}  // namespace

TEST_CASE("every corpus file gets nginx's syntax verdict and crossplane's tree") {
  const auto found = ngxtls::test::corpus_dir();
  if (!found) return ngxtls::test::skip_test(ngxtls::test::corpus_missing_reason());
  const fs::path corpus = *found;
  // The crossplane trees come with the team's corpus copy, not with a fetched one.
  const bool have_trees = fs::is_directory(corpus / "crossplane_nocheck");
  if (!have_trees)
    std::printf("no crossplane_nocheck/ in %s: tree comparison skipped\n", corpus.c_str());
  const auto rows = read_manifest(corpus / "MANIFEST.tsv");
  REQUIRE(rows.size() > 200);
  const std::regex nginx_error(R"(\[emerg\] (.*) in (.*):(\d+)$)");
  int syntax_total = 0, syntax_agree = 0, tree_total = 0, tree_agree = 0, tree_excepted = 0;
  std::set<std::string> deviations_seen;
  for (const auto& row : rows) {
    const std::string local = row.at("local_path");
    const fs::path file = corpus / local;
    const std::string verdict = row.at("nginx_verdict");
    const bool self_syntax_error =
        verdict == "syntax_error" && row.at("nginx_error_in_file") == "self";
    if (verdict != "ok" && !self_syntax_error) continue;  // nginx stopped earlier: no expectation
    ++syntax_total;
    CAPTURE(local);
    ngxtls::config::load_options o;
    o.single_file = true;
    std::optional<ngxtls::config::config> cfg;
    std::optional<ngxtls::input_error> error;
    try {
      cfg = ngxtls::config::load_file(file.string(), o);
    } catch (const ngxtls::input_error& e) {
      error = e;
    }
    if (verdict == "ok") {
      CHECK_MESSAGE(!error, (error ? std::string(error->what()) : std::string()));
      if (!error) ++syntax_agree;
    } else {
      std::smatch m;
      const std::string first = row.at("nginx_first_error");
      REQUIRE(std::regex_match(first, m, nginx_error));
      const std::string message = m[1];
      const unsigned line = static_cast<unsigned>(std::stoul(m[3]));
      REQUIRE_MESSAGE(error.has_value(), "nginx: " << first);
      CHECK(error->message() == message);
      CHECK(error->where().line == line);
      if (error->message() == message && error->where().line == line) ++syntax_agree;
    }
    if (!have_trees || verdict != "ok" || error || row.at("crossplane_nocheck_status") != "ok")
      continue;
    ++tree_total;
    const auto theirs = nlohmann::json::parse(ngxtls::test::read_file(
        corpus / "crossplane_nocheck" / (local.substr(std::string("files/").size()) + ".json")));
    const auto ours = nlohmann::json::parse(ngxtls::report::render_crossplane(*cfg, true));
    const bool same = shape(ours["config"][0]["parsed"]) == shape(theirs["config"][0]["parsed"]);
    if (auto it = crossplane_deviations.find(local); it != crossplane_deviations.end()) {
      deviations_seen.insert(local);
      CHECK_MESSAGE(!same, "listed as a crossplane deviation but agrees now: " << local);
      ++tree_excepted;
      continue;
    }
    CHECK_MESSAGE(same, "tree differs from crossplane: " << local);
    if (same) ++tree_agree;
  }
  if (have_trees) CHECK(deviations_seen.size() == crossplane_deviations.size());
  std::printf("corpus syntax agreement with nginx: %d/%d\n", syntax_agree, syntax_total);
  std::printf("corpus tree agreement with crossplane: %d/%d (%d listed crossplane deviations)\n",
              tree_agree, tree_total, tree_excepted);
  for (const auto& [file, reason] : crossplane_deviations)
    std::printf("  deviation %s: %s\n", file.c_str(), reason.c_str());
  CHECK(syntax_agree == syntax_total);
  CHECK(tree_agree + tree_excepted == tree_total);
}
