// Lint reports are written a finding at a time, rendered on several threads in batches
// (report::write_in_order). Order and content must not depend on the threads or batches.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "report/lint_output.hpp"
#include "report/sarif_output.hpp"
#include "report/terminal_text.hpp"

using namespace ngxtls;

namespace {

/// A report of `n` findings whose message and line encode their index.
report::lint_report numbered(std::size_t n) {
  report::lint_report r;
  r.inputs.push_back("/etc/nginx/nginx.conf");
  for (std::size_t i = 0; i < n; ++i) {
    engine::finding f;
    f.rule = "weak-ciphers";
    f.level = engine::severity::warning;
    f.message = "finding " + std::to_string(i);
    f.location = {"/etc/nginx/nginx.conf", static_cast<std::uint32_t>(i + 1), 5};
    f.fix = "ssl_ciphers HIGH;\n";
    r.findings.push_back(f);
  }
  return r;
}

}  // namespace

TEST_CASE("write_in_order keeps item order across threads and batches") {
  constexpr std::size_t b = report::write_batch_items;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, b - 1, b,
                        b + 1, 20 * b + 17}) {
    std::ostringstream out;
    report::write_in_order(n, out, [](std::size_t i) { return std::to_string(i) + ","; });
    std::string expected;
    for (std::size_t i = 0; i < n; ++i) expected += std::to_string(i) + ",";
    CHECK(out.str() == expected);
  }
}

TEST_CASE("JSON and SARIF of 9,000 findings list them in order, each once") {
  const report::lint_report r = numbered(9000);
  const auto j = nlohmann::json::parse(report::render_json(r));
  REQUIRE(j["findings"].size() == 9000);
  CHECK(j["summary"]["warning"] == 9000);
  const auto s = nlohmann::json::parse(report::render_sarif(r, "/etc/nginx"));
  REQUIRE(s["runs"][0]["results"].size() == 9000);
  for (std::size_t i = 0; i < 9000; i += 997) {
    CHECK(j["findings"][i]["message"] == "finding " + std::to_string(i));
    CHECK(j["findings"][i]["location"]["line"] == i + 1);
    CHECK(s["runs"][0]["results"][i]["message"]["text"] == "finding " + std::to_string(i));
  }
  CHECK(j["findings"][8999]["message"] == "finding 8999");
  // Streaming gives the bytes of one document dumped whole (nlohmann's indent 2, keys sorted).
  const report::lint_report small = numbered(3);
  nlohmann::json whole = nlohmann::json::parse(report::render_json(small));
  CHECK(report::render_json(small) == whole.dump(2) + "\n");
}

TEST_CASE("GitHub annotations escape % CR LF in the message and also : and , in properties") {
  report::lint_report r;
  engine::finding f;
  f.rule = "unknown-directive";
  f.level = engine::severity::error;
  f.message = "100% bad\r\nline::two, three:";
  f.location = {"/w/conf,d/a:b%.conf", 3, 7};
  f.fix = "x;\ny;";
  r.findings.push_back(f);
  const std::string out = report::render_github(r, "/w");
  CHECK(out ==
        "::error file=conf%2Cd/a%3Ab%25.conf,line=3,col=7,title=ngxtls unknown-directive::"
        "100%25 bad%0D%0Aline::two, three:%0AFix:%0Ax;%0Ay;\n");
  // One workflow command per finding: no raw line break inside it.
  CHECK(out.find('\n') == out.size() - 1);
  CHECK(out.find('\r') == std::string::npos);
}

TEST_CASE("terminal_safe escapes C0, DEL, C1 and invalid UTF-8, and keeps other UTF-8") {
  CHECK(report::terminal_safe("a\x1b[2Jb\x07\x7f") == "a\\x1b[2Jb\\x07\\x7f");
  CHECK(report::terminal_safe(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(report::terminal_safe("tab\tkept, line\nescaped") == "tab\tkept, line\\x0aescaped");
  CHECK(report::terminal_safe("line\nkept", true) == "line\nkept");
  CHECK(report::terminal_safe("csi \xc2\x9b and \x9b") == "csi \\xc2\\x9b and \\x9b");
  CHECK(report::terminal_safe("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92") ==
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92");
  CHECK(report::terminal_safe("overlong \xc0\xaf, surrogate \xed\xa0\x80") ==
        "overlong \\xc0\\xaf, surrogate \\xed\\xa0\\x80");
}

TEST_CASE("the JSON report is laid out as nlohmann::json dumps it, with every field escaped") {
  report::lint_report r = numbered(2);
  engine::finding& f = r.findings[0];
  // Quotes, backslashes, control bytes, DEL, UTF-8 and a byte that is not UTF-8.
  f.message = "a \"quoted\" \\ path\twith\nlines \x01\x7f caf\xc3\xa9 bad\xff end";
  f.server = "example.com (*:443)";
  f.fix.clear();
  f.include_chain = {{"/etc/nginx/nginx.conf", 12, 0}, {"/etc/nginx/sites/a b.conf", 3, 0}};
  f.facts = {{"ssl_protocols", "TLSv1 TLSv1.1", "server", source_location{"/x.conf", 4, 9}},
             {"default", "", "default", std::nullopt}};
  f.also_at = {{"/y.conf", 7, 1}, {"/z\"q.conf", 8, 2}};
  const std::string out = report::render_json(r);
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(out == j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  const auto& got = j["findings"][0];
  CHECK(got["message"] ==
        "a \"quoted\" \\ path\twith\nlines \x01\x7f caf\xc3\xa9 bad\xef\xbf\xbd end");
  CHECK(got["count"] == 3);
  CHECK(got["locations"].size() == 3);
  CHECK(got["locations"][2]["file"] == "/z\"q.conf");
  CHECK(got["include_chain"][1]["file"] == "/etc/nginx/sites/a b.conf");
  CHECK(got["evidence"][0]["location"]["column"] == 9);
  CHECK(got["evidence"][1]["location"].is_null());
  CHECK(got["fix"] == "");
  CHECK(j["findings"][1]["evidence"] == nlohmann::json::array());
  CHECK(j["findings"][1]["include_chain"] == nlohmann::json::array());
}
