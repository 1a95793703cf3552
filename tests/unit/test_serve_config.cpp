// ngxtls serve's inputs without a network: the allow list, the TOML config, Prometheus's web
// configuration file, basic auth against bcrypt hashes, and the exposition text.
#include <crypt.h>
#include <doctest/doctest.h>
#include <openssl/evp.h>

#include "base/error.hpp"
#include "serve/allow_list.hpp"
#include "serve/exposition.hpp"
#include "serve/http_server.hpp"
#include "serve/request_head.hpp"
#include "serve/serve_config.hpp"
#include "serve/web_config.hpp"
#include "support/process.hpp"

using namespace ngxtls;
using namespace ngxtls::serve;

namespace {

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(::crypt_gensalt_rn("$2b$", 5, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  const char* h = ::crypt_r(password.c_str(), salt, &data);
  REQUIRE(h != nullptr);
  return h;
}

std::string basic(const std::string& user_password) {
  std::string out(4 * ((user_password.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(user_password.data()),
                          static_cast<int>(user_password.size()));
  out.resize(static_cast<std::size_t>(n));
  return "Basic " + out;
}

}  // namespace

TEST_CASE(
    "allow list: exact names and leading wildcards with port ranges and IPv6 without regard to "
    "case") {
  std::vector<allow_pattern> p = {
      parse_allow_pattern("*.Example.com:443"), parse_allow_pattern("127.0.0.1:8000-8010"),
      parse_allow_pattern("[::1]:*"), parse_allow_pattern("exact.org:8443")};
  CHECK(allowed(p, "www.example.com", 443));
  CHECK(allowed(p, "a.b.EXAMPLE.com", 443));
  CHECK_FALSE(allowed(p, "example.com", 443));       // the wildcard needs one label more
  CHECK_FALSE(allowed(p, "evilexample.com", 443));   // not a label boundary
  CHECK_FALSE(allowed(p, "www.example.com", 8443));  // wrong port
  CHECK(allowed(p, "127.0.0.1", 8000));
  CHECK(allowed(p, "127.0.0.1", 8010));
  CHECK_FALSE(allowed(p, "127.0.0.1", 8011));
  CHECK_FALSE(allowed(p, "127.0.0.2", 8005));
  CHECK(allowed(p, "::1", 1));
  CHECK(allowed(p, "exact.org", 8443));
  CHECK_FALSE(allowed(p, "www.exact.org", 8443));
  CHECK_FALSE(allowed({}, "anything", 443));
  for (const char* bad : {"example.com", "a*.example.com:443", "*.*.com:443", "x:0", "x:65536",
                          "x:10-5", ":443", "[::1:443", "x:abc", "*example.com:443"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_allow_pattern(bad), std::invalid_argument);
  }
}

TEST_CASE("serve config: modules start from the prober's defaults and every key is checked") {
  test::temp_dir d;
  auto path = d.write("serve.toml", R"(allow = ["*.example.com:443"]
min_interval_seconds = 30
max_probes_in_flight = 4
http_header_timeout_ms = 2500

[modules.tls13]
protocols = ["TLSv1.3"]
attempts = 5
ocsp = false
connect = "127.0.0.1"

[modules.plain]
)");
  auto c = load_serve_config(path.string());
  CHECK(c.allow.size() == 1);
  CHECK(c.min_interval_seconds == 30);
  CHECK(c.max_probes_in_flight == 4);
  CHECK(c.http_header_timeout_ms == 2500);
  CHECK(default_serve_config().http_header_timeout_ms == 10000);
  REQUIRE(c.modules.count("default") == 1);
  REQUIRE(c.modules.count("tls13") == 1);
  const auto& m = c.modules.at("tls13");
  CHECK(m.options.tls13);
  CHECK_FALSE(m.options.tls12);
  CHECK(m.options.attempts == 5);
  CHECK_FALSE(m.options.ocsp);
  CHECK(m.connect == "127.0.0.1");
  const probe::probe_options defaults;
  CHECK(c.modules.at("plain").options.attempts == defaults.attempts);
  CHECK(c.modules.at("plain").options.per_target == defaults.per_target);
  CHECK(c.modules.at("plain").options.timeout_ms == defaults.timeout_ms);

  struct bad_case {
    const char* text;
    const char* message;
  };
  for (const auto& b : std::vector<bad_case>{
           {"allow = [\"nope\"]\n", ":1:10: allow: \"nope\": an entry is HOST:PORTS"},
           {"x = 1\n", ":1:5: unknown key \"x\""},
           {"http_header_timeout_ms = 50\n", ":1:26: \"http_header_timeout_ms\" must be"},
           {"[modules.a]\nattempts = -1\n", ":2:12: \"attempts\" must be a whole number from 0"},
           {"[modules.a]\nprotocols = [\"SSLv3\"]\n", "unknown protocol \"SSLv3\""},
           {"[modules.a]\ntimeout = 5\n", "unknown key \"timeout\" in [modules.a]"},
           {"[modules.\"a b\"]\n", "module name \"a b\" must be"},
           {"[modules.a]\nconnect = \"h:99999\"\n", "[modules.a]:"},
           {"allow = [\n", ":2:1: TOML syntax error"},
           {"a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
            "deeper than the limit"},
       }) {
    CAPTURE(b.text);
    auto p = d.write("bad.toml", b.text);
    CHECK(input_error_of([&] { load_serve_config(p.string()); }).find(b.message) !=
          std::string::npos);
  }
  CHECK(input_error_of([&] {
          load_serve_config((d.path() / "missing.toml").string());
        }).find("missing.toml") != std::string::npos);
  auto big = d.write("big.toml", "# " + std::string(max_serve_config_bytes, 'x') + "\n");
  CHECK(input_error_of([&] { load_serve_config(big.string()); }).find("max_serve_config_bytes") !=
        std::string::npos);
}

TEST_CASE(
    "web config: TLS files relative to the file and bcrypt users while unsupported keys are "
    "refused") {
  test::temp_dir d;
  const std::string hash = bcrypt("s3cret");
  auto path = d.write("web.yml",
                      "tls_server_config:\n  cert_file: tls/cert.pem\n  key_file: "
                      "/abs/key.pem\nbasic_auth_users:\n  alice: " +
                          hash + "\n");
  auto w = load_web_config(path.string());
  CHECK(w.cert_file == (d.path() / "tls/cert.pem").string());
  CHECK(w.key_file == "/abs/key.pem");
  CHECK(w.basic_auth_users.at("alice") == hash);

  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"tls_server_config:\n  cert_file: a\n", "needs both cert_file and key_file"},
           {"tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n",
            ":2:3: tls_server_config.client_auth_type is not supported"},
           {"http_server_config:\n  http2: false\n",
            ":1:1: \"http_server_config\" is not supported"},
           {"basic_auth_users:\n  bob: plaintext\n",
            ":2:8: the password of \"bob\" must be a bcrypt"},
           {"basic_auth_users: [\n", "YAML error"},
           {std::string(40, '[') + std::string(40, ']') + "\n", "nested deeper than the limit"},
       }) {
    // CAPTURE's lambda cannot capture a structured binding under clang 14: a named reference.
    const auto& text_shown = text;
    CAPTURE(text_shown);
    auto p = d.write("bad.yml", text);
    CHECK(input_error_of([&] { load_web_config(p.string()); }).find(message) != std::string::npos);
  }
}

