#pragma once
// The model: a syntax tree resolved into what nginx will run with, per server and per
// listen socket: every ssl_* directive's effective value and where it came from.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tree.hpp"
#include "model/upstream.hpp"
#include "model/version.hpp"

namespace ngxtls::model {

/// Where an effective value came from: set in the server block, inherited from the enclosing
/// `http`/`stream` block, or nginx's built-in default for the assumed version.
enum class origin { server, inherited, nginx_default };
/// "server", "http" / "stream" (inherited, named by the context), "default".
std::string to_string(origin o, bool stream_context = false);

/// The unescaped argument values of one directive occurrence: a view over its
/// config::argument records that yields std::string_view (into the config's storage, or
/// static text for a built-in default). Random access; cheap to copy.
class values_view {
 public:
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    iterator() = default;
    explicit iterator(const config::argument* p) : p_(p) {}
    std::string_view operator*() const { return p_->value(); }
    std::string_view operator[](difference_type i) const { return p_[i].value(); }
    iterator& operator++() {
      ++p_;
      return *this;
    }
    iterator operator++(int) {
      auto t = *this;
      ++p_;
      return t;
    }
    iterator& operator--() {
      --p_;
      return *this;
    }
    iterator operator--(int) {
      auto t = *this;
      --p_;
      return t;
    }
    iterator& operator+=(difference_type n) {
      p_ += n;
      return *this;
    }
    iterator& operator-=(difference_type n) {
      p_ -= n;
      return *this;
    }
    friend iterator operator+(iterator a, difference_type n) { return a += n; }
    friend iterator operator+(difference_type n, iterator a) { return a += n; }
    friend iterator operator-(iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(iterator a, iterator b) { return a.p_ - b.p_; }
    friend bool operator==(iterator a, iterator b) { return a.p_ == b.p_; }
    friend auto operator<=>(iterator a, iterator b) { return a.p_ <=> b.p_; }

   private:
    const config::argument* p_ = nullptr;
  };
  values_view() = default;
  explicit values_view(config::list<config::argument> args) : args_(args) {}
  iterator begin() const { return iterator(args_.begin()); }
  iterator end() const { return iterator(args_.end()); }
  std::size_t size() const { return args_.size(); }
  bool empty() const { return args_.empty(); }
  std::string_view operator[](std::size_t i) const { return args_[i].value(); }
  std::string_view front() const { return args_.front().value(); }
  std::string_view back() const { return args_.back().value(); }
  /// Copies, for code that keeps the values beyond the config.
  std::vector<std::string> strings() const { return {begin(), end()}; }
  /// Same values in the same order.
  friend bool operator==(const values_view& a, const values_view& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  config::list<config::argument> args_;
};

/// One occurrence of a directive: its arguments and the directive in the tree.
struct occurrence {
  values_view args;
  const config::directive* where = nullptr;  ///< null for a built-in default
};

/// The occurrences of one setting, in config order. Nearly every setting has exactly one,
/// kept inline: a std::vector cost a heap block per setting (15,000 servers).
/// The part of std::vector's interface the rules use; `occurrence` is trivially copyable.
class occurrence_list {
 public:
  occurrence_list() = default;
  occurrence_list(const occurrence_list& o) { append(o.begin(), o.end()); }
  occurrence_list(occurrence_list&& o) noexcept { steal(o); }
  occurrence_list& operator=(const occurrence_list& o) {
    if (this != &o) {
      clear();
      append(o.begin(), o.end());
    }
    return *this;
  }
  occurrence_list& operator=(occurrence_list&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~occurrence_list() { release(); }

  const occurrence* begin() const { return cap_ > 1 ? many_ : &one_; }
  const occurrence* end() const { return begin() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const occurrence& operator[](std::size_t i) const { return begin()[i]; }
  const occurrence& front() const { return begin()[0]; }
  const occurrence& back() const { return begin()[size_ - 1]; }
  /// Appends `o` (the second occurrence moves every one to the heap).
  void push_back(const occurrence& o) {
    if (size_ == cap_) grow();
    (cap_ > 1 ? many_ : &one_)[size_++] = o;
  }
  /// Removes every occurrence (heap storage is kept).
  void clear() { size_ = 0; }

 private:
  void grow() {
    const std::uint32_t cap = cap_ * 2;
    auto* p = new occurrence[cap];
    std::copy(begin(), end(), p);
    release();
    many_ = p;
    cap_ = cap;
  }
  void append(const occurrence* first, const occurrence* last) {
    for (; first != last; ++first) push_back(*first);
  }
  void release() {
    if (cap_ > 1) delete[] many_;
    one_ = {};
    cap_ = 1;
  }
  void steal(occurrence_list& o) {
    if (o.cap_ > 1)
      many_ = o.many_;
    else
      one_ = o.one_;
    size_ = o.size_;
    cap_ = o.cap_;
    o.one_ = {};
    o.size_ = 0;
    o.cap_ = 1;
  }
  union {
    occurrence one_{};  ///< the only occurrence while cap_ == 1
    occurrence* many_;  ///< heap array of cap_ occurrences when cap_ > 1
  };
  std::uint32_t size_ = 0;
  std::uint32_t cap_ = 1;
};

/// The effective value of one directive in one server, with its origin.
/// Directives that may repeat (ssl_certificate, ssl_session_ticket_key, ssl_conf_command)
/// keep every occurrence in order; nginx's merge takes the server's list when the server
/// sets any, else the http (stream) block's list (ngx_conf_merge_ptr_value /
/// ngx_conf_merge_array, nginx src/http/modules/ngx_http_ssl_module.c).
struct setting {
  origin from = origin::nginx_default;
  occurrence_list values;  ///< last occurrence wins for single-valued directives
  /// The arguments of the last occurrence (empty when unset and without default).
  values_view args() const;
  /// First argument or "" .
  std::string_view first() const;
  /// The directive that set it (last occurrence), null for a default.
  const config::directive* where() const;
};

/// FNV-1a of a directive name: the sort key of setting lists. Rules look names up millions of
/// times on large fleets; a search over integers with one final compare beats one over
/// strings that share their "ssl_" prefix, and a literal name is hashed at compile time.
constexpr std::uint64_t setting_key(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// One entry of a setting_list: a directive name, a hash of it (the sort key) and the setting.
struct named_setting {
  std::uint64_t key = 0;  ///< hash of `name`: lookups compare integers, not names
  std::string_view name;
  setting value;
};
/// Settings of one block, sorted by key (binary search).
using setting_list = std::vector<named_setting>;

/// What the servers of one `http` or `stream` block share: the block's own settings and the
/// built-in defaults. Shared, not copied per server (15,000 servers).
struct context_settings {
  setting_list inherited;  ///< set in the http/stream block (origin::inherited)
  setting_list defaults;   ///< built-in defaults not set there (origin::nginx_default)
  setting_list effective;  ///< both, sorted by key: what a server without its own value gets
};

/// The block a server is in. Mail servers (IMAP, POP3, SMTP proxies) take the same ssl_*
/// directives as stream ones, plus `starttls` (nginx ngx_mail_ssl_module).
enum class context_kind { http, stream, mail };
/// "http", "stream", "mail".
std::string to_string(context_kind c);
/// to_string(origin) with the inherited origin named by the block it came from.
std::string to_string(origin o, context_kind c);

/// One `listen` directive of a server.
struct listen_directive {
  std::string address = "*";  ///< "*", an IPv4 address, "[v6]", a host name, or "unix:PATH"
  int port = 80;
  bool ssl = false;
  bool default_server = false;  ///< `default_server` or the old `default`
  bool reuseport = false;
  bool quic = false;
  bool http2 = false;
  bool proxy_protocol = false;
  const config::directive* where = nullptr;  ///< null for the implicit `listen *:80`
  /// The earlier listen that already holds this address and port when nginx refuses this one
  /// (docs/nginx-facts.md#duplicate-listen): a repeat in the same server (any context), or a
  /// second server on it in mail, or in stream before nginx 1.25.5. Such a listen joins no
  /// socket; null otherwise.
  const config::directive* duplicate_of = nullptr;
};

/// One `server` block.
struct server {
  context_kind context = context_kind::http;
  const config::directive* where = nullptr;  ///< the `server` directive
  /// The `http`, `stream` or `mail` block directive the server is in.
  const config::directive* block = nullptr;
  std::vector<listen_directive> listens;
  std::vector<std::string> names;  ///< server_name arguments in order ("" kept)
  /// The ssl_* directives (plus `resolver`, `ssl`, `http2`, `http3*` and `quic_*`) set in the
  /// server block.
  setting_list own;
  /// Those of the enclosing http/stream block and the defaults for the assumed nginx version.
  std::shared_ptr<const context_settings> outer;
  /// The effective setting of directive `name` (own, else inherited, else default), or null
  /// when neither set nor defaulted.
  const setting* get(std::string_view name) const { return get(name, setting_key(name)); }
  /// get() with `key` = setting_key(name) already worked out.
  const setting* get(std::string_view name, std::uint64_t key) const;
  /// Every effective setting, sorted by name.
  std::vector<std::pair<std::string_view, const setting*>> settings() const;
  /// True when any listen has `ssl` (or `ssl on` applies, nginx < 1.25.1), or, in mail,
  /// `starttls on` / `starttls only` upgrades its plain connections.
  bool has_ssl = false;
  /// Mail: the `starttls` directive in effect when it is `on` or `only`, else null.
  const config::directive* starttls = nullptr;
  /// The first `listen ... ssl` (or first listen) directive; null for the implicit listen.
  const config::directive* first_ssl_listen() const;
  /// Indices into model::sockets of the sockets this server is on, ascending, each once:
  /// rules that ask a question per server about its sockets read these, not every socket.
  std::vector<std::uint32_t> sockets;
};

/// One listen socket: an address:port in one context, with its default server.
/// docs/nginx-facts.md#default-server-rules: the session cache, timeout and ticket keys of every
/// handshake on the socket come from its default server.
struct listen_socket {
  context_kind context = context_kind::http;
  std::string address;
  int port = 0;
  bool ssl = false;        ///< any listen on it has `ssl` (nginx ORs the flag)
  bool reuseport = false;  ///< any listen on it has `reuseport`
  /// A `listen ... quic` socket: UDP, HTTP/3 over QUIC, TLS 1.3 only (nginx refuses a QUIC
  /// server whose ssl_protocols lack TLSv1.3: docs/nginx-facts.md#quic). A TCP and a QUIC
  /// listen on one address and port are two sockets; `ssl` stays false on a QUIC socket.
  bool quic = false;
  /// The listens on it that carry `reuseport` (nginx refuses a second one: "duplicate listen
  /// options").
  std::vector<const config::directive*> reuseport_listens;
  std::size_t default_server = 0;    ///< index into model::servers
  bool default_marked = false;       ///< the default came from `default_server`
  std::vector<std::size_t> servers;  ///< every server on it, in config order (ascending, once)
  /// "address:port" as nginx prints it.
  std::string name() const;
};

/// The resolved configuration.
struct model {
  const config::config* cfg = nullptr;
  assumed_versions versions;
  std::vector<server> servers;
  std::vector<listen_socket> sockets;
  /// worker_processes: a number, 0 for `auto`, nullopt when absent (nginx default 1).
  std::optional<int> worker_processes;
  const config::directive* worker_processes_where = nullptr;
  /// `quic_bpf on|off` in the main context: nginx routes a QUIC connection's packets to the
  /// worker that owns it with an eBPF program (Linux, reuseport sockets); nullopt when absent
  /// (default off).
  std::optional<bool> quic_bpf;
  const config::directive* quic_bpf_where = nullptr;
  /// The `upstream` blocks of every http and stream block, in config order.
  std::vector<upstream_block> upstreams;
  /// Every TLS upstream (model/upstream.hpp), in config order within each server.
  std::vector<tls_upstream> tls_upstreams;
};

/// How messages name a server: its first non-empty server_name, else "server at FILE:LINE"
/// (the `server` directive's location), else "server" when the model has no source for it.
std::string server_label(const model& m, const server& s);

/// Built-in default arguments of a directive for an nginx version, or nullopt when nginx
/// has none (e.g. ssl_certificate). docs/nginx-facts.md#builtin-defaults; ssl_protocols per
/// version: < 1.23.4 "TLSv1 TLSv1.1 TLSv1.2"; 1.23.4 - 1.27.2 adds TLSv1.3; from 1.27.3 "TLSv1.2
/// TLSv1.3" (nginx CHANGES).
std::optional<std::vector<std::string>> nginx_default(const std::string& directive,
                                                      const version& nginx);

/// nginx_default() as static text, or null when nginx has none: what default settings point at.
const std::vector<std::string_view>* default_text(std::string_view directive, const version& nginx);

/// Resolves a parsed configuration. Never throws for odd configs: unparseable listen
/// arguments are kept as written (port 0). The returned model points into `cfg`,
/// which must outlive it.
model build(const config::config& cfg, const assumed_versions& versions);

/// True when server `s` speaks TLS or is set up to: a `listen ... ssl` or `quic`, `ssl on`, a
/// mail `starttls`, or an `ssl_certificate` in effect (own or inherited). A run that finds
/// none checked nothing TLS (the no-tls-server note).
bool offers_tls(const server& s);

/// Helpers on effective values.
/// True when the ssl_protocols arguments enable `proto` ("TLSv1.3", ...).
bool protocols_enable(const setting* protocols, std::string_view proto);
/// ssl_session_cache state: none/off (no cache), builtin only (per worker), shared (any shared:
/// zone).
enum class session_cache_kind { none, off, builtin, shared };
session_cache_kind cache_kind(const setting* cache);
/// The shared zone size in bytes of `shared:NAME:SIZE`, if any.
std::optional<std::uint64_t> shared_cache_bytes(const setting* cache);
/// True when an on/off setting is "on".
bool is_on(const setting* s);

/// The QUIC sockets (`listen ... quic`) server `s` is on, in socket order.
std::vector<const listen_socket*> quic_sockets_of(const model& m, const server& s);
/// True when server `s` has a `listen ... ssl` (a TCP TLS listen; `ssl on` counts before 1.25.1).
bool has_tcp_tls(const server& s);

}  // namespace ngxtls::model
