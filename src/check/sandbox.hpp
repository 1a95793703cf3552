#pragma once
// `check --sandbox`: the config's TLS servers run by the real nginx on loopback, to be probed
// before the config is deployed. nginx itself decides what the config means; ngxtls only moves
// listen sockets to free 127.0.0.1 ports and stands in for files CI does not have.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "check/sandbox_process.hpp"
#include "model/model.hpp"
#include "tls/pki.hpp"

namespace ngxtls::check {

/// How to run the sandbox.
struct sandbox_options {
  std::string nginx_binary;  ///< nginx executable; empty: `nginx` on PATH, else /usr/sbin/nginx
  /// Masters started on the same ports, every listen with `reuseport`: N hosts or pods behind
  /// one name (docs/nginx-facts.md#ticket-keys-per-instance: each master has its own automatic
  /// ticket keys and caches).
  int instances = 1;
  int max_workers = 8;           ///< cap on worker_processes (`auto` = CPU count, also capped)
  int start_timeout_ms = 15000;  ///< per start and per reload, ms
  /// Parent of the run directories; empty: $TMPDIR (else /tmp) + "/ngxtls-sandbox-UID" (0700).
  std::string base_dir;
  /// True when the caller moved this process into a network namespace with only loopback
  /// (enter_loopback_network_namespace). False: resolver, ssl_stapling_responder and
  /// ssl_ocsp_responder values that point off-host are left out, and stapling from a real
  /// responder is pointed at a closed local port, so that nginx reaches no other host.
  bool network_isolated = false;
  /// Why there is no namespace (for the report's notes) when network_isolated is false.
  std::string no_namespace_reason;
};

/// One TLS listen socket of the linted config, as the sandbox serves it.
struct sandbox_socket {
  std::string original;   ///< "address:port" as nginx prints it (model::listen_socket::name)
  int original_port = 0;  ///< port in the linted config
  int port = 0;           ///< 127.0.0.1 port in the sandbox
  bool stream = false;    ///< a `stream` socket
  /// Literal server names of its servers (SNI to probe), config order, without duplicates;
  /// an empty string stands for "no SNI" (the default server has no literal name).
  std::vector<std::string> names;
};

/// A directive the sandbox nginx rejected (`nginx -t` [emerg]), traced to the linted config.
struct sandbox_rejection {
  source_location where;  ///< the directive in the linted config
  std::string server;     ///< server label: its first name, else "server at FILE:LINE"
  std::string message;    ///< nginx's message, sandbox paths replaced by the configured ones
};

/// A `[warn]` line of the sandbox's last `nginx -t` (the one that passed), traced to the
/// linted config: nginx's own word on a deprecated directive or a listen option conflict.
struct sandbox_warning {
  source_location where;  ///< the directive in the linted config; file empty when unknown
  int port = 0;           ///< linted config's port of the listen line warned about; 0 otherwise
  std::string message;    ///< nginx's message, sandbox paths and addresses replaced
};

/// Something the sandbox changed, stood in for or could not test.
struct sandbox_note {
  std::string server;  ///< server label; empty for the whole sandbox
  std::string text;
};

/// A running sandbox: nginx masters from the linted model, torn down on destruction (and by the
/// keeper when ngxtls dies, see sandbox_process.hpp). Not copyable.
class sandbox {
 public:
  /// Builds the sandbox config from `m` (whose cfg must be set): every server with a TLS listen
  /// socket (http and stream), its listen sockets moved to free 127.0.0.1 ports, its effective
  /// directives of nginx's own http/stream ssl modules (an allow-list: no Lua, Perl or njs code,
  /// no ssl_key_log) and resolver, worker_processes as configured (capped). No module the config
  /// loads is loaded: only ngx_stream_module from the build's own module directory
  /// (`--modules-path`), when there are stream servers and the build has it as a dynamic
  /// module. Every path nginx writes (pid, lock file, error log, *_temp_path) is inside the run
  /// directory; worker_connections and RLIMIT_NOFILE grow with the number of listen sockets.
  /// When ngxtls is root, `nginx -t` and the masters run as choose_sandbox_identity()'s
  /// unprivileged uid, in the run directory (paths given as /proc/self/cwd/...), with copies
  /// of the certificates, keys and other files they read inside it (root:that gid, 0640).
  /// Unreadable certificates, keys and ticket key files get stand-ins
  /// of the same kind (tls::stand_in_options, tls::write_ticket_key_file with the same size);
  /// then runs `nginx -t`: a directive it rejects is recorded (rejections()) and left out, a
  /// server whose listen or certificate it rejects is left out (untested()), and the test is run
  /// again. Then starts options.instances masters and waits until every port accepts.
  /// Sweeps run directories left by killed runs first (sweep_stale_runs).
  /// Throws usage_error when no nginx binary is found, target_error when nginx cannot be started
  /// or the generated config is rejected where no server can be blamed (message has nginx's
  /// own words), input_error never.
  sandbox(const model::model& m, const sandbox_options& options);
  ~sandbox();
  sandbox(const sandbox&) = delete;
  sandbox& operator=(const sandbox&) = delete;

