// Progress on a terminal for the long commands, `probe --load` (each phase's countdown and
// rate) and `check --sandbox` (each step): drawn on stderr only when it is a terminal (script(1)
// gives the command one), redrawn in place and erased at the end; without a terminal stderr
// holds the same lines, and nothing else.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "probe_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

const std::string erase = "\r\x1b[K";

/// What a terminal was sent on stderr, split at each erase: the progress lines drawn (pieces
/// with no newline) and the rest, as it would read without a terminal.
struct terminal_stderr {
  std::vector<std::string> drawn;
  std::string rest;
  bool ends_erased = true;  ///< no progress line is left standing at the end
};

terminal_stderr split(std::string out) {
  // The terminal turns "\n" into "\r\n".
  for (std::size_t at; (at = out.find("\r\n")) != std::string::npos;) out.replace(at, 2, "\n");
  terminal_stderr t;
  std::size_t from = 0;
  bool first = true;
  for (;;) {
    const std::size_t at = out.find(erase, from);
    const std::string piece = out.substr(from, at == std::string::npos ? at : at - from);
    const bool draw = !first && !piece.empty() && piece.find('\n') == std::string::npos;
    if (draw)
      t.drawn.push_back(piece);
    else
      t.rest += piece;
    if (at == std::string::npos) {
      t.ends_erased = !draw;
      return t;
    }
    first = false;
    from = at + erase.size();
  }
}

/// `argv` run with stderr on a terminal (stdout to `stdout_file`): what the terminal got.
std::string on_terminal(const std::vector<std::string>& argv, const std::string& stdout_file) {
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  cmd += "> '" + stdout_file + "'";
  auto r = run({"script", "-qec", cmd, "/dev/null"}, "", 180);
  return r.out;
}

bool has(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "probe --load on a terminal counts each phase down with its rate and erases the line; piped "
    "stderr has only the plan and phase lines") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  const int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  nginx_instance ngx(nginx_conf(1, tls_server(port, pki, "")), no);
  const std::vector<std::string> argv = {ngxtls_binary(),
                                         "probe",
                                         "127.0.0.1:" + std::to_string(port),
                                         "--sni",
                                         "localhost",
                                         "--tls1.3",
                                         "-n",
                                         "2",
                                         "--no-ocsp",
                                         "--load",
                                         "--duration",
                                         "2",
                                         "--max-rate",
                                         "100",
                                         "--format",
                                         "json"};
  auto piped = run(argv, "", 120);
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.err.find('\r') == std::string::npos);
  CHECK(piped.err.find('\x1b') == std::string::npos);
  // Without a terminal: the plan line and one line per phase (full, resumed), nothing else.
  CHECK(piped.err.rfind("ngxtls: load on 127.0.0.1:" + std::to_string(port), 0) == 0);
  CHECK(piped.err.find("\nngxtls: load: full TLS 1.3\nngxtls: load: TLS 1.3 PSK\n") !=
        std::string::npos);
  CHECK(std::count(piped.err.begin(), piped.err.end(), '\n') == 3);

  auto t = split(on_terminal(argv, (dir.path() / "out.json").string()));
  INFO(t.rest);
  CHECK(has(t.drawn, "ngxtls: load: full TLS 1.3: "));
  CHECK(has(t.drawn, "ngxtls: load: TLS 1.3 PSK: "));
  // The ordinary probe before the load draws its bar the same way.
  CHECK(has(t.drawn, " connections, 1/1 targets"));
  CHECK(has(t.drawn, " s left, "));
  CHECK(has(t.drawn, " handshakes/s ("));
  // A 2 s phase counts down from 2 s (the first draw) and is redrawn at most 4 times a second:
  // 2 phases, 2 s each, at most about 9 draws each.
  CHECK(has(t.drawn, ": 2 s left, "));
  int load_draws = 0;
  for (const auto& d : t.drawn) load_draws += d.find(" s left, ") != std::string::npos ? 1 : 0;
  CHECK(load_draws <= 20);
  CHECK(t.ends_erased);
  // The rest is what stderr holds without a terminal.
  CHECK(t.rest == piped.err);
  CHECK_NOTHROW(nlohmann::json::parse(read_file(dir.path() / "out.json")));
}

TEST_CASE(
    "check --sandbox on a terminal shows each step and erases the line; piped stderr is "
    "unchanged") {
  temp_dir dir;
  auto pki = tls::make_pki((dir.path() / "pki").string(), {});
  const auto conf =
      dir.write("nginx.conf",
                "events {}\nhttp {\n  server {\n    listen 443 ssl;\n"
                "    server_name localhost;\n    ssl_protocols TLSv1.2 TLSv1.3;\n"
                "    ssl_certificate " +
                    pki.chain + ";\n    ssl_certificate_key " + pki.leaf_key + ";\n  }\n}\n");
  const std::vector<std::string> argv = {
      ngxtls_binary(), "check",     conf.string(), "--sandbox", "-n",        "2",
      "--tls1.3",      "--no-ocsp", "--format",    "json",      "--fail-on", "never"};
  auto piped = run(argv, "", 180);
  INFO(piped.err);
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.err.find('\r') == std::string::npos);
  CHECK(piped.err.find('\x1b') == std::string::npos);
  CHECK(piped.err.find("check: ") == std::string::npos);

  auto t = split(on_terminal(argv, (dir.path() / "out.json").string()));
  std::string shown;
  for (const auto& d : t.drawn) shown += d + "\n";
  INFO(shown);
  for (const char* step :
       {"ngxtls: check: linting " /* the config's path follows */,
        "check: writing the sandbox config", "check: nginx -t of the sandbox config",
        "check: nginx -t of the whole config", "check: starting nginx",
        "check: probing 1 target (localhost)", "check: offering sessions across server names",
        "check: judging the findings", "check: stopping nginx"})
    CHECK(has(t.drawn, step));
  CHECK(t.ends_erased);
  CHECK(t.rest == piped.err);
  CHECK_NOTHROW(nlohmann::json::parse(read_file(dir.path() / "out.json")));
}
