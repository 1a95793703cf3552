// ngxtls lint on fixtures/cases (kind B and C: nginx TLS behaviour), on Debian's own
// nginx.conf, on `nginx -T` dumps, and over the whole corpus without a crash.

#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config/loader.hpp"
#include "engine/engine.hpp"
#include "model/model.hpp"
#include "support/fixture_env.hpp"
#include "support/nginx_run.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using json = nlohmann::json;

namespace {

// A writable copy of fixtures/cases with its PKI made by the case's own make-pki.sh.
struct cases_copy {
  test::temp_dir tmp;
  fs::path dir;
  cases_copy() {
    dir = tmp.path() / "cases";
    fs::copy(test::cases_dir(), dir, fs::copy_options::recursive);
    for (auto& e : fs::recursive_directory_iterator(dir))
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
    auto r = test::run({"sh", (dir / "make-pki.sh").string(), dir.string()});
    if (r.exit_code != 0) throw std::runtime_error("make-pki.sh failed: " + r.err);
  }
};

struct lint_result {
  int exit_code;
  json doc;
  std::string err;
};

lint_result lint(const std::vector<std::string>& args, const std::string& input = "") {
  // The resumption and stapling rules these cases are about; other rules have their own tests.
  std::vector<std::string> argv = {test::ngxtls_binary(),
                                   "lint",
                                   "--format",
                                   "json",
                                   "--nginx-version",
                                   "1.22.1",
                                   "--openssl-version",
                                   "3.0.19",
                                   "--select",
                                   "tls13-resumption-disabled,ticket-keys-not-shared,"
                                   "ticket-key-rotation,ocsp-stapling-dead,utf8-bom"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = test::run(argv, input);
  lint_result out{r.exit_code, json(), r.err};
  if (!r.out.empty()) out.doc = json::parse(r.out);
  return out;
}

// (rule, severity, file name, line) of every finding.
std::multiset<std::tuple<std::string, std::string, std::string, int>> summary(const json& doc) {
  std::multiset<std::tuple<std::string, std::string, std::string, int>> out;
  for (const auto& f : doc["findings"])
    out.insert({f["rule"], f["severity"],
                fs::path(f["location"]["file"].get<std::string>()).filename().string(),
                f["location"]["line"].get<int>()});
  return out;
}

using row = std::tuple<std::string, std::string, std::string, int>;

}  // namespace

TEST_CASE("cases B and C: lint reports what the measured nginx behaviour implies") {
  cases_copy c;
  auto at = [&](const char* name) { return (c.dir / name).string(); };

  // B01: TLS 1.3 only, tickets off, no cache: no client resumes (error at the directive, line 9).
  CHECK(summary(lint({at("B01-tls13-tickets-off-no-cache.conf")}).doc) ==
        std::multiset<row>{
            {"tls13-resumption-disabled", "error", "B01-tls13-tickets-off-no-cache.conf", 9}});
  // B01b: the same with a shared cache resumes statefully: a note only.
  CHECK(summary(lint({at("B01b-tls13-tickets-off-shared-cache.conf")}).doc) ==
        std::multiset<row>{
            {"tls13-resumption-disabled", "note", "B01b-tls13-tickets-off-shared-cache.conf", 9}});
  // C01: TLS 1.2 only, tickets off, shared cache: session IDs resume; nothing to report.
  auto c01 = lint({at("C01-tls12-tickets-off-id-cache.conf")});
  CHECK(c01.exit_code == 0);
  CHECK(c01.doc["findings"].empty());
  // B06: tickets on, no key file, shared cache, nginx 1.22: keys die with each reload (a note on
  // one host: a reload costs each returning client one full handshake).
  CHECK(summary(lint({at("B06-auto-ticket-key-reset-on-reload.conf")}).doc) ==
        std::multiset<row>{
            {"ticket-keys-not-shared", "note", "B06-auto-ticket-key-reset-on-reload.conf", 4}});
  // ... and on 1.24 the shared zone keeps them across reloads: a note.
  auto b06new = lint({at("B06-auto-ticket-key-reset-on-reload.conf"), "--nginx-version", "1.24.0"});
  CHECK(summary(b06new.doc) == std::multiset<row>{{"ticket-keys-not-shared", "note",
                                                   "B06-auto-ticket-key-reset-on-reload.conf", 4}});
  // B09: responder host name, no resolver: a note (works when DNS answers at load).
  CHECK(summary(lint({at("B09-stapling-no-resolver.conf")}).doc) ==
        std::multiset<row>{{"ocsp-stapling-dead", "note", "B09-stapling-no-resolver.conf", 8},
                           {"ticket-keys-not-shared", "note", "B09-stapling-no-resolver.conf", 4}});
  // B10: no OCSP URL: stapling is dead.
  CHECK(summary(lint({at("B10-stapling-cert-without-ocsp-url.conf")}).doc) ==
        std::multiset<row>{
            {"ocsp-stapling-dead", "warning", "B10-stapling-cert-without-ocsp-url.conf", 8},
            {"ticket-keys-not-shared", "note", "B10-stapling-cert-without-ocsp-url.conf", 4}});
  // B11: leaf only, no trusted certificate: issuer not found.
  auto b11 = lint({at("B11-stapling-leaf-only-no-issuer.conf")});
  CHECK(summary(b11.doc).count(
            {"ocsp-stapling-dead", "warning", "B11-stapling-leaf-only-no-issuer.conf", 8}) == 1);
  for (const auto& f : b11.doc["findings"])
    if (f["rule"] == "ocsp-stapling-dead")
      CHECK(f["message"].get<std::string>().find("cannot find the issuer") != std::string::npos);
}

TEST_CASE("case B08: reuseport alone does not change the ticket key finding") {
  cases_copy c;
  const fs::path with = c.dir / "B08-reuseport-single-instance.conf";
  std::string text = test::read_file(with);
  auto pos = text.find(" reuseport");
  REQUIRE(pos != std::string::npos);
  text.erase(pos, 10);
  const fs::path without = c.tmp.write("cases/B08-no-reuseport.conf", text);
  auto a = lint({with.string()});
  auto b = lint({without.string()});
  REQUIRE(a.doc["findings"].size() == 1);
  REQUIRE(b.doc["findings"].size() == 1);
  CHECK(a.doc["findings"][0]["rule"] == "ticket-keys-not-shared");
  CHECK(a.doc["findings"][0]["severity"] == b.doc["findings"][0]["severity"]);
  // One host: a note either way (a reload costs each returning client one full handshake).
  CHECK(a.doc["findings"][0]["severity"] == "note");
}

TEST_CASE(
    "case B05: a rotation that drops the encrypting key is an error, one that keeps it is not") {
  cases_copy c;
  // The deployed config before rotation lists [k1] (keys/ticketkeys.conf).
  fs::copy(c.dir, c.tmp.path() / "old", fs::copy_options::recursive);
  const std::string conf = "B05-ticket-key-rotation-drops-previous.conf";
  auto old_conf = (c.tmp.path() / "old" / conf).string();
  // Single key: the note that the next rotation must keep it, pointing into the include.
  auto single = lint({old_conf});
  CHECK(summary(single.doc) ==
        std::multiset<row>{{"ticket-key-rotation", "note", "ticketkeys.conf", 1}});
  CHECK(single.doc["findings"][0]["include_chain"][0]["line"] == 10);

  c.tmp.write("cases/keys/ticketkeys.conf",
              "ssl_session_ticket_key keys/k2.key;\nssl_session_ticket_key keys/k1.key;\n");
  auto keeps = lint({(c.dir / conf).string(), "--baseline", old_conf});
  CHECK(keeps.exit_code == 0);
  CHECK(keeps.doc["findings"].empty());

  c.tmp.write("cases/keys/ticketkeys.conf",
              "ssl_session_ticket_key keys/k3.key;\nssl_session_ticket_key keys/k2.key;\n");
  auto drops = lint({(c.dir / conf).string(), "--baseline", old_conf});
  CHECK(drops.exit_code == 1);
  CHECK(summary(drops.doc) ==
        std::multiset<row>{{"ticket-key-rotation", "error", "ticketkeys.conf", 1}});
}

TEST_CASE("Debian's own nginx.conf lints, from the file and from `nginx -T` on stdin") {
  REQUIRE(fs::exists("/etc/nginx/nginx.conf"));
  auto file = lint({"/etc/nginx/nginx.conf", "--fail-on", "never"});
  CHECK(file.exit_code == 0);
  CHECK(file.doc.contains("findings"));
  auto dump = test::run_nginx({"nginx", "-T"});
  REQUIRE(dump.exit_code == 0);
  auto piped = lint({"-", "--fail-on", "never"}, dump.out);
  CHECK(piped.exit_code == 0);
  CHECK(summary(piped.doc) == summary(file.doc));
}

TEST_CASE("an nginx -T dump of a multi-file config gives the same findings as the files") {
  test::temp_dir tmp;
  test::make_fixture_material(tmp.path());
  tmp.write("nginx.conf", R"(events {}
http {
    ssl_certificate     pki/noocsp/chain.pem;
    ssl_certificate_key pki/noocsp/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    include conf.d/*.conf;
}
)");
  tmp.write("conf.d/a.conf",
            "server {\n    listen 127.0.0.1:1443 ssl;\n    include snippets/tls.conf;\n}\n");
  tmp.write("conf.d/b.conf",
            "server {\n    listen 127.0.0.1:1444 ssl;\n    include snippets/tls.conf;\n}\n");
  tmp.write("snippets/tls.conf", "ssl_session_tickets off;\nssl_stapling on;\n");
  const auto conf = (tmp.path() / "nginx.conf").string();
  auto dump = test::run_nginx({"nginx", "-T", "-p", tmp.path().string() + "/", "-c", conf, "-g",
                               "pid " + (tmp.path() / "nginx.pid").string() + "; error_log " +
                                   (tmp.path() / "error.log").string() + ";"});
  REQUIRE_MESSAGE(dump.exit_code == 0, dump.err);
  auto from_files = lint({conf});
  auto from_dump = lint({"-"}, dump.out);
  CHECK(from_files.exit_code == 1);
  CHECK(from_dump.exit_code == 1);
  // The shared snippet is expanded at both include sites: two sockets, two errors at one line
  // (deduplicated to one finding per socket message), plus stapling at line 2.
  auto s = summary(from_files.doc);
  CHECK(s.count({"tls13-resumption-disabled", "error", "tls.conf", 1}) == 2);
  CHECK(s.count({"ocsp-stapling-dead", "warning", "tls.conf", 2}) == 1);
  CHECK(summary(from_dump.doc) == s);
  // nginx itself agrees that stapling is ignored (docs/nginx-facts.md#ocsp-stapling-quiet).
  CHECK(dump.err.find("no OCSP responder URL") != std::string::npos);
}

TEST_CASE("lint runs over every corpus file without crashing") {
  const auto corpus = test::corpus_dir();
  if (!corpus) return test::skip_test(test::corpus_missing_reason());
  const fs::path files = *corpus / "files";
  REQUIRE(fs::exists(files));
  std::size_t total = 0, linted = 0, input_errors = 0, findings = 0;
  for (const auto& e : fs::recursive_directory_iterator(files)) {
    if (!e.is_regular_file()) continue;
    ++total;
    try {
      auto cfg = config::load_file(e.path().string());
      model::assumed_versions v;
      v.nginx = *model::version::parse("1.22.1");
      auto m = model::build(cfg, v);
      findings += engine::run(m, {}).size();
      ++linted;
    } catch (const input_error&) {
      ++input_errors;  // syntax errors and missing includes: reported, never a crash
    }
  }
  MESSAGE("corpus: " << total << " files, " << linted << " linted, " << input_errors
                     << " input errors, " << findings << " findings");
  CHECK(total >= 280);
  CHECK(linted + input_errors == total);
  CHECK(linted > total / 2);
}