  /// The sockets being served (servers left out do not count; sockets without any are absent).
  const std::vector<sandbox_socket>& sockets() const { return sockets_; }
  /// Directives nginx -t rejected.
  const std::vector<sandbox_rejection>& rejections() const { return rejections_; }
  /// Config ports of sockets where no listen of a started server was written with `ssl`, so
  /// that the sandbox added it (TLS from `ssl on`, or the server that wrote it not started):
  /// there a TLS handshake is the sandbox's doing, not the config's.
  const std::set<int>& ssl_added_ports() const { return ssl_added_ports_; }
  /// `[warn]` lines of the last `nginx -t` round.
  const std::vector<sandbox_warning>& warnings() const { return warnings_; }
  /// Stand-ins, dropped directives, capped workers, stapling not testable, ...
  const std::vector<sandbox_note>& notes() const { return notes_; }
  /// Servers not started, label -> why.
  const std::map<std::string, std::string>& untested() const { return untested_; }
  /// Ticket key files that ran as stand-ins: configured path (absolute) -> stand-in file.
  const std::map<std::string, std::string>& ticket_standins() const { return standin_of_; }
  /// Sandbox port -> port of the linted config's socket.
  std::map<int, int> port_map() const;
  /// The nginx binary used, and the first line of its `-v` output ("nginx version: nginx/1.22.1").
  const std::string& nginx_binary() const { return binary_; }
  const std::string& nginx_version() const { return version_; }
  /// Masters running, and whether they run in their own PID namespace.
  int instances() const { return instances_; }
  bool pid_namespace() const { return keeper_ && keeper_->pid_namespace(); }
  /// Worker processes per master.
  int workers() const { return workers_; }
  /// Who nginx runs as (drop=false: the invoking user, who is not root).
  const sandbox_identity& identity() const { return ident_; }
  /// worker_connections in the generated config.
  int worker_connections() const { return worker_connections_; }
  /// The private run directory (0700; as root: root's, 0710 with the sandbox gid as group),
  /// named by run_dir_template, removed at teardown: scratch space such as saved
  /// sessions goes here.
  const std::string& run_dir() const { return run_dir_; }

  /// Reloads every master (SIGHUP, as `nginx -s reload`) and returns once each has only workers
  /// of the new generation, the expected number of them. Throws target_error on timeout.
  void reload();
  /// Switches the running masters to a config built from `next` (sockets keep their ports by
  /// configured name, stand-ins stay the same files for the same configured paths), checks it
  /// with `nginx -t` as the constructor does, and reloads: a rotation or any other change can
  /// be tried on sessions taken under the previous config. Notes so far are prefixed
  /// "baseline: "; sockets(), rejections() and untested() describe `next` afterwards.
  /// Throws target_error as the constructor and reload() do.
  void reload_into(const model::model& next);
  /// Stops every nginx and removes the run directory. Idempotent; the destructor calls it.
  void stop();

 private:
  void generate(const model::model& m);
  std::string shown(std::string message) const;
  /// Gives the files nginx reads (root:gid, group-readable) and the instance directories it
  /// writes (its uid) to the sandbox identity; nothing when it is not dropped.
  void hand_over() const;
  /// A path under run_dir_ as nginx reaches it: /proc/self/cwd/... when it runs as the
  /// sandbox identity (its working directory is run_dir_, whose parents it may not traverse).
  std::string nx(const std::string& path) const;
  /// nginx's words with its paths mapped back to run_dir_.
  std::string from_nginx(std::string text) const;
  child_setup setup() const;

  std::vector<sandbox_socket> sockets_;
  std::vector<sandbox_rejection> rejections_;
  std::vector<sandbox_warning> warnings_;
  std::set<int> ssl_added_ports_;
  std::vector<sandbox_note> notes_;
  std::map<std::string, std::string> untested_;
  std::string binary_, version_, run_dir_, prefix_;
  int instances_ = 1, workers_ = 1, timeout_ms_ = 15000, max_workers_ = 8;
  std::string conf_path_;
  std::vector<std::string> inst_dirs_;
  std::set<int> taken_;                                ///< loopback ports handed out
  std::map<std::string, int> ports_by_name_;           ///< "http *:443" -> sandbox port
  std::map<std::string, std::string> standin_of_;      ///< real resolved path -> stand-in path
  std::map<std::string, tls::pki_paths> pki_of_pair_;  ///< "cert\nkey" -> stand-in PKI
  std::map<std::string, std::string> display_of_;      ///< sandbox path -> configured text
  std::map<std::string, std::string> addr_display_;    ///< "127.0.0.1:P" -> configured socket
  int standins_ = 0;
  sandbox_identity ident_;
  std::string nginx_root_;    ///< run_dir_ as nginx names it
  std::string configure_;     ///< `nginx -V` configure arguments
  std::string modules_path_;  ///< the build's --modules-path
  bool network_isolated_ = false;
  std::map<std::string, std::string> copy_of_;  ///< real path -> copy nginx reads
  int worker_connections_ = 512;
  rlim_t nofile_ = 0;  ///< RLIMIT_NOFILE for nginx
  std::unique_ptr<keeper> keeper_;
};

/// The default parent of sandbox run directories: $TMPDIR (else /tmp) + "/ngxtls-sandbox-UID".
std::string default_sandbox_base();

/// `arg` as one nginx configuration token: double-quoted, with `"` and `\` escaped and
/// newline, tab and carriage return written as \n \t \r, which nginx's tokenizer reads back
/// as the same bytes (ngx_conf_read_token, nginx 1.22.1).
std::string quote_token(const std::string& arg);

}  // namespace ngxtls::check
