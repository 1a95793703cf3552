// nginx's directive table (rules/data/nginx-1.22.1-directives.tsv) against nginx's own
// verdicts on the real-config corpus (test::corpus_dir(): MANIFEST.tsv, nginx 1.22.1 with the lua,
// echo and stream modules loaded), and the embedded copy against the data file.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include "config/loader.hpp"
#include "engine/engine.hpp"
#include "model/model.hpp"
#include "rules/directive_check.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
namespace dir = ngxtls::rules::directives;

namespace {

struct manifest_row {
  std::string path, verdict, kind, context, first_error, error_in_file;
};

std::vector<manifest_row> manifest(const fs::path& corpus) {
  std::vector<manifest_row> rows;
  std::ifstream in(corpus / "MANIFEST.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream cols(line);
    std::string c;
    while (std::getline(cols, c, '\t')) f.push_back(c);
    f.resize(22);
    rows.push_back({f[0], f[8], f[9], f[10], f[11], f[12]});
  }
  return rows;
}

// The line number at the end of nginx's "... in FILE:LINE" message, or 0.
std::uint32_t error_line(const std::string& msg) {
  std::smatch m;
  static const std::regex re(R"(:(\d+)\"?$)");
  if (std::regex_search(msg, m, re)) return static_cast<std::uint32_t>(std::stoul(m[1]));
  return 0;
}

}  // namespace

TEST_CASE("the embedded directive table is the data file in rules/data") {
  CHECK(std::string(dir::embedded_tsv()) ==
        test::read_file(test::source_dir() / "rules/data/nginx-1.22.1-directives.tsv"));
  // Spot checks of measured facts (nginx 1.22.1).
  const auto* proto = dir::find("ssl_protocols");
  REQUIRE(proto);
  CHECK((proto->contexts & static_cast<std::uint16_t>(dir::ctx::location)) == 0);
  CHECK((proto->contexts & static_cast<std::uint16_t>(dir::ctx::stream_server)) != 0);
  REQUIRE(dir::find("root"));
  REQUIRE(dir::find("content_by_lua_block"));
  CHECK(dir::find("content_by_lua_block")->module == "lua");
  CHECK(dir::find("http2")->since == "1.25.1");
  CHECK(dir::module_of_load("modules/ngx_http_lua_module.so") == "lua");
  CHECK(dir::owning_module("more_set_headers") == std::optional<std::string>("headers-more"));
}

TEST_CASE("directive checks agree with nginx 1.22.1's verdicts on the corpus") {
  std::size_t ok_files = 0, refused = 0, matched = 0;
  std::string disagreements;
  const auto corpus = test::corpus_dir();
  if (!corpus) return test::skip_test(test::corpus_missing_reason());
  for (const auto& row : manifest(*corpus)) {
    const bool table_verdict = row.verdict == "unknown_directive" ||
                               row.kind == "not_allowed_here" || row.kind == "invalid_args";
    if (row.verdict != "ok" && !table_verdict) continue;  // nginx stopped for another reason
    if (table_verdict && row.error_in_file != "self") continue;
    const fs::path file = *corpus / row.path;
    std::unique_ptr<config::config> cfg;
    try {
      cfg = std::make_unique<config::config>(config::load_file(file.string()));
    } catch (const std::exception&) {
      continue;  // the parser's verdicts are tested elsewhere
    }
    model::assumed_versions v;
    v.nginx = *model::version::parse("1.22.1");
    auto m = model::build(*cfg, v);
    engine::lint_options opts;
    opts.modules = {"lua", "ndk", "echo", "stream"};  // as in the verdict environment
    engine::context ctx(m, opts);
    auto start = dir::parse_ctx(row.context);
    REQUIRE(start);
    auto found = dir::issues(ctx, start);
    if (row.verdict == "ok") {
      ++ok_files;
      for (const auto& i : found)
        if (i.level == engine::severity::error)
          disagreements += "\n  nginx accepts " + row.path +
                           " but: " + to_string(ctx.where(i.where)) + " " + i.message;
      continue;
    }
    ++refused;
    const std::uint32_t line = error_line(row.first_error);
    bool hit = false;
    for (const auto& i : found) {
      // nginx names the line where the directive ends (its `;` or `{`), which for a directive
      // spread over lines is after the line of its name.
      std::uint32_t last = i.where->line;
      for (const auto& a : i.where->args)
        last = std::max<std::uint32_t>(
            last, ctx.model().cfg->where(*i.where, a).line +
                      static_cast<std::uint32_t>(std::count(a.raw().begin(), a.raw().end(), '\n')));
      if (line < i.where->line || line > last + 1) continue;
      const bool kind_ok =
          (row.verdict == "unknown_directive" && i.kind == dir::problem::unknown) ||
          (row.kind == "not_allowed_here" && i.kind == dir::problem::not_allowed) ||
          (row.kind == "invalid_args" && i.kind == dir::problem::arguments);
      hit = hit || kind_ok;
    }
    if (hit)
      ++matched;
    else
      disagreements += "\n  nginx refuses " + row.path + " (" + row.first_error + ") and we do not";
  }
  MESSAGE("corpus: " << ok_files << " files nginx accepts, " << refused
                     << " it refuses by its directive table, " << matched << " of those matched");
  CHECK_MESSAGE(disagreements.empty(), "disagreements:" << disagreements);
  CHECK(ok_files > 100);
  CHECK(refused >= 20);
}
