#include "sandbox/sandbox.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "config/paths.hpp"
#include "tls/certificate.hpp"
#include "tls/ciphers.hpp"
#include "tls/pki.hpp"
#include "tls/ticket_key.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

using clock_type = std::chrono::steady_clock;

// Directives that may repeat in one server (nginx keeps them as arrays); any other directive
// is single-valued and only its last occurrence counts (model::setting).
const std::set<std::string> k_repeatable = {"ssl_certificate", "ssl_certificate_key",
                                            "ssl_session_ticket_key", "ssl_conf_command",
                                            "ssl_passwords"};
// The directives of nginx's own ngx_http_ssl_module and ngx_stream_ssl_module (nginx 1.22 to
// 1.27): the only ssl_* directives the sandbox copies. Anything else named ssl_* comes from
// another module (lua-nginx-module's ssl_*_by_lua*, ngx_stream_ssl_preread_module) or is
// unknown; ssl_key_log is left out too: it writes TLS secrets to a file outside the run.
const std::set<std::string> k_ssl_module_directives = {"ssl_certificate",
                                                       "ssl_certificate_key",
                                                       "ssl_password_file",
                                                       "ssl_dhparam",
                                                       "ssl_ecdh_curve",
                                                       "ssl_protocols",
                                                       "ssl_ciphers",
                                                       "ssl_buffer_size",
                                                       "ssl_verify_client",
                                                       "ssl_verify_depth",
                                                       "ssl_client_certificate",
                                                       "ssl_trusted_certificate",
                                                       "ssl_prefer_server_ciphers",
                                                       "ssl_session_cache",
                                                       "ssl_session_tickets",
                                                       "ssl_session_ticket_key",
                                                       "ssl_session_timeout",
                                                       "ssl_crl",
                                                       "ssl_ocsp",
                                                       "ssl_ocsp_responder",
                                                       "ssl_ocsp_cache",
                                                       "ssl_stapling",
                                                       "ssl_stapling_file",
                                                       "ssl_stapling_responder",
                                                       "ssl_stapling_verify",
                                                       "ssl_early_data",
                                                       "ssl_conf_command",
                                                       "ssl_reject_handshake",
                                                       "ssl_handshake_timeout",
                                                       "ssl_alpn",
                                                       "ssl_certificate_cache"};
// Files a copied file argument may be at most: the copy is read whole.
constexpr std::uintmax_t k_max_material_bytes = 64u << 20;

// A module file nginx may load for the sandbox: a regular file in a directory, both owned by
// root (or this user) and writable by no one else.
bool trusted_module(const std::string& path) {
  auto ok = [](const std::string& p, bool dir) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
           (st.st_uid == 0 || st.st_uid == ::getuid()) && !(st.st_mode & 022);
  };
  return ok(path, false) && ok(fs::path(path).parent_path().string(), true);
}

// A closed local port for stand-in OCSP URLs: connecting is refused at once, nothing leaves the
// host.
constexpr const char* k_dead_responder = "http://127.0.0.1:9/";

/// Key types a stand-in certificate can have when the real one is not readable.
enum class standin_key { ec, rsa };

// The key type the server's own TLS 1.2 cipher list can use: RSA when every suite it enables
// authenticates with RSA (an EC certificate would fail every TLS 1.2 handshake), EC otherwise,
// also when no protocol below TLS 1.3 is on (TLS 1.3 suites serve any key type).
standin_key preferred_standin_key(const model::server& s) {
  const auto* protocols = s.get("ssl_protocols");
  if (!model::protocols_enable(protocols, "TLSv1.2") &&
      !model::protocols_enable(protocols, "TLSv1.1") &&
      !model::protocols_enable(protocols, "TLSv1"))
    return standin_key::ec;
  const auto* ciphers = s.get("ssl_ciphers");
  if (!ciphers || ciphers->first().empty()) return standin_key::ec;
  bool rsa = false, ecdsa = false;
  try {
    for (const auto& c : tls::expand_cipher_string(std::string(ciphers->first()))) {
      rsa = rsa || c.auth == "RSA";
      ecdsa = ecdsa || c.auth == "ECDSA";
    }
  } catch (const std::exception&) {
    return standin_key::ec;  // nginx -t reports the list; the key type does not matter then
  }
  return rsa && !ecdsa ? standin_key::rsa : standin_key::ec;
}

std::string resolve(const model::model& m, const std::string& path) {
  if (path.empty() || !m.cfg) return path;
  // Absolute: the sandbox nginx runs with another prefix.
  return fs::absolute(config::resolve_file(m.cfg->conf_prefix, path)).lexically_normal().string();
}

bool readable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

bool literal_name(const std::string& n) {
  return !n.empty() && n != "_" && n[0] != '~' && n.find('*') == std::string::npos &&
         n.find('$') == std::string::npos;
}

// A random port below Linux's ephemeral range (32768-60999) that binds right now: random so
// that sandboxes started at the same moment rarely pick the same one (bind(0) hands out
// neighbours), below the range so that outgoing connections do not take it meanwhile. Still
// a race: the start retries with new ports when nginx cannot bind.
int free_loopback_port(std::set<int>& taken) {
  static std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int attempt = 0; attempt < 256; ++attempt) {
    const int port = pick(rng);
    if (taken.count(port)) continue;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) {
      taken.insert(port);
      return port;
    }
  }
  throw target_error("sandbox: no free port on 127.0.0.1");
}

bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string describe_key(const tls::pki_options& o) {
  if (o.key_type == "rsa") return "RSA " + std::to_string(o.rsa_bits);
  if (o.key_type == "ec") return "EC " + o.curve;
  return "Ed25519";
}

// nginx -t's first [emerg] line: message and line number in the generated config.
struct emerg {
  std::string message;
  int line = 0;
};

std::optional<emerg> first_emerg(const std::string& err, const std::string& conf_path) {
  std::istringstream in(err);
  std::string l;
  while (std::getline(in, l)) {
    auto at = l.find("[emerg] ");
    if (at == std::string::npos) continue;
    emerg e;
    e.message = l.substr(at + 8);
    const std::string tail = " in " + conf_path + ":";
    auto t = e.message.rfind(tail);
    if (t != std::string::npos) {
      try {
        e.line = std::stoi(e.message.substr(t + tail.size()));
      } catch (const std::exception&) {
        e.line = 0;
      }
      e.message.resize(t);
    }
    return e;
  }
  return std::nullopt;
}

}  // namespace

