#pragma once
// `check --sandbox`: the config's TLS servers run by the real nginx on loopback, to be probed
// before the config is deployed. nginx itself decides what the config means; ngxtls only moves
// listen sockets to free 127.0.0.1 ports and stands in for files CI does not have.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "model/model.hpp"
#include "sandbox/nginx_build.hpp"
#include "sandbox/run_material.hpp"
#include "sandbox/sandbox_process.hpp"
#include "sandbox/upstream_standin.hpp"
#include "tls/pki.hpp"

namespace ngxtls::sandbox {

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
  /// Told each step as it starts ("writing the sandbox config", "nginx -t ...", "starting
  /// nginx", ...), for a progress line (may be empty).
  std::function<void(const std::string& step)> on_step;
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
  /// The entries of `names` whose server has `ssl_reject_handshake on`: nginx refuses the
  /// handshake there (an unrecognized_name alert), so a refused probe is the expected outcome.
  std::vector<std::string> refusing;
};

/// Whether `host` (no port, brackets allowed) is this machine's loopback: "localhost", ::1 or
/// 127.0.0.0/8.
bool loopback_host(std::string host);

/// The host of an nginx address argument: "http://host:port/path", "host:port", "[v6]:port",
/// "host" (brackets kept for IPv6).
std::string host_of(std::string arg);

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

/// `nginx -t` of the whole linted config with the sandbox's nginx binary, before the TLS
/// servers run: the main file and every file the loader read mirrored into the run directory
/// line for line, so that nginx's FILE:LINE is the operator's. Neutralised in place (the
/// directive's text replaced, its newlines kept): load_module, user, pid, lock_file,
/// ssl_engine, ssl_key_log, working_directory and code-running directives (*lua*, perl*, js_*)
/// left out; error_log, access_log and temp/cache paths pointed into the run directory;
/// certificates, keys and other files nginx reads pointed at the sandbox's copies or stand-ins;
/// includes pointed at the mirrored files. Run as the sandbox identity in the loopback-only
/// network namespace; skipped without that namespace.
struct whole_config_test {
  enum class outcome {
    passed,        ///< nginx -t accepted it
    rejected,      ///< nginx's [emerg]: the operator's config, as this binary sees it
    not_testable,  ///< nginx stopped on something the sandbox changed (reason says what)
    skipped        ///< not run (message says why)
  };
  outcome result = outcome::skipped;
  source_location where;  ///< rejected/not_testable: the operator's FILE:LINE (and column)
  std::string message;    ///< nginx's [emerg] message; skipped: why it did not run
  std::string reason;     ///< not_testable: why nginx's message is not the config's verdict
  std::vector<sandbox_warning> warnings;  ///< nginx's [warn] lines, at the operator's lines
  std::vector<std::string> notes;         ///< directives left out, with their locations
};
/// "passed", "rejected", "not_testable", "skipped".
std::string to_string(whole_config_test::outcome o);

/// Why host name lookups configured by `nsswitch` (the text of /etc/nsswitch.conf) could leave a
/// loopback-only network namespace, or "" when they cannot: the `hosts:` sources may only be
/// `files`, `dns` (no network there) and `myhostname`; any other (resolve, mdns*, sss, ldap,
/// winbind, ...) asks a daemon over a local socket that resolves outside it. No `hosts:` line
/// is glibc's default, dns and files.
std::string name_service_outside(std::string_view nsswitch);

/// Something the sandbox changed, stood in for or could not test.
struct sandbox_note {
  std::string server;  ///< server label; empty for the whole sandbox
  std::string text;
};

/// How one TLS upstream is run in the sandbox. Each variant is a location of its own
/// (`location = /.ngxtls/upstream/N/VARIANT` in the upstream's server; in stream the server
/// itself) proxying to a stand-in of its own.
enum class upstream_variant {
  as_configured,  ///< the location's effective upstream settings, stand-in certificate for its name
  wrong_name,     ///< as configured, the stand-in's certificate issued for another name
  fixed,  ///< keepalive, proxy_http_version 1.1, Connection "", session reuse on, no variables
};
/// "as configured", "wrong name", "fixed".
std::string to_string(upstream_variant v);

/// One variant of a TLS upstream: where to send requests and the stand-in that answers them.
struct sandbox_upstream_route {
  upstream_variant variant = upstream_variant::as_configured;
  std::string path;  ///< request path through nginx ("/" in stream: any request)
  /// The stand-in nginx reaches; owned by the sandbox, valid until its next generation.
  const upstream_standin* standin = nullptr;
};

