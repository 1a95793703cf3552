// check --sandbox --load: each finding about resumption is priced with the load phases against
// the sandbox nginx, in handshakes per second at the measured rate and at full resumption.
#include <doctest/doctest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "support/fixture_env.hpp"
#include "support/process.hpp"

using json = nlohmann::json;
using namespace ngxtls;

namespace {

json check_json(const std::string& conf, const std::vector<std::string>& extra, int& rc) {
  std::vector<std::string> argv = {
      test::ngxtls_binary(), "check", conf, "--sandbox", "--format", "json", "--fail-on", "never"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = test::run(argv, "", 120);
  rc = r.exit_code;
  INFO("stderr: " << r.err);
  REQUIRE(!r.out.empty());
  return json::parse(r.out);
}

// The fixture with tickets on and no shared key file, in `dir` with the fixture material.
std::string no_key_file_conf(const test::temp_dir& dir) {
  test::make_fixture_material(dir.path());
  return dir
      .write("nginx.conf", test::read_file(test::source_dir() / "fixtures/rules" /
                                           "ticket-keys-not-shared/no-key-file.conf"))
      .string();
}

}  // namespace

TEST_CASE("check --sandbox --load prices ticket keys not shared between two instances") {
  test::temp_dir dir;
  auto conf = no_key_file_conf(dir);
  int rc = -1;
  auto doc = check_json(conf, {"--instances", "2", "--load", "--duration", "1"}, rc);
  CHECK(rc == 0);
  std::string notes;
  for (const auto& n : doc["notes"]) notes += n.get<std::string>() + "\n";
  CHECK(notes.find("load: ticket-keys-not-shared at example.com") != std::string::npos);
  CHECK(notes.find("at full resumption") != std::string::npos);
  int priced = 0;
  for (const auto& t : doc["probe"]["targets"]) {
    if (!t.contains("load")) continue;
    for (const auto& p : t["load"]["prices"]) {
      ++priced;
      double r = p["resumption_rate"], f = p["full_per_s"], res = p["resumed_per_s"],
             today = p["today_per_s"];
      CAPTURE(p.dump());
      // Two masters with their own keys: about half the attempts resume (test_probe_nginx).
      CHECK(r > 0);
      CHECK(r < 1);
      CHECK(today == doctest::Approx(1.0 / ((1 - r) / f + r / res)));
      CHECK(p["full_resumption_per_s"].get<double>() == doctest::Approx(res));
    }
  }
  CHECK(priced >= 1);

  SUBCASE("without --load nothing is loaded") {
    auto plain = check_json(conf, {"--instances", "2"}, rc);
    for (const auto& t : plain["probe"]["targets"]) CHECK_FALSE(t.contains("load"));
  }
}

TEST_CASE("Ctrl-C or SIGTERM during check --sandbox --load stops at once with the partial report") {
  test::temp_dir dir;
  auto conf = no_key_file_conf(dir);
  std::string signal = "INT", cause = "Ctrl-C";
  int code = 130;
  SUBCASE("SIGINT") {}
  SUBCASE("SIGTERM: 128 + 15") {
    signal = "TERM";
    cause = "SIGTERM";
    code = 143;
  }
  auto t0 = std::chrono::steady_clock::now();
  // The sandbox is up and probed well within 4 s; the first 60 s load phase is under way.
  auto r = test::run({"timeout", "--preserve-status", "-s", signal, "4", test::ngxtls_binary(),
                      "check", conf, "--sandbox", "--instances", "2", "--load", "--duration", "60",
                      "--format", "json", "--fail-on", "never"},
                     "", 120);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == code);
  CHECK(s < 15);
  CHECK(r.err.find("interrupted (" + cause + "): the report is partial") != std::string::npos);
  REQUIRE_FALSE(r.out.empty());
  auto doc = json::parse(r.out);
  int loaded = 0;
  for (const auto& t : doc["probe"]["targets"]) {
    if (!t.contains("load")) continue;
    ++loaded;
    CHECK(t["load"]["interrupted"] == true);
    CHECK(t["load"]["phases"].at(0)["state"] == "interrupted");
  }
  CHECK(loaded == 1);
  std::string notes;
  for (const auto& n : doc["notes"]) notes += n.get<std::string>() + "\n";
  CHECK(notes.find("interrupted (" + cause + ")") != std::string::npos);
}

TEST_CASE("check --load needs --sandbox") {
  auto r = test::run(
      {test::ngxtls_binary(), "check", "/dev/null", "--endpoint", "127.0.0.1:1", "--load"}, "", 30);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--load needs --sandbox") != std::string::npos);
}