bool loopback_host(std::string host) {
  if (host.size() > 1 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1") return true;
  in_addr a{};
  return ::inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string host_of(std::string arg) {
  if (auto at = arg.find("://"); at != std::string::npos) arg = arg.substr(at + 3);
  arg = arg.substr(0, arg.find('/'));
  if (!arg.empty() && arg[0] == '[') return arg.substr(0, arg.find(']') + 1);
  if (std::count(arg.begin(), arg.end(), ':') > 1) return arg;  // a bare IPv6 address
  return arg.substr(0, arg.find(':'));
}

std::string default_sandbox_base() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  return base + "/ngxtls-sandbox-" + std::to_string(::getuid());
}

std::string quote_token(const std::string& arg) {
  std::string out = "\"";
  for (char c : arg) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

sandbox::sandbox(const model::model& m, const sandbox_options& o) {
  if (!m.cfg) throw target_error("sandbox: the model has no configuration");
  binary_ = find_executable(o.nginx_binary.empty() ? "nginx" : o.nginx_binary);
  if (binary_.empty())
    throw usage_error(o.nginx_binary.empty() ? "check --sandbox: no nginx on PATH or in /usr/sbin "
                                               "(install Debian's nginx, or pass --nginx BIN)"
                                             : "check --sandbox: --nginx " + o.nginx_binary +
                                                   " is not an executable file");
  binary_ = fs::absolute(binary_).string();
  instances_ = std::max(1, o.instances);
  max_workers_ = o.max_workers;
  timeout_ms_ = o.start_timeout_ms;
  {
    auto v = run_command({binary_, "-V"}, 10000);
    std::string text = v.err.empty() ? v.out : v.err;
    if (v.exit_code != 0 || text.find("nginx") == std::string::npos)
      throw target_error("sandbox: `" + binary_ + " -V` failed (exit " +
                         std::to_string(v.exit_code) + "): is it nginx?");
    version_ = text.substr(0, text.find('\n'));
    if (auto at = text.find("configure arguments:"); at != std::string::npos)
      configure_ = text.substr(at) + " ";
    std::replace(configure_.begin(), configure_.end(), '\n', ' ');
    auto configured = [&](const std::string& opt, const std::string& fallback) {
      auto at = configure_.find(" " + opt + "=");
      if (at == std::string::npos) return fallback;
      at += opt.size() + 2;
      return configure_.substr(at, configure_.find_first_of(" \n", at) - at);
    };
    // The compiled-in prefix, against which relative load_module paths resolve.
    prefix_ = configured("--prefix", "/usr/local/nginx");
    modules_path_ = configured("--modules-path", prefix_ + "/modules");
  }
  network_isolated_ = o.network_isolated;
  ident_ = choose_sandbox_identity();

  // Run directory: private, swept by later runs if this one is killed.
  const std::string base = fs::absolute(o.base_dir.empty() ? default_sandbox_base() : o.base_dir)
                               .lexically_normal()
                               .string();
  std::error_code ec;
  fs::create_directories(base, ec);
  struct stat bst {};
  if (::lstat(base.c_str(), &bst) != 0 || !S_ISDIR(bst.st_mode) || bst.st_uid != ::getuid())
    throw target_error(
        "sandbox: " + base +
        " is not a directory owned by this user (set TMPDIR to a private directory)");
  ::chmod(base.c_str(), 0700);
  // Entries others could have planted while the directory was open to them are not trusted.
  if (bst.st_mode & 022)
    notes_.push_back({"", base + " was writable by others: left-over runs not swept this time"});
  else
    sweep_stale_runs(base);
  std::string tmpl = run_dir_template(base);
  if (!::mkdtemp(tmpl.data()))
    throw target_error("sandbox: cannot create a run directory in " + base);
  run_dir_ = tmpl;
  nginx_root_ = ident_.drop ? "/proc/self/cwd" : run_dir_;
  try {
    write_owner(run_dir_);
    // Run as root: the directory is root's, open (search only) to the sandbox gid alone.
    if (ident_.drop &&
        (::chown(run_dir_.c_str(), 0, ident_.gid) != 0 || ::chmod(run_dir_.c_str(), 0710) != 0))
      throw target_error("sandbox: cannot hand " + run_dir_ +
                         " to the sandbox identity: " + std::strerror(errno));
    fs::create_directories(run_dir_ + "/material");
    ::chmod((run_dir_ + "/material").c_str(), 0700);

    inst_dirs_.clear();
    for (int i = 0; i < instances_; ++i) {
      inst_dirs_.push_back(run_dir_ + "/instance-" + std::to_string(i + 1));
      fs::create_directories(inst_dirs_.back() + "/logs");
    }
    conf_path_ = run_dir_ + "/nginx.conf";
    if (ident_.drop)
      notes_.push_back(
          {"",
           "nginx runs as uid " + std::to_string(ident_.uid) + " and gid " +
               std::to_string(ident_.gid) +
               " (no account uses them; chosen for this run), not as root: it reads copies of the "
               "certificates, keys and other files it needs in the private run directory"});
    notes_.push_back(
        {"", network_isolated_
                 ? "network: ngxtls and nginx run in their own network namespace with loopback only"
                 : "network: no network namespace (" +
                       (o.no_namespace_reason.empty() ? std::string("not asked for")
                                                      : o.no_namespace_reason) +
                       "); resolver and OCSP responder values that point off-host are left out"});
    const std::size_t notes_before = notes_.size();
    // A port picked free can be taken before nginx binds it (another sandbox starting at the
    // same moment): then start again on new ports, at most eight times.
    for (int attempt = 1;; ++attempt) {
      generate(m);
      if (attempt == 1) test_whole_config(m);
      if (sockets_.empty()) {
        notes_.push_back({"", "no TLS server to start: the config has no listen socket with ssl"});
        break;
      }
      std::vector<std::vector<std::string>> argvs;
      std::vector<std::string> logs;
      for (const auto& d : inst_dirs_) {
        argvs.push_back({binary_, "-p", nx(d) + "/", "-e", nx(d) + "/logs/error.log", "-c",
                         nx(conf_path_), "-g", "daemon off;"});
        logs.push_back(d + "/logs/stderr.log");
        // Not through a link nginx (another uid) may have put there.
        const std::string log = d + "/logs/error.log";
        int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) ::close(fd);
      }
      hand_over();
      keeper_ = std::make_unique<keeper>(argvs, logs, run_dir_, setup());
      const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
      std::string failure;
      for (;;) {
        bool ready = static_cast<int>(keeper_->masters().size()) == instances_;
        for (const auto& ss : sockets_) ready = ready && port_accepts(ss.port);
        if (ready)
          for (pid_t mp : keeper_->masters())
            ready = ready && static_cast<int>(child_pids(mp).size()) >= workers_;
        if (ready) break;
        // nginx logs [emerg] and exits when it cannot start: do not wait out the deadline.
        for (const auto& d : inst_dirs_) {
          std::ifstream in(d + "/logs/error.log");
          for (std::string l; std::getline(in, l);)
            if (l.find("[emerg]") != std::string::npos) failure += "\n  " + from_nginx(l);
        }
        if (!failure.empty() || clock_type::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (failure.empty() && clock_type::now() <= deadline) break;
      // The run directory stays for the next attempt (a collision is retried in it).
      keeper_->stop(true);
      keeper_.reset();
      if (failure.find("Address already in use") != std::string::npos && attempt < 8) {
        ports_by_name_.clear();
        addr_display_.clear();
        notes_.resize(notes_before);
        continue;
      }
      throw target_error(failure.empty() ? "sandbox: nginx did not start within " +
                                               std::to_string(timeout_ms_) + " ms"
                                         : "sandbox: nginx did not start:" + shown(failure));
    }
  } catch (...) {
    stop();
    throw;
  }
}

std::string sandbox::nx(const std::string& path) const {
  if (!ident_.drop || path.compare(0, run_dir_.size(), run_dir_) != 0) return path;
  return nginx_root_ + path.substr(run_dir_.size());
}

std::string sandbox::from_nginx(std::string text) const {
  return ident_.drop ? replace_all(std::move(text), nginx_root_ + "/", run_dir_ + "/") : text;
}

child_setup sandbox::setup() const {
  child_setup cs;
  cs.identity = ident_;
  cs.nofile = nofile_;
  // Entered as root, so that the sandbox identity needs no right on the run directory's parents.
  if (ident_.drop) cs.cwd = run_dir_;
  return cs;
}

void sandbox::hand_over() const {
  if (!ident_.drop) return;
  const gid_t gid = ident_.gid;
  // Read-only material: root's, readable by the sandbox gid. Links are skipped (chmod would
  // follow them); nothing here makes any.
  auto give_readable = [&](const std::string& root) {
    std::error_code ec;
    auto one = [&](const fs::path& p) {
      struct stat st {};
      if (::lstat(p.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
      if (::lchown(p.c_str(), 0, gid) == 0) ::chmod(p.c_str(), S_ISDIR(st.st_mode) ? 0750 : 0640);
    };
    one(root);
    for (auto it = fs::recursive_directory_iterator(root, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      one(it->path());
  };
  give_readable(run_dir_ + "/material");
  if (fs::exists(conf_path_)) give_readable(conf_path_);
  // Instance directories: nginx writes its pid, logs and temp files there.
  for (const auto& d : inst_dirs_) {
    std::error_code ec;
    ::lchown(d.c_str(), ident_.uid, gid);
    ::chmod(d.c_str(), 0700);
    for (auto it = fs::recursive_directory_iterator(d, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (::lchown(it->path().c_str(), ident_.uid, gid) != 0) {
      }
  }
}

std::string sandbox::shown(std::string msg) const {
  for (const auto& [path, text] : display_of_) msg = replace_all(msg, path, text);
  for (const auto& [addr, text] : addr_display_) msg = replace_all(msg, addr, text);
  return replace_all(msg, run_dir_, "<sandbox>");
}

/// The sandbox's view of one server: what to emit, what was dropped.
struct sandbox::server_plan {
  std::size_t index = 0;  ///< index into model::servers
  std::string label;
  bool dropped = false;
  /// Directive and arguments (sandbox paths), and the linted directive of each.
  std::vector<std::pair<std::string, std::vector<std::string>>> lines;
  std::vector<const config::directive*> origins;
  std::vector<std::size_t> sockets;  ///< indexes into model::sockets
  /// Stand-in PKIs of its certificates (empty: every certificate is the real one).
  std::vector<tls::pki_paths> standin_pkis;
  bool real_ocsp_url = false;     ///< a leaf names an OCSP responder off this host
  bool all_have_ocsp_url = true;  ///< every readable leaf names one
  bool ocsp_url_unknown = false;  ///< a certificate could not be read
};

// The plan of one generation: what each phase of generate() adds, read by the later ones.
struct sandbox::generation_plan {
  /// What one rendered line stands for, to blame the right thing when nginx -t rejects it.
  enum class line_kind { other, server_head, listen, directive, stream_head };
  struct line_origin {
    line_kind kind = line_kind::other;
    std::size_t server = 0;                    ///< index into model::servers
    const config::directive* where = nullptr;  ///< the linted directive
    std::size_t plan_server = 0;               ///< directives: index into servers
    std::size_t line = 0;                      ///< directives: index into server_plan::lines
    int port = 0;                              ///< listen lines: the linted config's port
  };
  /// A listen line as written (options kept, so that nginx reports duplicate default servers and
  /// duplicate listen options as production would), moved to the socket's loopback port.
  struct listen_line {
    std::string head;  ///< "listen 127.0.0.1:P"
    std::string text;  ///< its parameters after `ssl`
    const config::directive* where = nullptr;
    int port = 0;            ///< the linted config's port
    std::size_t socket = 0;  ///< index into model::sockets
    bool ssl = false;        ///< written with `ssl`
  };

  std::map<std::size_t, int> port_of_socket;  ///< model::sockets index -> loopback port
  std::vector<server_plan> servers;
  std::vector<std::string> modules;     ///< load_module paths (the build's stream module)
  std::vector<std::string> temp_paths;  ///< *_temp_path lines inside the run directory
  std::map<std::size_t, std::vector<listen_line>> listens_of;   ///< servers index -> lines
  std::set<std::pair<std::size_t, std::size_t>> dropped_lines;  ///< (servers index, line)
  bool stream_dropped = false;  ///< the stream block is left out (no stream module)
};

void sandbox::generate(const model::model& m) {
  sockets_.clear();
  rejections_.clear();
  warnings_.clear();
  ssl_added_ports_.clear();
  untested_.clear();
  generation_plan plan;
  assign_ports(m, plan);
  plan_servers(m, plan);
  plan_workers_and_modules(m, plan);
  plan_listens(m, plan);
  test_with_blame(m, plan);
  record_served(m, plan);
}

void sandbox::assign_ports(const model::model& m, generation_plan& plan) {
  for (std::size_t k = 0; k < m.sockets.size(); ++k) {
    const auto& sock = m.sockets[k];
    if (sock.context == model::context_kind::mail) {
      notes_.push_back({"", "mail socket " + sock.name() +
                                ": not started, the sandbox runs http and stream servers"});
      continue;
    }
    bool tls = sock.ssl;
    // `ssl on` (nginx < 1.25.1) makes every listen of the server TLS.
    for (auto si : sock.servers) tls = tls || model::is_on(m.servers[si].get("ssl"));
    if (!tls) continue;
    bool tcp = false;
    for (auto si : sock.servers)
      for (const auto& l : m.servers[si].listens)
        if (l.port == sock.port && l.address == sock.address && !l.quic) tcp = true;
    if (!tcp) {
      notes_.push_back({"", "listen socket " + sock.name() +
                                " is QUIC (UDP) only: not started, the prober speaks TCP"});
      continue;
    }
    // The same socket keeps its port across generations (reload_into).
    const std::string key =
        (sock.context == model::context_kind::stream ? "stream " : "http ") + sock.name();
    auto known = ports_by_name_.find(key);
    plan.port_of_socket[k] =
        known != ports_by_name_.end() ? known->second : free_loopback_port(taken_);
    ports_by_name_[key] = plan.port_of_socket[k];
    addr_display_["127.0.0.1:" + std::to_string(plan.port_of_socket[k])] = sock.name();
  }
}

std::string sandbox::ticket_standin(const std::string& real, const std::string& label,
                                    const std::string& arg) {
  auto it = standin_of_.find(real);
  if (it != standin_of_.end()) return it->second;
  struct stat st {};
  std::size_t size = 80;
  if (::stat(real.c_str(), &st) == 0 && (st.st_size == 48 || st.st_size == 80))
    size = static_cast<std::size_t>(st.st_size);
  const std::string path = run_dir_ + "/material/ticket-" + std::to_string(++standins_) + ".key";
  tls::write_ticket_key_file(path, size);
  notes_.push_back(
      {label, "ssl_session_ticket_key \"" + arg + "\" is not readable here: stand-in key file of " +
                  std::to_string(size) +
                  " bytes (the same file for every server and instance that names it)"});
  standin_of_[real] = path;
  display_of_[path] = arg;
  return path;
}

std::string sandbox::usable(const std::string& real, const std::string& arg) {
  if (!ident_.drop) return real;
  if (auto it = copy_of_.find(real); it != copy_of_.end()) return it->second;
  std::error_code ec;
  const auto size = fs::file_size(real, ec);
  if (ec || size > k_max_material_bytes) return "";
  const std::string copy = run_dir_ + "/material/file-" + std::to_string(++standins_);
  int in = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (in < 0) return "";
  int out = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = out >= 0;
  std::uintmax_t total = 0;
  char buf[65536];
  for (ssize_t n; ok && (n = ::read(in, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    total += static_cast<std::uintmax_t>(std::max<ssize_t>(n, 0));
    ok = n > 0 && total <= k_max_material_bytes &&
         ::write(out, buf, static_cast<std::size_t>(n)) == n;
  }
  ::close(in);
  if (out >= 0) ::close(out);
  if (!ok) {
    fs::remove(copy, ec);
    return "";
  }
  copy_of_[real] = copy;
  display_of_[copy] = arg;
  return copy;
}

void sandbox::plan_servers(const model::model& m, generation_plan& plan) {
  for (std::size_t si = 0; si < m.servers.size(); ++si) {
    server_plan p;
    p.index = si;
    p.label = model::server_label(m, m.servers[si]);
    for (const auto& [k, port] : plan.port_of_socket)
      if (std::find(m.sockets[k].servers.begin(), m.sockets[k].servers.end(), si) !=
          m.sockets[k].servers.end())
        p.sockets.push_back(k);
    if (p.sockets.empty()) continue;
    stand_in_certificates(m, p);
    plan_directives(m, p);
    // The files nginx gets instead of the configured ones, for the whole-config test.
    for (std::size_t li = 0; li < p.lines.size(); ++li)
      if (const auto* d = p.origins[li];
          d && !p.lines[li].second.empty() && p.lines[li].second.front().rfind(run_dir_, 0) == 0)
        sandbox_path_of_[{d->file, d->offset}] = p.lines[li].second.front();
    plan.servers.push_back(std::move(p));
  }
}

void sandbox::stand_in_certificates(const model::model& m, server_plan& p) {
  const auto& s = m.servers[p.index];
  // Certificates: pairs by position, as nginx pairs ssl_certificate with ssl_certificate_key.
  const auto* certs = s.get("ssl_certificate");
  const auto* keys = s.get("ssl_certificate_key");
  std::vector<std::pair<std::string, std::string>> pairs;  // sandbox cert, key
  std::vector<std::pair<const config::directive*, const config::directive*>> pair_where;
  const std::size_t n_pairs =
      std::max(certs ? certs->values.size() : 0, keys ? keys->values.size() : 0);
  // Key types already served by readable certificates: with two or more certificates the
  // stand-ins add the kind that is missing, so that RSA and EC are both served as nginx
  // would serve both.
  std::set<standin_key> served_keys;
  for (std::size_t i = 0; certs && i < certs->values.size(); ++i) {
    const auto& c = certs->values[i];
    if (c.args.empty() || c.args.front().rfind("data:", 0) == 0 ||
        c.args.front().find('$') != std::string::npos)
      continue;
    const std::string real = resolve(m, std::string(c.args.front()));
    if (!readable_file(real)) continue;
    try {
      const auto chain = tls::read_certificate_chain(real);
      if (!chain.empty() && chain.front().key_type == "RSA") served_keys.insert(standin_key::rsa);
      if (!chain.empty() && chain.front().key_type == "EC") served_keys.insert(standin_key::ec);
    } catch (const std::exception&) {
    }
  }
  const standin_key preferred = preferred_standin_key(s);
  // A server that rejects every handshake needs no certificate (ssl_reject_handshake, nginx
  // 1.19.4 and later per nginx's CHANGES): none is stood in for it.
  const bool needs_certificate = n_pairs > 0 || !model::is_on(s.get("ssl_reject_handshake"));
  for (std::size_t i = 0; needs_certificate && i < std::max<std::size_t>(n_pairs, 1); ++i) {
    const model::occurrence* c = certs && i < certs->values.size() ? &certs->values[i] : nullptr;
    const model::occurrence* k = keys && i < keys->values.size() ? &keys->values[i] : nullptr;
    const std::string carg(c && !c->args.empty() ? c->args.front() : "");
    const std::string karg(k && !k->args.empty() ? k->args.front() : "");
    const std::string creal = resolve(m, carg), kreal = resolve(m, karg);
    const bool data_cert = carg.rfind("data:", 0) == 0, data_key = karg.rfind("data:", 0) == 0;
    const bool cert_ok = data_cert || (!carg.empty() && carg.find('$') == std::string::npos &&
                                       readable_file(creal) && !usable(creal, carg).empty());
    const bool key_ok = data_key || (!karg.empty() && karg.find('$') == std::string::npos &&
                                     karg.rfind("engine:", 0) != 0 && readable_file(kreal) &&
                                     !usable(kreal, karg).empty());
    std::optional<std::vector<tls::certificate_info>> chain;
    if (cert_ok && !data_cert) {
      try {
        chain = tls::read_certificate_chain(creal);
      } catch (const std::exception&) {
      }
    }
    if (chain && !chain->empty()) {
      const auto& leaf = chain->front();
      if (leaf.ocsp_urls.empty()) p.all_have_ocsp_url = false;
      for (const auto& u : leaf.ocsp_urls)
        if (u.find("127.0.0.1") == std::string::npos && u.find("localhost") == std::string::npos)
          p.real_ocsp_url = true;
    }
    if (!carg.empty() && (!chain || chain->empty()) && !data_cert) p.ocsp_url_unknown = true;
    if (cert_ok && key_ok) {
      pairs.push_back(
          {data_cert ? carg : usable(creal, carg), data_key ? karg : usable(kreal, karg)});
      pair_where.push_back({c ? c->where : nullptr, k ? k->where : nullptr});
      continue;
    }
    const bool chain_known = chain && !chain->empty();
    standin_key key_kind = preferred;
    if (!chain_known) {
      const standin_key other = preferred == standin_key::ec ? standin_key::rsa : standin_key::ec;
      if (served_keys.count(preferred) && !served_keys.count(other)) key_kind = other;
      served_keys.insert(key_kind);
    }
    const std::string pair_key = creal + "\n" + kreal + "\n" +
                                 (chain_known                    ? "chain"
                                  : key_kind == standin_key::rsa ? "rsa"
                                                                 : "ec");
    auto it = pki_of_pair_.find(pair_key);
    std::string why;
    if (it == pki_of_pair_.end()) {
      tls::pki_options po;
      std::string kind;
      if (chain && !chain->empty()) {
        try {
          po = tls::stand_in_options(chain->front(), k_dead_responder);
          kind = "the same key type (" + describe_key(po) + "), names, remaining lifetime" +
                 (chain->front().ocsp_urls.empty() ? " and no OCSP URL"
                                                   : " and an OCSP URL (a closed local port)");
        } catch (const std::exception& e) {
          po = {};
          kind = "an EC P-256 key (" + std::string(e.what()) + ")";
        }
        // A leaf-only file stays leaf-only: nginx then finds no issuer for stapling.
        po.intermediate = true;
      } else {
        po.dns_names.clear();
        for (const auto& n : s.names)
          if (literal_name(n)) po.dns_names.push_back(n);
        if (po.dns_names.empty()) po.dns_names = {"localhost"};
        if (key_kind == standin_key::rsa) po.key_type = "rsa";
        const std::string why_kind = n_pairs > 1 ? "one of each kind for the server's certificates"
                                     : key_kind == standin_key::rsa
                                         ? "the TLS 1.2 cipher list authenticates with RSA only"
                                         : "the TLS 1.2 cipher list takes an EC key";
        kind = "an " + describe_key(po) + " key (" + why_kind +
               "), the server's names and no OCSP URL (the certificate is not readable here)";
      }
      const std::string dir = run_dir_ + "/material/pki-" + std::to_string(++standins_);
      auto pki = tls::make_pki(dir, po);
      // Keep the real file's shape: leaf only, or leaf and chain.
      if (chain && chain->size() == 1 && !chain->front().self_signed) pki.chain = pki.leaf_cert;
      it = pki_of_pair_.emplace(pair_key, pki).first;
      if (carg.empty())
        why =
            "no ssl_certificate applies (nginx would refuse the `listen ... ssl`): stand-in "
            "certificate with " +
            kind;
      else if (!cert_ok)
        why = "ssl_certificate \"" + carg + "\" is not readable here: stand-in certificate with " +
              kind;
      else
        why = "ssl_certificate_key \"" + karg +
              "\" is not readable here: stand-in key and certificate with " + kind;
      notes_.push_back({p.label, why});
      if (!carg.empty()) display_of_[pki.chain] = carg;
      if (!karg.empty()) display_of_[pki.leaf_key] = karg;
    }
    p.standin_pkis.push_back(it->second);
    pairs.push_back({it->second.chain, it->second.leaf_key});
    pair_where.push_back({c ? c->where : nullptr, k ? k->where : nullptr});
    // No certificate at all: the whole-config test gives the server the same stand-in.
    if (carg.empty() && s.where)
      standin_for_server_[{s.where->file, s.where->offset}] = {it->second.chain,
                                                               it->second.leaf_key};
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    p.lines.push_back({"ssl_certificate", {pairs[i].first}});
    p.origins.push_back(pair_where[i].first);
    p.lines.push_back({"ssl_certificate_key", {pairs[i].second}});
    p.origins.push_back(pair_where[i].second);
  }
}

void sandbox::plan_directives(const model::model& m, server_plan& p) {
  const auto& s = m.servers[p.index];
  // Every other effective directive of nginx's ssl modules (and resolver), with file
  // arguments checked; no other module's ssl_* (that could be code: *_by_lua*).
  const bool stapling_on = model::is_on(s.get("ssl_stapling"));
  bool responder_kept = false;
  for (const auto& [name_view, setting_ptr] : s.settings()) {
    const std::string name(name_view);
    const model::setting& setting = *setting_ptr;
    if (setting.from == model::origin::nginx_default) continue;
    if (name == "ssl") {
      // Kept as written, so that nginx -t judges it: deprecated up to 1.25.0 ([warn]),
      // unknown from 1.25.1 (rejected, then left out; the listens stay TLS).
      if (!setting.values.empty()) {
        p.lines.push_back({"ssl", setting.values.back().args.strings()});
        p.origins.push_back(setting.values.back().where);
      }
      continue;
    }
    if (name == "ssl_certificate" || name == "ssl_certificate_key") continue;
    if (name.rfind("ssl_", 0) != 0 && name != "resolver" && name != "resolver_timeout") continue;
    if (name.rfind("ssl_", 0) == 0 && !k_ssl_module_directives.count(name)) {
      notes_.push_back(
          {p.label, name + ": left out (" +
                        (name == "ssl_key_log"
                             ? std::string("it writes TLS secrets to a file outside the sandbox")
                             : "not a directive of nginx's own ssl modules: the sandbox runs no "
                               "code a config names (Lua, Perl, njs) and no third-party module") +
                        ")"});
      continue;
    }
    std::vector<const model::occurrence*> occs;
    if (k_repeatable.count(name)) {
      for (const auto& occ : setting.values) occs.push_back(&occ);
    } else if (!setting.values.empty()) {
      occs.push_back(&setting.values.back());
    }
    for (const auto* occ : occs) {
      std::vector<std::string> args = occ->args.strings();
      const std::string arg0 = args.empty() ? "" : args.front();
      const std::string real = resolve(m, arg0);
      auto drop = [&](const std::string& why) {
        notes_.push_back({p.label, name + " \"" + arg0 + "\" " + why});
      };
      if (!network_isolated_ && (name == "resolver" || name == "ssl_stapling_responder" ||
                                 name == "ssl_ocsp_responder")) {
        std::string off;
        for (const auto& a : args)
          if (name != "resolver" || a.find('=') == std::string::npos)
            if (!loopback_host(host_of(a))) off = a;
        if (!off.empty()) {
          notes_.push_back(
              {p.label, name + " \"" + off +
                            "\": left out (off-host, and the sandbox has no network namespace "
                            "to keep nginx from reaching it)"});
          continue;
        }
      }
      if (network_isolated_ && name == "resolver") {
        // nginx resolves a resolver given by name while it loads the config; with loopback
        // only that fails, and nginx -t would reject what production accepts.
        std::string by_name;
        for (const auto& a : args) {
          if (a.find('=') != std::string::npos) continue;
          std::string h = host_of(a);
          if (h.size() > 1 && h.front() == '[') h = h.substr(1, h.size() - 2);
          in_addr v4{};
          in6_addr v6{};
          if (!loopback_host(h) && ::inet_pton(AF_INET, h.c_str(), &v4) != 1 &&
              ::inet_pton(AF_INET6, h.c_str(), &v6) != 1)
            by_name = a;
        }
        if (!by_name.empty()) {
          notes_.push_back(
              {p.label, "resolver \"" + by_name +
                            "\": left out (a host name, which the sandbox's loopback-only "
                            "network cannot resolve)"});
          continue;
        }
        std::string off_host;
        for (const auto& a : args)
          if (a.find('=') == std::string::npos && !loopback_host(host_of(a))) off_host = a;
        if (!off_host.empty())
          notes_.push_back({p.label, "resolver \"" + off_host +
                                         "\": kept, but not reachable from the sandbox's "
                                         "loopback-only network: nothing it would resolve (an OCSP "
                                         "responder's host) is resolved here"});
      }
      if (name == "ssl_stapling_responder") responder_kept = true;
      if (name == "ssl_session_ticket_key") {
        const std::string copy = readable_file(real) ? usable(real, arg0) : "";
        if (!copy.empty())
          args[0] = copy;
        else
          args[0] = ticket_standin(real, p.label, arg0);
      } else if (name == "ssl_trusted_certificate" || name == "ssl_client_certificate") {
        if (!p.standin_pkis.empty()) {
          // The real CA file would not hold the stand-in's issuer.
          const auto& pki = p.standin_pkis.front();
          const std::string bundle =
              run_dir_ + "/material/ca-" + std::to_string(++standins_) + ".pem";
          {
            std::ofstream out(bundle, std::ios::binary);
            std::ifstream a(pki.issuer, std::ios::binary), b(pki.root_cert, std::ios::binary);
            out << a.rdbuf();
            if (pki.root_cert != pki.issuer && !pki.root_cert.empty()) out << b.rdbuf();
          }
          args[0] = bundle;
          display_of_[bundle] = arg0;
          notes_.push_back(
              {p.label,
               name + " \"" + arg0 +
                   "\": the stand-in issuer stands in for it (assumed to hold the real issuer)"});
        } else if (readable_file(real) && !usable(real, arg0).empty()) {
          args[0] = usable(real, arg0);
        } else if (name == "ssl_client_certificate") {
          // Left out, ssl_verify_client would make nginx refuse the server ("no
          // ssl_client_certificate for ssl_verify_client"): a CA of the sandbox's own stands in,
          // one per file so that servers sharing the file share the stand-in.
          auto it = pki_of_pair_.find("client-ca\n" + real);
          if (it == pki_of_pair_.end()) {
            const std::string dir = run_dir_ + "/material/pki-" + std::to_string(++standins_);
            it = pki_of_pair_.emplace("client-ca\n" + real, tls::make_pki(dir, {})).first;
            notes_.push_back({p.label, name + " \"" + arg0 +
                                           "\" is not readable here: a CA of the sandbox's own "
                                           "stands in for it (no client certificate the real CA "
                                           "issued is verified here)"});
          }
          args[0] = it->second.root_cert;
          display_of_[args[0]] = arg0;
        } else {
          drop("is not readable here: left out");
          continue;
        }
      } else if (name == "ssl_crl" || name == "ssl_dhparam" || name == "ssl_stapling_file" ||
                 name == "ssl_password_file" || name == "ssl_ecdh_curve_file") {
        if (!readable_file(real) || usable(real, arg0).empty()) {
          drop(name == "ssl_dhparam"
                   ? "is not readable here: left out (no DHE cipher suites in the sandbox)"
               : name == "ssl_stapling_file"
                   ? "is not readable here: left out (staple presence not tested)"
                   : "is not readable here: left out");
          continue;
        }
        args[0] = usable(real, arg0);
      }
      p.lines.push_back({name, args});
      p.origins.push_back(occ->where);
    }
  }
  // Stapling from a real responder needs the network: point nginx at a closed local port
  // instead, so the load never waits on DNS, and say that staple presence is not tested.
  // Without a network namespace that holds even when some certificates have no OCSP URL.
  if (stapling_on && p.real_ocsp_url && (p.all_have_ocsp_url || !network_isolated_) &&
      !responder_kept) {
    p.lines.push_back({"ssl_stapling_responder", {k_dead_responder}});
    p.origins.push_back(nullptr);
  }
  if (stapling_on && (p.real_ocsp_url || p.ocsp_url_unknown))
    notes_.push_back(
        {p.label, std::string("ssl_stapling: ") +
                      (p.real_ocsp_url
                           ? "the certificate's OCSP responder is a real one"
                           : "the certificate is not readable here, so its OCSP URL is unknown") +
                      " and the sandbox does not reach the network: a staple cannot arrive, so its "
                      "absence proves nothing here (a missing issuer or OCSP URL still shows)"});
}

void sandbox::plan_workers_and_modules(const model::model& m, generation_plan& plan) {
  // The worker count as configured, capped.
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  workers_ = !m.worker_processes        ? 1
             : *m.worker_processes == 0 ? static_cast<int>(cpus)
                                        : *m.worker_processes;
  if (workers_ > max_workers_) {
    notes_.push_back({"", "worker_processes " + std::to_string(workers_) + " capped at " +
                              std::to_string(max_workers_)});
    workers_ = max_workers_;
  }
  workers_ = std::max(1, workers_);

  // Modules: none the config names (a module is code, run as the master's user at load). The
  // stream module of the build's own module directory when stream servers need it and the
  // build has it as a dynamic module; anything else the TLS servers need is built in.
  bool has_stream = false;
  for (const auto& p : plan.servers)
    has_stream = has_stream || m.servers[p.index].context == model::context_kind::stream;
  const std::string stream_module = modules_path_ + "/ngx_stream_module.so";
  if (has_stream && configure_.find(" --with-stream=dynamic ") != std::string::npos) {
    if (trusted_module(stream_module))
      plan.modules.push_back(stream_module);
    else
      notes_.push_back(
          {"", stream_module + " is missing, or writable by others: stream servers cannot run"});
  }
  if (m.cfg)
    for (const auto& d : m.cfg->root)
      if (d.name == "load_module" && !d.args.empty()) {
        const std::string arg(d.args.front().value());
        if (!plan.modules.empty() && fs::path(arg).filename() == "ngx_stream_module.so")
          notes_.push_back({"", "load_module \"" + arg + "\": the sandbox loads the build's own " +
                                    stream_module});
        else
          notes_.push_back({"", "load_module \"" + arg +
                                    "\": left out (the sandbox loads no module a config names; "
                                    "its TLS servers need none but the stream module)"});
      }
  if (has_stream && !plan.modules.empty() && m.cfg &&
      std::none_of(m.cfg->root.begin(), m.cfg->root.end(),
                   [](const auto& d) { return d.name == "load_module"; }))
    notes_.push_back(
        {"", "the config has stream servers but loads no stream module: the sandbox loads " +
                 stream_module +
                 " (unless your nginx has the module built in, it rejects `stream` as an unknown "
                 "directive)"});

  // Limits that grow with the config: every worker holds a connection per listen socket.
  worker_connections_ = 512 + static_cast<int>(plan.port_of_socket.size());
  nofile_ = static_cast<rlim_t>(worker_connections_) +
            static_cast<rlim_t>(plan.port_of_socket.size()) + 256;
  {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
        rl.rlim_max < nofile_ && ::geteuid() != 0)
      notes_.push_back({"", "RLIMIT_NOFILE's hard limit " + std::to_string(rl.rlim_max) +
                                " is below the " + std::to_string(nofile_) + " descriptors " +
                                std::to_string(plan.port_of_socket.size()) +
                                " listen sockets need: nginx may fail to start"});
  }
  // Temp paths of the http modules this build has (each defaults to a compiled-in path such
  // as /var/lib/nginx/body, which nginx creates and, as root, chowns to its worker user).
  plan.temp_paths = {"client_body_temp_path client_body_temp;"};
  for (const char* mod : {"proxy", "fastcgi", "uwsgi", "scgi"})
    if (configure_.find(std::string(" --without-http_") + mod + "_module ") == std::string::npos)
      plan.temp_paths.push_back(std::string(mod) + "_temp_path " + mod + "_temp;");
}

void sandbox::plan_listens(const model::model& m, generation_plan& plan) {
  for (std::size_t pi = 0; pi < plan.servers.size(); ++pi) plan.listens_of[pi];
  // Listen lines as written (options kept, so that nginx reports duplicate default servers and
  // duplicate listen options as production would), moved to the socket's loopback port.
  {
    static const std::set<std::string> bind_options = {
        "backlog",  "rcvbuf",    "sndbuf",   "accept_filter", "deferred", "bind",
        "ipv6only", "reuseport", "fastopen", "so_keepalive",  "setfib"};
    std::map<std::size_t, std::pair<std::size_t, std::size_t>>
        options_at;  // socket -> (plan, line)
    std::set<std::size_t> has_reuseport, with_options;
    bool quic_known = true;
    {
      static const std::regex v(R"(nginx/(\d+)\.(\d+)\.(\d+))");
      std::smatch mv;
      if (std::regex_search(version_, mv, v))
        quic_known =
            std::make_tuple(std::stoi(mv[1]), std::stoi(mv[2]), 0) >= std::make_tuple(1, 25, 0);
    }
    for (std::size_t pi = 0; pi < plan.servers.size(); ++pi) {
      const auto& p = plan.servers[pi];
      const auto& s = m.servers[p.index];
      std::set<std::string> noted;
      for (const auto& ld : s.listens) {
        if (!ld.where) continue;
        std::size_t k = m.sockets.size();
        for (auto sk : p.sockets)
          if (m.sockets[sk].address == ld.address && m.sockets[sk].port == ld.port) k = sk;
        if (k == m.sockets.size()) continue;
        if (ld.quic && !quic_known) {
          // nginx before 1.25.0 has no QUIC: keep the listen so that nginx -t rejects it, as
          // it would in production.
        } else if (ld.quic) {
          if (noted.insert("quic").second)
            notes_.push_back({p.label, "listen " + ld.address + ":" + std::to_string(ld.port) +
                                           " quic: left out (UDP; the prober speaks TCP)"});
          continue;
        }
        // `ssl` is added at render time where it was written, or where no listen of the
        // socket in the rendered config has it (see render).
        std::string l;
        bool options = false;
        for (std::size_t ai = 1; ai < ld.where->args.size(); ++ai) {
          const std::string a(ld.where->args[ai].value());
          const std::string opt = a.substr(0, a.find('='));
          if (a == "ssl" && ld.quic) continue;
          if (a == "ssl") continue;
          if (a == "proxy_protocol") {
            if (noted.insert(a).second)
              notes_.push_back({p.label,
                                "listen ... proxy_protocol: left out in the sandbox (the prober "
                                "sends no PROXY header; "
                                "real clients must come through the proxy)"});
            continue;
          }
          if (opt == "ipv6only") continue;  // meaningless on 127.0.0.1
          if (a == "reuseport") has_reuseport.insert(k);
          if (bind_options.count(opt)) options = true;
          l += " " + quote_token(a);
        }
        if (ld.address.rfind("unix:", 0) == 0 && noted.insert("unix").second)
          notes_.push_back({p.label, "listen " + ld.address + " runs on TCP 127.0.0.1:" +
                                         std::to_string(plan.port_of_socket[k])});
        if (ld.address.find('[') != std::string::npos && noted.insert("v6").second)
          notes_.push_back({p.label, "listen " + ld.address + ":" + std::to_string(ld.port) +
                                         " runs on 127.0.0.1 (IPv4 loopback)"});
        auto& lines = plan.listens_of[pi];
        // reuseport for --instances goes on the listen that carries the socket's options,
        // else on its first listen.
        if (!options_at.count(k) || (options && !with_options.count(k))) {
          options_at[k] = {pi, lines.size()};
          if (options) with_options.insert(k);
        }
        lines.push_back({"        listen 127.0.0.1:" + std::to_string(plan.port_of_socket[k]), l,
                         ld.where, ld.port, k, ld.ssl});
      }
    }
    // N instances share each port through SO_REUSEPORT: one listen per socket carries it.
    if (instances_ > 1)
      for (const auto& [k, at] : options_at)
        if (!has_reuseport.count(k)) plan.listens_of[at.first][at.second].text += " reuseport";
  }
}

// One rendered config and what each of its lines stands for (index 0 unused: lines are 1-based).
struct sandbox::rendered_config {
  std::string text;
  std::vector<generation_plan::line_origin> origin_of_line;
};

sandbox::rendered_config sandbox::render(
    const model::model& m, const generation_plan& plan, std::optional<std::size_t> only,
    std::optional<std::pair<std::size_t, std::size_t>> extra) const {
  using line_kind = generation_plan::line_kind;
  using line_origin = generation_plan::line_origin;
  std::vector<line_origin> origin_of_line{line_origin{}};
  std::string text;
  auto emit = [&](const std::string& l, line_origin lo = {}) {
    text += l + "\n";
    origin_of_line.push_back(lo);
  };
  // `ssl` as written, so that nginx -t sees listen lines that differ in it as production does
  // ("protocol options redefined"); added to every listen of a socket where no rendered
  // listen has it (TLS from `ssl on`, which nginx >= 1.25.1 rejects; or the server that
  // wrote it left out), so that every socket the sandbox serves speaks TLS.
  std::set<std::size_t> ssl_written;
  for (std::size_t pi = 0; pi < plan.servers.size(); ++pi)
    if (!plan.servers[pi].dropped && (!only || *only == pi))
      for (const auto& l : plan.listens_of.at(pi))
        if (l.ssl) ssl_written.insert(l.socket);
  emit("# ngxtls check --sandbox: the TLS servers of " + m.cfg->files.front().path +
       " on loopback");
  for (const auto& mod : plan.modules) emit("load_module " + quote_token(mod) + ";");
  emit("worker_processes " + std::to_string(workers_) + ";");
  // Every path nginx writes, relative to the instance's -p prefix inside the run directory.
  emit("pid nginx.pid;");
  emit("lock_file nginx.lock;");
  emit("error_log logs/error.log notice;");
  emit("events { worker_connections " + std::to_string(worker_connections_) + "; }");
  for (int ctx = 0; ctx < 2; ++ctx) {
    const bool stream = ctx == 1;
    if (stream && plan.stream_dropped) continue;
    std::vector<std::size_t> in_ctx;
    for (std::size_t pi = 0; pi < plan.servers.size(); ++pi)
      if (!plan.servers[pi].dropped && (!only || *only == pi) &&
          (m.servers[plan.servers[pi].index].context == model::context_kind::stream) == stream)
        in_ctx.push_back(pi);
    if (in_ctx.empty()) continue;
    emit(stream ? "stream {" : "http {",
         {stream ? line_kind::stream_head : line_kind::other, 0, nullptr});
    if (!stream) {
      emit("    access_log off;");
      for (const auto& t : plan.temp_paths) emit("    " + t);
    }
    for (auto pi : in_ctx) {
      const auto& p = plan.servers[pi];
      const auto& s = m.servers[p.index];
      emit("    server {  # " + p.label, {line_kind::server_head, p.index, s.where});
      for (const auto& l : plan.listens_of.at(pi))
        emit(l.head + (l.ssl || !ssl_written.count(l.socket) ? " ssl" : "") + l.text + ";",
             {line_kind::listen, p.index, l.where, 0, 0, l.port});
      if (!stream) {
        std::string names = "        server_name";
        for (const auto& n : s.names) names += " " + quote_token(n);
        if (!s.names.empty()) emit(names + ";", {line_kind::listen, p.index, s.where});
      }
      for (std::size_t li = 0; li < p.lines.size(); ++li) {
        if (plan.dropped_lines.count({pi, li}) || (extra && *extra == std::make_pair(pi, li)))
          continue;
        std::string l = "        " + p.lines[li].first;
        for (const auto& a : p.lines[li].second) l += " " + quote_token(a);
        emit(l + ";", {line_kind::directive, p.index, p.origins[li], pi, li});
      }
      if (stream)
        emit("        return \"ok\\n\";");
      else
        emit("        location / { return 200 \"ok\\n\"; }");
      emit("    }");
    }
    emit("}");
  }
  return {text, origin_of_line};
}

command_output sandbox::nginx_test(const std::string& text) const {
  {
    std::ofstream out(conf_path_, std::ios::binary | std::ios::trunc);
    out << (ident_.drop ? replace_all(text, run_dir_ + "/", nginx_root_ + "/") : text);
    if (!out) throw target_error("sandbox: cannot write " + conf_path_);
  }
  hand_over();
  const std::string inst = nx(inst_dirs_.front());
  auto r = run_command(
      {binary_, "-t", "-q", "-p", inst + "/", "-e", inst + "/logs/error.log", "-c", nx(conf_path_)},
      60000, setup());
  r.out = from_nginx(std::move(r.out));
  r.err = from_nginx(std::move(r.err));
  return r;
}

void sandbox::test_with_blame(const model::model& m, generation_plan& plan) {
  using line_kind = generation_plan::line_kind;
  using line_origin = generation_plan::line_origin;
  const std::string& conf = conf_path_;
  for (int round = 0;; ++round) {
    auto [text, origin_of_line] = render(m, plan, std::nullopt, std::nullopt);
    auto t = nginx_test(text);
    if (t.exit_code == 0) {
      // nginx's [warn] lines of the passing round, traced to the linted config.
      std::istringstream in(t.err);
      std::string wl;
      while (std::getline(in, wl) && warnings_.size() < 256) {
        auto at = wl.find("[warn] ");
        if (at == std::string::npos) continue;
        std::string msg = wl.substr(at + 7);
        int line = 0;
        const std::string tail = " in " + conf + ":";
        if (auto tp = msg.rfind(tail); tp != std::string::npos) {
          try {
            line = std::stoi(msg.substr(tp + tail.size()));
          } catch (const std::exception&) {
            line = 0;
          }
          msg.resize(tp);
        }
        sandbox_warning w;
        w.message = shown(msg);
        if (line > 0 && static_cast<std::size_t>(line) < origin_of_line.size()) {
          const auto& lo = origin_of_line[static_cast<std::size_t>(line)];
          if (lo.where) w.where = m.cfg->where(*lo.where);
          w.port = lo.port;
        }
        warnings_.push_back(std::move(w));
      }
      break;
    }
    auto e = first_emerg(t.err, conf);
    if (!e || round >= 64 + 2 * static_cast<int>(plan.servers.size()))
      throw target_error("sandbox: nginx -t rejects the sandbox config: " +
                         shown(t.err.empty() ? t.out : t.err));
    // Blame: a directive whose argument the message quotes (nginx reports some errors with no
    // line, or at a block's end: docs/nginx-facts.md#ticket-key-rotation), else the line nginx
    // names. Several directives can quote the same argument (one file named as the certificate key
    // and as the ticket key, an error nginx reports at the block's end): then the line nginx
    // names decides if it is one of them, else the search below finds the directive whose
    // removal makes the server pass.
    // A named reference for the lambda: clang 14 cannot capture a structured binding.
    const auto& line_origins = origin_of_line;
    auto quotes_argument = [&](std::size_t ln) {
      const auto& lo = line_origins[ln];
      if (lo.kind != line_kind::directive) return false;
      const std::size_t pi = lo.plan_server, li = lo.line;
      for (const auto& a : plan.servers[pi].lines[li].second)
        if ((a.size() > 2 || (a.size() > 1 && a[0] == '/')) &&
            e->message.find("\"" + a + "\"") != std::string::npos)
          return true;
      return false;
    };
    std::vector<std::size_t> quoting;
    for (std::size_t ln = 1; ln < origin_of_line.size(); ++ln)
      if (quotes_argument(ln)) quoting.push_back(ln);
    const bool named = e->line > 0 && static_cast<std::size_t>(e->line) < origin_of_line.size();
    std::size_t blame = 0;
    if (quoting.size() == 1)
      blame = quoting.front();
    else if (named && std::find(quoting.begin(), quoting.end(),
                                static_cast<std::size_t>(e->line)) != quoting.end())
      blame = static_cast<std::size_t>(e->line);
    else if (quoting.empty() && named)
      blame = static_cast<std::size_t>(e->line);
    line_origin lo = blame ? origin_of_line[blame] : line_origin{};
    if (lo.kind == line_kind::other) {
      // Nothing to go by: find the one server that fails alone, then the one directive whose
      // removal makes it pass (a few more `nginx -t` runs, only on this path).
      for (std::size_t pi = 0; pi < plan.servers.size() && lo.kind == line_kind::other; ++pi) {
        if (plan.servers[pi].dropped ||
            nginx_test(render(m, plan, pi, std::nullopt).text).exit_code == 0)
          continue;
        lo = {line_kind::server_head, plan.servers[pi].index,
              m.servers[plan.servers[pi].index].where};
        for (std::size_t li = 0; li < plan.servers[pi].lines.size(); ++li) {
          if (plan.dropped_lines.count({pi, li})) continue;
          if (nginx_test(render(m, plan, pi, std::make_pair(pi, li)).text).exit_code == 0) {
            lo = {line_kind::directive, plan.servers[pi].index, plan.servers[pi].origins[li], pi,
                  li};
            break;
          }
        }
      }
    }
    const std::string msg = shown(e->message);
    if (lo.kind == line_kind::directive) {
      const std::size_t pi = lo.plan_server, li = lo.line;
      plan.dropped_lines.insert({pi, li});
      sandbox_rejection r;
      if (lo.where) r.where = m.cfg->where(*lo.where);
      r.server = plan.servers[pi].label;
      r.message = msg;
      rejections_.push_back(r);
      notes_.push_back({plan.servers[pi].label, "nginx -t rejects " +
                                                    plan.servers[pi].lines[li].first +
                                                    (lo.where ? " at " + to_string(r.where) : "") +
                                                    ": " + msg + " (left out to test the rest)"});
    } else if (lo.kind == line_kind::server_head || lo.kind == line_kind::listen) {
      for (auto& p : plan.servers)
        if (p.index == lo.server && !p.dropped) {
          p.dropped = true;
          untested_[p.label] = "nginx -t rejects it in the sandbox: " + msg;
          if (lo.where) rejections_.push_back({m.cfg->where(*lo.where), p.label, msg});
        }
    } else if (lo.kind == line_kind::stream_head) {
      plan.stream_dropped = true;
      for (auto& p : plan.servers)
        if (m.servers[p.index].context == model::context_kind::stream) {
          p.dropped = true;
          untested_[p.label] = "the sandbox nginx has no stream module: " + msg;
        }
    } else {
      throw target_error("sandbox: nginx -t rejects the sandbox config: " + msg);
    }
  }
}

void sandbox::record_served(const model::model& m, const generation_plan& plan) {
  {
    std::set<std::size_t> written, served;
    for (const auto& [pi, lines] : plan.listens_of)
      if (!plan.servers[pi].dropped)
        for (const auto& l : lines) {
          served.insert(l.socket);
          if (l.ssl) written.insert(l.socket);
        }
    for (auto k : served)
      if (!written.count(k)) ssl_added_ports_.insert(m.sockets[k].port);
  }
  // Sockets as served.
  for (const auto& [k, port] : plan.port_of_socket) {
    sandbox_socket ss;
    const auto& sock = m.sockets[k];
    ss.original = sock.name();
    ss.original_port = sock.port;
    ss.port = port;
    ss.stream = sock.context == model::context_kind::stream;
    bool any = false, default_named = false;
    for (const auto& p : plan.servers) {
      if (p.dropped || std::find(p.sockets.begin(), p.sockets.end(), k) == p.sockets.end())
        continue;
      any = true;
      for (const auto& name : m.servers[p.index].names) {
        // A wildcard name is probed with a name it matches (nginx picks the server by it).
        std::string n = name;
        if (n.size() > 2 && n.compare(0, 2, "*.") == 0)
          n = "ngxtls-probe" + n.substr(1);
        else if (n.size() > 1 && n[0] == '.')
          n = n.substr(1);
        else if (n.size() > 2 && n.compare(n.size() - 2, 2, ".*") == 0)
          n = n.substr(0, n.size() - 1) + "test";
        if (literal_name(n) && std::find(ss.names.begin(), ss.names.end(), n) == ss.names.end()) {
          ss.names.push_back(n);
          if (p.index == sock.default_server) default_named = true;
          if (model::is_on(m.servers[p.index].get("ssl_reject_handshake")))
            ss.refusing.push_back(n);
        }
      }
    }
    if (!any) continue;
    if (!default_named) {
      ss.names.insert(ss.names.begin(), "");
      // Without SNI (or with a name no server has) nginx stays in the default server.
      if (sock.default_server < m.servers.size() &&
          model::is_on(m.servers[sock.default_server].get("ssl_reject_handshake")))
        ss.refusing.push_back("");
    }
    sockets_.push_back(std::move(ss));
  }
  for (const auto& p : plan.servers)
    if (!p.dropped && p.sockets.empty()) untested_[p.label] = "no TLS listen socket";
}

sandbox::~sandbox() {
  stop();
}

std::map<int, int> sandbox::port_map() const {
  std::map<int, int> out;
  for (const auto& s : sockets_) out[s.port] = s.original_port;
  return out;
}

void sandbox::reload_into(const model::model& next) {
  if (!keeper_) throw target_error("sandbox: not running");
  for (auto& n : notes_)
    if (n.text.rfind("baseline: ", 0) != 0) n.text = "baseline: " + n.text;
  generate(next);
  // The config being deployed is `next`: nginx's verdict is on it, not on the baseline.
  test_whole_config(next);
  reload();
}

void sandbox::reload() {
  if (!keeper_) throw target_error("sandbox: not running");
  struct gen {
    pid_t master;
    std::vector<pid_t> old;
  };
  std::vector<gen> gens;
  for (pid_t mp : keeper_->masters()) gens.push_back({mp, child_pids(mp)});
  for (const auto& g : gens) ::kill(g.master, SIGHUP);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  for (;;) {
    bool done = true;
    for (const auto& g : gens) {
      auto now = child_pids(g.master);
      int fresh = 0;
      for (pid_t w : now) {
        if (std::find(g.old.begin(), g.old.end(), w) != g.old.end())
          done = false;
        else
          ++fresh;
      }
      done = done && fresh >= workers_;
    }
    if (done) return;
    if (clock_type::now() > deadline)
      throw target_error("sandbox: the reload did not finish within " +
                         std::to_string(timeout_ms_) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void sandbox::stop() {
  if (keeper_) {
    keeper_->stop();
    keeper_.reset();
  }
  if (!run_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(run_dir_, ec);
    run_dir_.clear();
  }
}

}  // namespace ngxtls::sandbox