/// A TLS upstream of the linted config (model::tls_upstreams) as the sandbox runs it.
struct sandbox_upstream {
  std::size_t upstream = 0;  ///< index into model::tls_upstreams
  std::string server;        ///< server label
  std::string location;      ///< the location as written ("/api/", "= /login"); "" in stream
  bool stream = false;
  int port = 0;          ///< 127.0.0.1 port of the server's TLS socket in the sandbox
  std::string sni;       ///< a name that selects the server ("" none)
  std::string ssl_name;  ///< the name nginx sends and verifies (the stand-in's certificate name)
  /// The variants run (in stream only as_configured: each variant would need a socket).
  std::vector<sandbox_upstream_route> routes;
  /// The route of `v`, or null.
  const sandbox_upstream_route* route(upstream_variant v) const;
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
  /// The QUIC sockets being served (UDP 127.0.0.1 ports; `listen ... quic` on an nginx with
  /// HTTP/3), kept apart from sockets() because a TCP TLS probe cannot reach them.
  const std::vector<sandbox_socket>& quic_sockets() const { return quic_sockets_; }
  /// `nginx -t` of the whole config (test_whole_config): run before the masters start, and
  /// again on the config reload_into switches to.
  const whole_config_test& whole_config() const { return whole_; }
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
  const std::map<std::string, std::string>& ticket_standins() const {
    return material_.ticket_key_standins();
  }
  /// The TLS upstreams run against stand-ins (sandbox_upstream), in model::tls_upstreams
  /// order; those left out are in notes().
  const std::vector<sandbox_upstream>& upstreams() const { return upstreams_; }
  /// Sandbox port -> port of the linted config's socket.
  std::map<int, int> port_map() const;
  /// The nginx binary used, and the first line of its `-v` output ("nginx version: nginx/1.22.1").
  const std::string& nginx_binary() const { return build_.binary; }
  const std::string& nginx_version() const { return build_.version_line; }
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
  struct generation_plan;   // defined in sandbox_plan.hpp
  struct rendered_config;   // defined in sandbox_plan.hpp
  struct server_plan;       // defined in sandbox_plan.hpp
  struct certificate_pair;  // defined in sandbox_plan.hpp
  struct line_origin;       // defined in sandbox_plan.hpp

  /// The private run directory under options.base_dir (or default_sandbox_base()), with the
  /// material and instance directories, the notes on identity and network.
  void make_run_directory(const sandbox_options& o);
  /// Generates the config, tests it, starts the masters and waits until they serve; starts
  /// again on new ports when a port was taken meanwhile.
  void start(const model::model& m);
  /// Waits until every master runs its workers and every port accepts: "" then, else nginx's
  /// [emerg] lines (or "" after the deadline, which timed_out says).
  std::string wait_until_serving(bool& timed_out) const;
  /// Generates the sandbox config for `m` and tests it: the phases below, in this order, over
  /// one generation_plan.
  void generate(const model::model& m);
  /// Phase 1: each TLS listen socket of `m` gets a free 127.0.0.1 port (UDP for a QUIC socket,
  /// when this nginx serves HTTP/3), the same one as in the previous generation for the same
  /// configured socket.
  void assign_ports(const model::model& m, generation_plan& plan);
  /// Phase 2: a server plan per server on a served socket (its label and sockets), with its
  /// certificate lines (stand_in_certificates) and its other directives (plan_directives).
  void plan_servers(const model::model& m, generation_plan& plan);
  /// Phase 2a: the server's ssl_certificate/ssl_certificate_key pairs, by position as nginx
  /// pairs them; an unreadable certificate or key gets a stand-in PKI of the same shape (key
  /// type, names, remaining lifetime, OCSP URL pointed at a closed local port), with a note.
  void stand_in_certificates(const model::model& m, server_plan& p);
  /// The stand-in PKI of one certificate pair (made once per pair and kind), noted the first
  /// time.
  const tls::pki_paths& stand_in_pair(const model::model& m, server_plan& p,
                                      const certificate_pair& pair);
  /// Phase 2b: the server's other effective directives, each as directive_policy's
  /// server_policy says (file arguments copied or stood in for, off-host names left out as the
  /// network requires, other modules' ssl_* left out with a note).
  void plan_directives(const model::model& m, server_plan& p);
  /// One occurrence of a directive: its line in the server plan, or a note on why not.
  void plan_occurrence(const model::model& m, server_plan& p, const std::string& name,
                       const model::occurrence& occ);
  /// Whether the resolver or responder `args` may stay, as the network allows (notes why not).
  bool address_allowed(server_plan& p, const std::string& name,
                       const std::vector<std::string>& args);
  /// The CA file nginx gets for ssl_trusted_certificate / ssl_client_certificate, "" to leave
  /// it out.
  std::string ca_file(server_plan& p, const std::string& name, const std::string& real,
                      const std::string& arg);
  /// Phase 3: worker_processes (capped), the modules to load (only the build's own stream
  /// module), worker_connections and RLIMIT_NOFILE for the socket count, temp paths.
  void plan_workers_and_modules(const model::model& m, generation_plan& plan);
  /// Phase 4: each server's listen lines with their options, moved to the loopback ports
  /// (reuseport added for several instances).
  void plan_listens(const model::model& m, generation_plan& plan);
  /// Phase 5: renders the config and runs `nginx -t` until it passes; each [emerg] is blamed
  /// on a directive (left out, recorded in rejections_), a server (left out, untested_) or the
  /// stream block; the passing round's [warn] lines go to warnings_. Throws target_error when
  /// nothing can be blamed.
  void test_with_blame(const model::model& m, generation_plan& plan);
  /// The line of the rendered config nginx's [emerg] is about.
  line_origin blame(const model::model& m, const generation_plan& plan,
                    const rendered_config& rendered, const std::string& message, int line) const;
  /// Leaves out what `blamed` stands for (a directive, a server, the stream block) and records
  /// why. Throws target_error when it stands for nothing that can be left out.
  void leave_out(const model::model& m, generation_plan& plan, const line_origin& blamed,
                 const std::string& message);
  /// The [warn] lines of `err` (nginx -t's, of `rendered`), traced to the linted config.
  void record_warnings(const model::model& m, const rendered_config& rendered,
                       const std::string& err);
  /// Phase 2c: a stand-in per TLS upstream and variant, and the lines that point nginx at it
  /// (upstream_plan.cpp).
  void plan_upstreams(const model::model& m, generation_plan& plan);
  /// The location lines of one variant of a TLS upstream (upstream_plan.cpp).
  std::vector<std::string> upstream_location(const model::model& m, std::size_t ui,
                                             upstream_variant v, const upstream_standin& standin,
                                             std::vector<std::string>& block_lines);
  /// upstreams_ from the plan, once the servers are tested (upstream_plan.cpp).
  void record_upstreams(const model::model& m, const generation_plan& plan);
  /// Phase 6: sockets_ and ssl_added_ports_ from the servers still in the plan.
  void record_served(const model::model& m, const generation_plan& plan);
  /// The config text of the plan, limited to one server plan (`only`) and without one more
  /// line (`extra`, (server plan, line)) when given, and what each line stands for (1-based).
  rendered_config render(const model::model& m, const generation_plan& plan,
                         std::optional<std::size_t> only,
                         std::optional<std::pair<std::size_t, std::size_t>> extra) const;
  /// Fills whole_ (see whole_config_test): mirrors every file of m.cfg into the run directory
  /// with the host-facing directives neutralised and runs `nginx -t` on it. Uses the copies and
  /// stand-ins of the first generation (sandbox_path_of_), so it runs after generate().
  void test_whole_config(const model::model& m);
  /// Writes `text` as the sandbox config and runs `nginx -t` on it as nginx will run.
  command_output nginx_test(const std::string& text) const;
  /// Gives the files nginx reads (root:gid, group-readable) and the instance directories it
  /// writes (its uid) to the sandbox identity; nothing when it is not dropped.
  void hand_over() const;
  /// How nginx's processes are started: the identity, RLIMIT_NOFILE, the working directory.
  child_setup setup() const;

