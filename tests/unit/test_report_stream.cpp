// Lint reports are written a finding at a time, rendered on several threads in batches
// (report::write_in_order). Order and content must not depend on the threads or batches.

#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <streambuf>
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
    report::write_in_order(
        n, out, [](std::size_t) { return std::size_t{1}; },
        [](std::size_t i, std::string& text, std::ostream*) { text += std::to_string(i) + ","; });
    std::string expected;
    for (std::size_t i = 0; i < n; ++i) expected += std::to_string(i) + ",";
    CHECK(out.str() == expected);
  }
}

/// A stream that keeps what is written and the largest piece handed to it at once: the text a
/// writer held before writing it.
class piece_recorder : public std::streambuf {
 public:
  std::string text;
  std::size_t largest_piece = 0;

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    text.append(s, static_cast<std::size_t>(n));
    largest_piece = std::max(largest_piece, static_cast<std::size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) xsputn(reinterpret_cast<const char*>(&c), 1);
    return c;
  }
};

TEST_CASE("the JSON writer holds a bounded piece of text however many places a finding has") {
  // One finding with 40,000 places and evidence per place (about 10 MB of JSON, as a missing
  // certificate in every site of a large config makes), then 600 findings of 200 places each
  // (a batch of them would hold 30 MB).
  report::lint_report r = numbered(601);
  for (std::uint32_t k = 0; k < 40000; ++k) {
    r.findings[0].also_at.push_back(
        {"/etc/nginx/sites/site-" + std::to_string(k) + ".conf", 10, 5});
    r.findings[0].facts.push_back({"ssl_certificate", "/etc/ssl/site" + std::to_string(k) + ".crt",
                                   "missing", source_location{"/etc/nginx/s.conf", k + 1, 5}});
  }
  for (std::size_t i = 1; i < r.findings.size(); ++i)
    for (std::uint32_t k = 0; k < 200; ++k)
      r.findings[i].also_at.push_back({"/etc/nginx/b.conf", k, 1});
  piece_recorder rec;
  {
    std::ostream os(&rec);
    report::write_json(r, os);
  }
  CHECK(rec.text.size() > 10'000'000);
  CHECK(rec.largest_piece < 2'000'000);
  // The same bytes as the document dumped whole.
  const nlohmann::json j = nlohmann::json::parse(rec.text);
  CHECK(rec.text == j.dump(2) + "\n");
  CHECK(j["findings"][0]["count"] == 40001);
  CHECK(j["findings"][0]["evidence"][39999]["value"] == "/etc/ssl/site39999.crt");
  CHECK(j["findings"][600]["locations"].size() == 201);
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