TEST_CASE(
    "basic auth: the right password passes while a wrong password or unknown user or junk fails") {
  basic_auth auth({{"alice", bcrypt("s3cret")}});
  CHECK_FALSE(auth.disabled());
  CHECK(auth.check(basic("alice:s3cret")));
  CHECK(auth.check(basic("alice:s3cret")));  // remembered
  CHECK_FALSE(auth.check(basic("alice:s3cret2")));
  CHECK_FALSE(auth.check(basic("alice:")));
  CHECK_FALSE(auth.check(basic("mallory:s3cret")));
  CHECK_FALSE(auth.check("Basic !!!"));
  CHECK_FALSE(auth.check("Bearer x"));
  CHECK_FALSE(auth.check(""));
  CHECK(basic_auth({}).disabled());
}

TEST_CASE(
    "basic auth: an unknown user costs one bcrypt as a wrong password does and a remembered "
    "header none") {
  basic_auth auth({{"alice", bcrypt("s3cret")}});
  const auto before = auth.hashes_computed();
  CHECK_FALSE(auth.check(basic("mallory:s3cret")));
  CHECK(auth.hashes_computed() == before + 1);
  CHECK_FALSE(auth.check(basic("alice:wrong")));
  CHECK(auth.hashes_computed() == before + 2);
  CHECK_FALSE(auth.check(basic(std::string("mallory:s3cret\0x", 16))));
  CHECK(auth.hashes_computed() == before + 3);
  CHECK_FALSE(auth.remembered(basic("alice:s3cret")));
  CHECK(auth.check(basic("alice:s3cret")));
  CHECK(auth.hashes_computed() == before + 4);
  CHECK(auth.remembered(basic("alice:s3cret")));
  CHECK(auth.check(basic("alice:s3cret")));
  CHECK(auth.hashes_computed() == before + 4);
  // Junk that names no user costs nothing and passes nothing.
  CHECK_FALSE(auth.check("Basic !!!"));
  CHECK(auth.hashes_computed() == before + 4);
}

