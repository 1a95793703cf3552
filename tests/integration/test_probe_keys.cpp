// Saved sessions across nginx reloads: ticket key rotation
// (docs/nginx-facts.md#ticket-key-rotation, case B05) and auto keys thrown away on reload
// (docs/nginx-facts.md#ticket-keys-per-instance, case B06), through the CLI's
// --sess-out / --sess-in.
#include <doctest/doctest.h>
#include <sys/stat.h>

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
