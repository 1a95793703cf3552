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
#include <random>
#include <thread>

#include "config/values.hpp"
#include "sandbox/sandbox_plan.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

using clock_type = std::chrono::steady_clock;

}  // namespace

// A random port below Linux's ephemeral range (32768-60999) that binds right now: random so
// that sandboxes started at the same moment rarely pick the same one (bind(0) hands out
// neighbours), below the range so that outgoing connections do not take it meanwhile. Still
// a race: the start retries with new ports when nginx cannot bind.
int free_loopback_port(std::set<int>& taken, bool udp) {
  static std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int attempt = 0; attempt < 256; ++attempt) {
    const int port = pick(rng);
    if (taken.count(port)) continue;
    if (!loopback_port_free(port, udp)) continue;
    taken.insert(port);
    return port;
  }
  throw target_error("sandbox: no free port on 127.0.0.1");
}

bool loopback_port_free(int port, bool udp) {
  int fd = ::socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

namespace {

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
  return config::quote_token(arg);
}

sandbox::sandbox(const model::model& m, const sandbox_options& o) {
  if (!m.cfg) throw target_error("sandbox: the model has no configuration");
  std::string binary = find_executable(o.nginx_binary.empty() ? "nginx" : o.nginx_binary);
  if (binary.empty())
    throw usage_error(o.nginx_binary.empty() ? "check --sandbox: no nginx on PATH or in /usr/sbin "
                                               "(install Debian's nginx, or pass --nginx BIN)"
                                             : "check --sandbox: --nginx " + o.nginx_binary +
                                                   " is not an executable file");
  build_ = read_nginx_build(fs::absolute(binary).string());
  instances_ = std::max(1, o.instances);
  max_workers_ = o.max_workers;
  timeout_ms_ = o.start_timeout_ms;
  network_isolated_ = o.network_isolated;
  on_step_ = o.on_step;
  ident_ = choose_sandbox_identity();
  make_run_directory(o);
  try {
    start(m);
  } catch (...) {
    stop();
    throw;
  }
}

void sandbox::make_run_directory(const sandbox_options& o) {
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
  material_.start(run_dir_, ident_.drop);
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
  } catch (...) {
    stop();
    throw;
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
}

void sandbox::start(const model::model& m) {
  const std::size_t notes_before = notes_.size();
  // A port picked free can be taken before nginx binds it (another sandbox starting at the
  // same moment): then start again on new ports, at most eight times.
  for (int attempt = 1;; ++attempt) {
    generate(m);
    if (attempt == 1) {
      step("nginx -t of the whole config");
      test_whole_config(m);
    }
    if (sockets_.empty() && quic_sockets_.empty()) {
      notes_.push_back({"", "no TLS server to start: the config has no listen socket with ssl"});
      return;
    }
    std::vector<std::vector<std::string>> argvs;
    std::vector<std::string> logs;
    for (const auto& d : inst_dirs_) {
      const std::string dir = material_.path_for_nginx(d);
      argvs.push_back({build_.binary, "-p", dir + "/", "-e", dir + "/logs/error.log", "-c",
                       material_.path_for_nginx(conf_path_), "-g", "daemon off;"});
      logs.push_back(d + "/logs/stderr.log");
      // Not through a link nginx (another uid) may have put there.
      const std::string log = d + "/logs/error.log";
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
    }
    hand_over();
    step("starting nginx" +
         (instances_ > 1 ? " (" + std::to_string(instances_) + " masters)" : std::string()));
    keeper_ = std::make_unique<keeper>(argvs, logs, run_dir_, setup());
    bool timed_out = false;
    const std::string failure = wait_until_serving(timed_out);
    if (failure.empty() && !timed_out) return;
    // The run directory stays for the next attempt (a collision is retried in it).
    keeper_->stop(true);
    keeper_.reset();
    if (failure.find("Address already in use") != std::string::npos && attempt < 8) {
      ports_by_name_.clear();
      material_.forget_addresses();
      notes_.resize(notes_before);
      continue;
    }
    throw target_error(
        failure.empty()
            ? "sandbox: nginx did not start within " + std::to_string(timeout_ms_) + " ms"
            : "sandbox: nginx did not start:" + material_.in_configured_terms(failure));
  }
}

std::string sandbox::wait_until_serving(bool& timed_out) const {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  std::string failure;
  for (;;) {
    bool ready = static_cast<int>(keeper_->masters().size()) == instances_;
    for (const auto& ss : sockets_) ready = ready && port_accepts(ss.port);
    // A UDP port nginx has bound no longer binds here (nginx's sockets are in another
    // process, with or without reuseport).
    for (const auto& ss : quic_sockets_) ready = ready && !loopback_port_free(ss.port, true);
    if (ready)
      for (pid_t mp : keeper_->masters())
        ready = ready && static_cast<int>(child_pids(mp).size()) >= workers_;
    if (ready) break;
    // nginx logs [emerg] and exits when it cannot start: do not wait out the deadline.
    for (const auto& d : inst_dirs_) {
      std::ifstream in(d + "/logs/error.log");
      for (std::string l; std::getline(in, l);)
        if (auto logged = config::parse_nginx_log_line(l); logged && logged->level == "emerg")
          failure += "\n  " + material_.paths_from_nginx(l);
    }
    if (!failure.empty() || clock_type::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  timed_out = clock_type::now() > deadline;
  return failure;
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
      ::lchown(it->path().c_str(), ident_.uid, gid);  // best effort: nginx then reports what fails
  }
}

void sandbox::generate(const model::model& m) {
  sockets_.clear();
  quic_sockets_.clear();
  rejections_.clear();
  warnings_.clear();
  ssl_added_ports_.clear();
  untested_.clear();
  generation_plan plan;
  step("writing the sandbox config");
  assign_ports(m, plan);
  plan_servers(m, plan);
  plan_upstreams(m, plan);
  plan_workers_and_modules(m, plan);
  plan_listens(m, plan);
  step("nginx -t of the sandbox config");
  test_with_blame(m, plan);
  record_served(m, plan);
  record_upstreams(m, plan);
}

void sandbox::record_served(const model::model& m, const generation_plan& plan) {
  {
    std::set<std::size_t> written, served;
    for (const auto& [pi, lines] : plan.listens_of)
      if (!plan.servers[pi].dropped)
        for (const auto& l : lines) {
          if (l.quic) continue;
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
        const std::optional<std::string> selecting = config::name_selecting(name);
        if (!selecting) continue;
        const std::string& n = *selecting;
        if (std::find(ss.names.begin(), ss.names.end(), n) == ss.names.end()) {
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
    (sock.quic ? quic_sockets_ : sockets_).push_back(std::move(ss));
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
  step("nginx -t of the whole config");
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
  step("reloading nginx");
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