TEST_CASE("allow list: every spelling of a host is one host") {
  CHECK(canonical_host("LocalHost.") == "localhost");
  CHECK(canonical_host("0:0::1") == "::1");
  CHECK(canonical_host("0000:0000:0000:0000:0000:0000:0000:0001") == "::1");
  CHECK(canonical_host("FE80::1%eth0") == "fe80::1%eth0");  // with a zone id: lower case only
  CHECK(canonical_host("127.0.0.1") == "127.0.0.1");
  CHECK(canonical_host("example.com") == "example.com");
  std::vector<allow_pattern> p = {parse_allow_pattern("[0::1]:443"),
                                  parse_allow_pattern("Example.COM.:443")};
  CHECK(allowed(p, "::1", 443));
  CHECK(allowed(p, "example.com.", 443));
  CHECK(allowed(p, "EXAMPLE.com", 443));
}

TEST_CASE("--listen: loopback addresses are told from the others") {
  for (const char* lo : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    CAPTURE(lo);
    CHECK(is_loopback_address(lo));
  }
  for (const char* wide : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.1", "fe80::1", "128.0.0.1"}) {
    CAPTURE(wide);
    CHECK_FALSE(is_loopback_address(wide));
  }
}

TEST_CASE("--listen: numeric IPv4 and [IPv6] with a port while names and junk are refused") {
  CHECK(parse_listen_address("127.0.0.1:10924").port == 10924);
  CHECK(parse_listen_address("[::1]:0").host == "::1");
  CHECK(parse_listen_address(default_listen).host == "127.0.0.1");
  for (const char* bad : {"localhost:80", "127.0.0.1", "127.0.0.1:70000", "[::1:80", "::1:80"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_listen_address(bad), usage_error);
  }
}

