// Saved sessions across nginx reloads: ticket key rotation
// (docs/nginx-facts.md#ticket-key-rotation, case B05) and auto keys thrown away on reload
// (docs/nginx-facts.md#ticket-keys-per-instance, case B06), through the CLI's
// --sess-out / --sess-in.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <memory>

#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

std::vector<std::string> probe_args(int port, const std::string& proto, int n) {
  return {"probe",
          "127.0.0.1:" + std::to_string(port),
          "--sni",
          "localhost",
          proto,
          "-n",
          std::to_string(n),
          "--no-ocsp"};
}

const nlohmann::json& only_run(const nlohmann::json& j) {
  const auto& protos = j.at("targets").at(0).at("protocols");
  if (protos.size() != 1) throw std::runtime_error("expected one run, got " + protos.dump());
  return protos.at(0);
}

}  // namespace

TEST_CASE(
    "key rotation: a session saved under [k1] resumes after reload to [k2,k1], not after reload to "
    "[k2]") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  std::string k1 = (dir.path() / "k1.key").string(), k2 = (dir.path() / "k2.key").string();
  std::string k1_name = tls::write_ticket_key_file(k1, 80);
  std::string k2_name = tls::write_ticket_key_file(k2, 80);
  int port = free_port();
  auto conf = [&](const std::vector<std::string>& keys) {
    std::string extra;
    for (const auto& k : keys) extra += "ssl_session_ticket_key " + k + "; ";
    return nginx_conf(2, tls_server(port, pki, extra));
  };
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(conf({k1}), no);

  for (const std::string proto : {"--tls1.3", "--tls1.2"}) {
    CAPTURE(proto);
    std::string sess = (dir.path() / ("sess" + proto + ".pem")).string();
    auto args = probe_args(port, proto, 4);
    args.insert(args.end(), {"--sess-out", sess});
    int rc = -1;
    auto j = ngxtls_json(args, &rc);
    CHECK(rc == 0);
    const auto& run = j.at("targets").at(0).at("protocols").at(0);
    CHECK(run.at("resumed") == 4);
    // The key name seen is the key file's first 16 bytes (docs/nginx-facts.md#ticket-key-rotation).
    REQUIRE(run.at("ticket_key_names").size() == 1);
    CHECK(run.at("ticket_key_names").begin().key() == k1_name);
    CHECK(run.at("offered_key_name") == k1_name);
    struct stat st {};
    REQUIRE(::stat(sess.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(read_file(sess).find("-----BEGIN SSL SESSION PARAMETERS-----") == 0);
  }

  ngx.reload(conf({k2, k1}));
  for (const std::string proto : {"--tls1.3", "--tls1.2"}) {
    CAPTURE(proto);
    auto args = probe_args(port, proto, 5);
    args.insert(args.end(), {"--sess-in", (dir.path() / ("sess" + proto + ".pem")).string()});
    auto j = ngxtls_json(args);
    const auto& run = only_run(j);
    CHECK(run.at("session_source") == "sess_in");
    CHECK(run.at("offered_key_name") == k1_name);
    CHECK(run.at("attempts") == 5);
    CHECK(run.at("resumed") == 5);  // k1 still decrypts
  }

  ngx.reload(conf({k2}));
  for (const std::string proto : {"--tls1.3", "--tls1.2"}) {
    CAPTURE(proto);
    auto args = probe_args(port, proto, 5);
    args.insert(args.end(), {"--sess-in", (dir.path() / ("sess" + proto + ".pem")).string()});
    auto j = ngxtls_json(args);
    const auto& run = only_run(j);
    CHECK(run.at("attempts") == 5);
    CHECK(run.at("resumed") == 0);  // the key that sealed it is gone
    // The full handshakes now bring tickets sealed with k2.
    CHECK(run.at("ticket_key_names").contains(k2_name));
  }
}

TEST_CASE("a reload with automatic ticket keys throws away every saved ticket") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(2, tls_server(port, pki, "ssl_session_cache shared:SSL:1m;")), no);
  std::map<std::string, std::string> before;
  for (const std::string proto : {"--tls1.3", "--tls1.2"}) {
    auto args = probe_args(port, proto, 3);
    std::string sess = (dir.path() / ("auto" + proto + ".pem")).string();
    args.insert(args.end(), {"--sess-out", sess});
    auto j = ngxtls_json(args);
    const auto& run = j.at("targets").at(0).at("protocols").at(0);
    CHECK(run.at("resumed") == 3);
    before[proto] = run.at("offered_key_name");
    // Before the reload the saved session resumes.
    auto again = probe_args(port, proto, 3);
    again.insert(again.end(), {"--sess-in", sess});
    CHECK(only_run(ngxtls_json(again)).at("resumed") == 3);
  }
  ngx.reload();
  for (const std::string proto : {"--tls1.3", "--tls1.2"}) {
    CAPTURE(proto);
    auto args = probe_args(port, proto, 5);
    args.insert(args.end(), {"--sess-in", (dir.path() / ("auto" + proto + ".pem")).string()});
    auto j = ngxtls_json(args);
    const auto& run = only_run(j);
    CHECK(run.at("attempts") == 5);
    CHECK(run.at("resumed") == 0);  // nginx 1.22: new per-SSL_CTX key on every reload
                                    // (docs/nginx-facts.md#ticket-keys-per-instance)
    REQUIRE(run.at("ticket_key_names").size() == 1);
    CHECK(run.at("ticket_key_names").begin().key() != before[proto]);  // a new key name
  }
}