  nginx_build build_;      ///< the nginx binary and what `nginx -V` says of it
  run_material material_;  ///< copies and stand-ins, and path translation
  std::vector<sandbox_socket> sockets_;
  std::vector<sandbox_socket> quic_sockets_;
  std::vector<std::unique_ptr<upstream_standin>> standins_;
  std::vector<sandbox_upstream> upstreams_;
  std::vector<sandbox_rejection> rejections_;
  std::vector<sandbox_warning> warnings_;
  std::set<int> ssl_added_ports_;
  std::vector<sandbox_note> notes_;
  std::map<std::string, std::string> untested_;
  std::string run_dir_;
  int instances_ = 1, workers_ = 1, timeout_ms_ = 15000, max_workers_ = 8;
  std::string conf_path_;
  std::vector<std::string> inst_dirs_;
  std::set<int> taken_;                       ///< loopback ports handed out
  std::map<std::string, int> ports_by_name_;  ///< "http *:443" -> sandbox port
  sandbox_identity ident_;
  bool network_isolated_ = false;
  std::function<void(const std::string&)> on_step_;  // sandbox_options::on_step
  void step(const std::string& what) const {
    if (on_step_) on_step_(what);
  }
  int worker_connections_ = 512;
  rlim_t nofile_ = 0;  ///< RLIMIT_NOFILE for nginx
  std::unique_ptr<keeper> keeper_;
  whole_config_test whole_;
  /// (config::directive::file, offset) of a file-reading directive -> the file the sandbox
  /// gives nginx for it (copy or stand-in), from the server plans.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> sandbox_path_of_;
  /// (file, offset) of a `server` directive under which no ssl_certificate applies -> the
  /// stand-in certificate and key the sandbox runs it with.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::string, std::string>>
      standin_for_server_;
};

/// The default parent of sandbox run directories: $TMPDIR (else /tmp) + "/ngxtls-sandbox-UID".
std::string default_sandbox_base();

/// `arg` as one nginx configuration token: double-quoted, with `"` and `\` escaped and
/// newline, tab and carriage return written as \n \t \r, which nginx's tokenizer reads back
/// as the same bytes (ngx_conf_read_token, nginx 1.22.1).
std::string quote_token(const std::string& arg);

}  // namespace ngxtls::sandbox