TEST_CASE("exposition: HELP and TYPE per family and escaped labels and no target label in /probe") {
  metric_family f("x_total", metric_type::counter, "Things");
  f.add({{"a", "q\"uo\\te\nnl"}}, 3);
  std::string out;
  f.write(out);
  CHECK(out ==
        "# HELP x_total Things\n# TYPE x_total counter\nx_total{a=\"q\\\"uo\\\\te\\nnl\"} 3\n");
  CHECK(sample_value(0.5) == "0.5");
  CHECK(sample_value(1.0 / 0.0) == "+Inf");

  probe::target_result r;
  r.target = "a.example.com:443";
  probe::run_result run;
  run.protocol = probe::tls_protocol::tls1_3;
  run.mechanism = probe::resumption_mechanism::ticket;
  run.mode = probe::offer_mode::same_session;
  run.connections = 11;
  run.attempts = 10;
  run.resumed = 5;
  run.rate = 0.5;
  run.ticket_key_names = {{"aa", 3}, {"bb", 4}};
  r.protocols.push_back(run);
  auto text = probe_exposition(r, 0.25, 12);
  CHECK(text.find("# TYPE ngxtls_probe_success gauge\nngxtls_probe_success 1\n") !=
        std::string::npos);
  CHECK(text.find("ngxtls_probe_duration_seconds 0.25\n") != std::string::npos);
  CHECK(text.find("ngxtls_probe_result_age_seconds 12\n") != std::string::npos);
  CHECK(text.find("ngxtls_resumption_ratio{protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_"
                  "session\"} 0.5\n") != std::string::npos);
  CHECK(text.find("ngxtls_ticket_key_names{protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_"
                  "session\"} 2\n") != std::string::npos);
  CHECK(text.find("target=") == std::string::npos);
  r.error = "refused";
  CHECK(probe_exposition(r, 0.1, 0).find("ngxtls_probe_success 0\n") != std::string::npos);
}

TEST_CASE("request head: a head read a byte at a time gets the verdict of the whole head") {
  using kind = head_verdict::kind;
  const std::vector<std::pair<std::string, int>> heads = {
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0},
      {"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nX:\r\n y\r\n\r\n", 400},
      {std::string("GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n", 35), 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.0\r\n\r\n", 0},
      {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
  };
  for (const auto& [head, status] : heads) {
    CAPTURE(head);
    const auto whole = check_request_head(head);
    CHECK(whole.status == status);
    CHECK((whole.what == kind::accept) == (status == 0));
    if (status == 0) CHECK(whole.length == head.size());
    std::string fed;
    std::size_t scanned = 0;
    head_verdict v;
    for (char c : head) {
      fed += c;
      v = check_request_head(fed, &scanned);
      if (v.what != kind::incomplete) break;
    }
    CHECK(v.what == whole.what);
    CHECK(v.status == whole.status);
    CHECK(v.length == whole.length);
  }
  // What follows a head is the next request's: not part of this one.
  const auto two = check_request_head("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n");
  CHECK(two.what == kind::accept);
  CHECK(two.length == 27);
  CHECK(check_request_head("GET / HTTP/1.1\r\nHost: x\r\n").what == kind::incomplete);
  CHECK(check_request_head("GET /" + std::string(max_request_head_bytes, 'a')).status == 414);
  CHECK(check_request_head("GET / HTTP/1.1\r\nX: " + std::string(max_request_head_bytes, 'a'))
            .status == 431);
  // Expect is dropped from what is handed on; the rest of the head is kept as sent.
  const auto expect =
      check_request_head("GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nX: y\r\n\r\n");
  REQUIRE(expect.rewritten);
  CHECK(*expect.rewritten == "GET / HTTP/1.1\r\nHost: x\r\nX: y\r\n\r\n");
}

TEST_CASE("answer tracker: an answer ends after its Content-Length, at once for HEAD, after 1xx") {
  answer_tracker t;
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  t.start(false);
  for (std::size_t i = 0; i + 1 < ok.size(); ++i) CHECK(t.feed(ok.substr(i, 1)) == 1);
  CHECK_FALSE(t.done());
  CHECK(t.feed(ok.substr(ok.size() - 1) + "extra") == 1);
  CHECK(t.done());
  t.start(true);
  CHECK(t.feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n") == 38);
  CHECK(t.done());
  t.start(false);
  const std::string interim = "HTTP/1.1 100 Continue\r\n\r\n";
  CHECK(t.feed(interim + ok) == interim.size() + ok.size());
  CHECK(t.done());
  t.start(false);
  CHECK(t.feed("HTTP/1.1 200 OK\r\n\r\nbody") == 23);
  CHECK(t.until_close());
}