namespace {

/// nginx masters sharing 127.0.0.1:port through reuseport, master i with the ticket key files
/// `keys` rotated by i: each encrypts with its own first key and decrypts with all of them.
struct masters_mid_rotation {
  masters_mid_rotation(const tls::pki_paths& pki, int port, const std::vector<std::string>& keys) {
    nginx_options no;
    no.wait_ports = {port};
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::string extra;
      for (std::size_t k = 0; k < keys.size(); ++k)
        extra += "ssl_session_ticket_key " + keys[(i + k) % keys.size()] + "; ";
      masters.push_back(std::make_unique<nginx_instance>(
          nginx_conf(1, tls_server(port, pki, extra, "reuseport")), no));
    }
  }
  std::vector<std::unique_ptr<nginx_instance>> masters;
};

}  // namespace

TEST_CASE(
    "two hosts mid-rotation ([k1, k2] and [k2, k1]) behind one address: two key names, every "
    "attempt resumes, a rotation in progress, not opaque tickets") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  std::string k1 = (dir.path() / "k1.key").string(), k2 = (dir.path() / "k2.key").string();
  const std::string k1_name = tls::write_ticket_key_file(k1, 80);
  const std::string k2_name = tls::write_ticket_key_file(k2, 80);
  const int port = free_port();
  masters_mid_rotation hosts(pki, port, {k1, k2});
  // TLS 1.3: every resumed connection brings a ticket sealed by the master it reached. (In
  // TLS 1.2 a resumed connection's renewed ticket does not reach OpenSSL's client new-session
  // callback, so key names come from the full handshakes only, two of them.)
  auto j = ngxtls_json(probe_args(port, "--tls1.3", 20));
  const auto& t = j.at("targets").at(0);
  const auto& run = only_run(j);
  INFO(run.dump());
  CHECK(run.at("attempts") == 20);
  CHECK(run.at("resumed") == 20);  // each master decrypts the other's tickets
  // The reuseport hash spreads connections over both masters: each name is seen unless all of
  // the run's 21 connections land on one master (about 2^-20).
  REQUIRE(run.at("ticket_key_names").size() == 2);
  CHECK(run.at("ticket_key_names").contains(k1_name));
  CHECK(run.at("ticket_key_names").contains(k2_name));
  CHECK(run.at("opaque_tickets") == 0);
  CHECK(run.at("opaque_reason").is_null());
  const std::string verdicts = t.at("verdicts").dump();
  CHECK(verdicts.find("connections reach 2 different ticket keys, and 20 of 20 attempts "
                      "resumed: every server accepts both keys (a key rotation in progress") !=
        std::string::npos);
  CHECK(verdicts.find("expect about 1/2") == std::string::npos);
  CHECK(verdicts.find("tickets are opaque") == std::string::npos);
}

TEST_CASE(
    "three hosts that each encrypt with their own key and decrypt every key: three names all "
    "resuming are reported opaque, with both readings of why") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  std::vector<std::string> keys, names;
  for (const char* k : {"k1.key", "k2.key", "k3.key"}) {
    keys.push_back((dir.path() / k).string());
    names.push_back(tls::write_ticket_key_file(keys.back(), 80));
  }
  const int port = free_port();
  masters_mid_rotation hosts(pki, port, keys);
  auto j = ngxtls_json(probe_args(port, "--tls1.3", 30));
  const auto& t = j.at("targets").at(0);
  const auto& run = only_run(j);
  INFO(run.dump());
  CHECK(run.at("attempts") == 30);
  CHECK(run.at("resumed") == 30);
  // Three names would predict about 1/3: the probe makes no key-domain claim, and its reason
  // names both explanations (here the prefixes are key names, for stunnel they are not).
  CHECK(run.at("ticket_key_names").empty());
  CHECK(run.at("opaque_tickets") == run.at("stateless_tickets"));
  REQUIRE(run.at("opaque_reason").is_string());
  CHECK(run.at("opaque_reason") ==
        "3 different ticket prefixes repeat, but 30 of 30 attempts resumed (3 ticket keys would "
        "give about 1/3): either the first 16 bytes are not key names, or every server accepts "
        "every key");
  const std::string verdicts = t.at("verdicts").dump();
  CHECK(verdicts.find("different ticket keys; expect about") == std::string::npos);
  CHECK(verdicts.find("tickets are opaque: ") != std::string::npos);
}
