#include "probe/prober.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <list>
#include <memory>

#include "base/error.hpp"
#include "probe/session_file.hpp"
#include "tls/certificate.hpp"
#include "tls/ocsp.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::probe {

std::string to_string(ocsp_status s) {
  switch (s) {
    case ocsp_status::working:
      return "working";
    case ocsp_status::invalid:
      return "invalid";
    case ocsp_status::absent:
      return "absent";
    case ocsp_status::not_applicable:
      return "not_applicable";
    case ocsp_status::skipped:
      return "skipped";
  }
  return "?";
}

timing_ms summarize_ms(std::vector<double> samples_ms) {
  timing_ms t;
  t.count = samples_ms.size();
  if (samples_ms.empty()) return t;
  std::sort(samples_ms.begin(), samples_ms.end());
  auto rank = [&](double q) {
    auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples_ms.size())));
    return samples_ms[std::clamp<std::size_t>(k, 1, samples_ms.size()) - 1];
  };
  t.median = rank(0.5);
  t.p90 = rank(0.9);
  return t;
}

namespace {

using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;

double ms_between(time_point a, time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Tickets of at most this many bytes carry only a session ID (OpenSSL's stateful TLS 1.3
// tickets are 32 bytes, docs/nginx-facts.md#tickets-off-tls13); longer ones hold the sealed
// session.
constexpr std::size_t stateful_ticket_max_bytes = 48;
// How long to keep reading for TLS 1.3 tickets after the last one arrived (--no-http), ms.
constexpr int ticket_quiet_ms = 50;

struct run_spec {
  std::string protocol;   // "TLSv1.3" / "TLSv1.2"
  std::string mechanism;  // "ticket" / "session_id"
  SSL_CTX* ctx = nullptr;
  bool tls13 = false;
};

enum class conn_kind { first, sample, attempt, ocsp };
enum class phase { connecting, handshaking, writing, reading, done };

struct target_state;

struct connection {
  target_state* owner = nullptr;
  std::size_t run_index = 0;
  conn_kind kind = conn_kind::first;
  int attempt_index = -1;
  bool tls13 = false;
  int fd = -1;
  tls::ssl_ptr ssl;
  phase ph = phase::connecting;
  time_point started, deadline, last_data;
  bool want_write = false;
  std::string request;
  std::size_t request_off = 0;
  std::string tail;                // last bytes read, to find the end of the HTTP headers
  std::string status_line;         // the response's first bytes, for its status code
  std::optional<int> http_status;  // e.g. 421 (Misdirected Request) for a session from another name
  std::size_t bytes_read = 0;
  std::vector<session_ptr> sessions;  // from the new-session callback, in arrival order
  std::size_t max_sessions = 64;      // probe_options::max_tickets_per_connection
  bool too_many_sessions = false;     // the server sent more tickets than that
  bool handshake_ok = false;
  bool reused = false;
  double handshake_ms = 0;
  std::optional<std::string> error;
  bool tcp_error = false;
  bool stapled = false;
  tls::staple_check staple;  // the staple checked against this handshake's chain
  std::string negotiated_protocol, cipher, group, alpn;

  ~connection() {
    ssl.reset();
    if (fd >= 0) ::close(fd);
  }
};

// At most this many extra full handshakes per ticket run to see every key name twice.
constexpr int max_key_samples = 24;

struct run_state {
  run_spec spec;
  run_result res;
  session_ptr base;                 // offered in same_session mode
  session_ptr latest;               // newest session, offered in fresh_tickets mode
  std::vector<session_ptr> unused;  // fresh_tickets: tickets not offered yet, newest last
  bool started = false, first_done = false, skip_attempts = false, finished = false;
  int launched = 0, completed = 0, in_flight = 0, samples_launched = 0;
  std::vector<double> full_ms, resumed_ms;
  std::map<std::string, int> prefix_counts;
  time_point started_at;
};

enum class stage { waiting, runs, ocsp_retry, finished };

// The last staple checked for a target, with the certificates it was checked against.
struct staple_memo {
  std::string der;
  std::vector<tls::x509_ptr> certs;  // leaf, then the peer chain
  tls::staple_check verdict;

  bool same(std::string_view d, X509* leaf, const std::vector<X509*>& chain) const {
    if (certs.empty() || d != der || certs.size() != chain.size() + 1) return false;
    if (leaf == nullptr || X509_cmp(certs[0].get(), leaf) != 0) return false;
    for (std::size_t i = 0; i < chain.size(); ++i)
      if (X509_cmp(certs[i + 1].get(), chain[i]) != 0) return false;
    return true;
  }
  void remember(std::string_view d, X509* leaf, const std::vector<X509*>& chain,
                const tls::staple_check& v) {
    certs.clear();
    if (leaf == nullptr) return;
    der.assign(d);
    X509_up_ref(leaf);
    certs.emplace_back(leaf);
    for (X509* c : chain) {
      X509_up_ref(c);
      certs.emplace_back(c);
    }
    verdict = v;
  }
};

struct target_state {
  target t;
  target_result res;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::vector<run_state> runs;
  std::size_t run = 0;
  int in_flight = 0;
  stage st = stage::waiting;
  time_point started, deadline, next_ocsp_at, first_ocsp, last_ocsp;
  bool have_first_ocsp = false;
  SSL_CTX* working_ctx = nullptr;  // a context whose handshake succeeded (for OCSP retries)
  std::optional<tls::staple_check> shown_staple;  // the first invalid staple, else the last
  staple_memo last_staple_check;
  std::optional<std::string> first_error;
};

// True while some ticket prefix was seen once only and more tickets could tell whether it is
// a key name: other prefixes repeat (a real key name layout), or fewer than 4 tickets so far.
bool need_samples(const run_state& r) {
  int singles = 0, repeats = 0, total = 0;
  for (const auto& [prefix, n] : r.prefix_counts) {
    (n == 1 ? singles : repeats) += 1;
    total += n;
  }
  return singles > 0 && (repeats > 0 || total < 4);
}

int on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* c = static_cast<connection*>(SSL_get_app_data(ssl));
  if (c == nullptr) return 0;
  if (c->sessions.size() >= c->max_sessions) {
    c->too_many_sessions = true;  // returning 0 leaves the session to OpenSSL, which frees it
    return 0;
  }
  c->sessions.emplace_back(session);  // keeps the reference OpenSSL handed us
  return 1;
}

tls::ssl_ctx_ptr make_ctx(int version, bool no_ticket, bool http, long max_cert_list) {
  tls::ssl_ctx_ptr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) tls::throw_openssl("SSL_CTX_new");
  // Bounds the peer's Certificate message (chain size); a longer one fails the handshake
  // with "excessive message size".
  SSL_CTX_set_max_cert_list(ctx.get(), max_cert_list);
  SSL_CTX_set_min_proto_version(ctx.get(), version);
  SSL_CTX_set_max_proto_version(ctx.get(), version);
  if (no_ticket) SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  // A peer that closes without close_notify after the handshake (nginx stream servers, many
  // proxies) ends the reading cleanly, as browsers take it: otherwise OpenSSL 3 makes the EOF
  // a fatal error, which marks the connection's sessions not resumable.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  // The client "cache" only hands every new session to our callback; nothing is stored.
  SSL_CTX_set_session_cache_mode(ctx.get(),
                                 SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx.get(), on_new_session);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);  // a prober measures, it does not trust
  if (http) {
    static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(ctx.get(), alpn, sizeof alpn);
  }
  return ctx;
}

std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    auto* s = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(s->sin6_port));
  }
  auto* s = reinterpret_cast<const sockaddr_in*>(&a);
  inet_ntop(AF_INET, &s->sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(s->sin_port));
}

std::string first_openssl_reason() {
  unsigned long e = ERR_get_error();
  std::string out;
  if (e != 0) {
    const char* r = ERR_reason_error_string(e);
    out = r ? r : ("OpenSSL error " + std::to_string(e));
  }
  ERR_clear_error();
  return out;
}

bool unsupported_protocol(const std::string& reason) {
  return reason.find("protocol version") != std::string::npos ||
         reason.find("unsupported protocol") != std::string::npos ||
         reason.find("no protocols available") != std::string::npos ||
         reason.find("alert handshake failure") != std::string::npos;
}

class prober {
 public:
  prober(const std::vector<target>& targets, const probe_options& o) : opt_(o) {
    tls13_ = make_ctx(TLS1_3_VERSION, false, o.http, o.max_cert_list_bytes);
    tls12_ticket_ = make_ctx(TLS1_2_VERSION, false, o.http, o.max_cert_list_bytes);
    tls12_id_ = make_ctx(TLS1_2_VERSION, true, o.http, o.max_cert_list_bytes);
    if (o.sess_in) sess_in_ = read_session_pem(*o.sess_in);
    if (o.sess_out) check_session_output(*o.sess_out);  // fail before probing, not after
    for (const auto& t : targets) {
      auto ts = std::make_unique<target_state>();
      ts->t = t;
      ts->res.target = t.text;
      ts->res.sni = t.sni;
      ts->res.ocsp.checked = o.ocsp;
      for (auto& spec : plan()) {
        run_state r;
        r.spec = spec;
        r.res.protocol = spec.protocol;
        r.res.mechanism = spec.mechanism;
        r.res.mode = o.fresh_tickets ? "fresh_tickets" : "same_session";
        if (sess_in_) {
          r.base = share_session(sess_in_.get());
          r.latest = share_session(sess_in_.get());
          r.res.session_source = "sess_in";
          r.res.offered_key_name = ticket_prefix_hex(sess_in_.get());
          if (r.res.offered_key_name->empty()) r.res.offered_key_name.reset();
        }
        ts->runs.push_back(std::move(r));
      }
      targets_.push_back(std::move(ts));
    }
    progress_.targets = static_cast<int>(targets_.size());
    for (auto& t : targets_)
      progress_.planned += static_cast<int>(t->runs.size()) * (1 + opt_.attempts);
  }

  std::vector<target_result> run() {
    std::size_t next_target = 0;
    int active = 0;
    for (;;) {
      auto now = clock_type::now();
      while (active < std::max(1, opt_.parallel) && next_target < targets_.size()) {
        target_state& t = *targets_[next_target++];
        start_target(t, now);
        if (t.st == stage::finished) {
          // Unresolvable: finished at once, never pumped, so it must not hold a slot.
          ++progress_.targets_done;
          report_progress();
          continue;
        }
        ++active;
      }
      for (auto& t : targets_) {
        if (t->st == stage::waiting || t->st == stage::finished) continue;
        pump(*t, now);
        if (t->st == stage::finished) {
          --active;
          ++progress_.targets_done;
          report_progress();
        }
      }
      if (active == 0 && next_target >= targets_.size()) break;
      poll_once();
    }
    finish_sess_out();
    std::vector<target_result> out;
    for (auto& t : targets_) out.push_back(std::move(t->res));
    return out;
  }

 private:
  std::vector<run_spec> plan() const {
    std::vector<run_spec> specs;
    bool want13 = opt_.tls13, want12t = opt_.tls12, want12i = opt_.tls12;
    if (sess_in_) {
      // A saved session answers one question: does it still resume? Run only its protocol.
      bool is13 = SSL_SESSION_get_protocol_version(sess_in_.get()) == TLS1_3_VERSION;
      bool has_ticket = SSL_SESSION_has_ticket(sess_in_.get()) == 1;
      want13 = is13;
      want12t = !is13 && has_ticket;
      want12i = !is13 && !has_ticket;
    }
    if (want13) specs.push_back({"TLSv1.3", "ticket", tls13_.get(), true});
    if (want12t) specs.push_back({"TLSv1.2", "ticket", tls12_ticket_.get(), false});
    if (want12i) specs.push_back({"TLSv1.2", "session_id", tls12_id_.get(), false});
    return specs;
  }

  void report_progress() {
    if (opt_.on_progress) opt_.on_progress(progress_);
  }

  void start_target(target_state& t, time_point now) {
    t.started = now;
    t.deadline = now + std::chrono::milliseconds(opt_.total_timeout_ms);
    t.st = stage::runs;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    std::string port = std::to_string(t.t.connect_port);
    int rc = getaddrinfo(t.t.connect_host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0 || found == nullptr) {
      t.res.error = "cannot resolve \"" + t.t.connect_host + "\": " + gai_strerror(rc);
      t.st = stage::finished;
      t.res.protocols.clear();
      progress_.done += static_cast<int>(t.runs.size()) * (1 + opt_.attempts);
      t.runs.clear();
      return;
    }
    std::memcpy(&t.addr, found->ai_addr, found->ai_addrlen);
    t.addr_len = found->ai_addrlen;
    freeaddrinfo(found);
    t.res.address = address_text(t.addr);
  }

  void pump(target_state& t, time_point now) {
    if (now >= t.deadline) {
      abort_target(t, "the probe did not finish within the total deadline of " +
                          std::to_string(opt_.total_timeout_ms) + " ms");
      return;
    }
    if (t.st == stage::runs) {
      while (t.run < t.runs.size()) {
        run_state& r = t.runs[t.run];
        if (!r.started) {
          r.started = true;
          r.started_at = now;
          if (r.base) {
            r.first_done = true;  // --sess-in: the saved session stands in for the first handshake
          } else {
            launch(t, t.run, conn_kind::first, -1, nullptr, now);
            // TLS 1.2 resumed with a ticket gets no new one: one more full handshake gives a
            // second ticket, so a key name can repeat (and be called one).
            if (r.spec.mechanism == "ticket" && !r.spec.tls13) {
              ++progress_.planned;
              launch(t, t.run, conn_kind::sample, -1, nullptr, now);
            }
            return;
          }
        }
        if (!r.first_done) return;
        if (!r.skip_attempts) {
          while (r.launched < opt_.attempts && t.in_flight < std::max(1, opt_.per_target)) {
            session_ptr fresh;
            if (opt_.fresh_tickets) {
              // Browsers' way: each attempt takes a ticket no other attempt used (RFC 8446
              // C.4: single use). TLS 1.3 attempts wait for in-flight ones to bring new
              // tickets; TLS 1.2 keeps offering its session, as clients do.
              if (!r.unused.empty()) {
                fresh = std::move(r.unused.back());
                r.unused.pop_back();
              } else if (r.spec.tls13 && r.in_flight > 0) {
                break;
              } else {
                fresh = share_session(r.latest.get());
              }
            }
            SSL_SESSION* offer = opt_.fresh_tickets ? fresh.get() : r.base.get();
            launch(t, t.run, conn_kind::attempt, r.launched, offer, now);
            ++r.launched;
          }
          if (r.completed < opt_.attempts) return;
          // Key sampling: a key name counts only when it repeats, and a TLS 1.2 ticket that
          // resumes brings no new one, so a key seen once gets a few more full handshakes.
          if (r.spec.mechanism == "ticket" && r.res.session_offered && need_samples(r) &&
              r.samples_launched < max_key_samples) {
            if (r.in_flight == 0) {
              for (int i = 0;
                   i < std::max(1, opt_.per_target) && r.samples_launched < max_key_samples; ++i) {
                ++progress_.planned;
                ++r.samples_launched;
                launch(t, t.run, conn_kind::sample, -1, nullptr, now);
              }
            }
            return;
          }
        }
        if (r.in_flight > 0) return;
        finish_run(r, now);
        ++t.run;
      }
      if (t.in_flight > 0) return;
      finish_runs(t, now);
    }
    if (t.st == stage::ocsp_retry) {
      auto& o = t.res.ocsp;
      // "Absent" needs a connection that started at least ocsp_min_wait_ms after the first.
      bool waited_enough = t.have_first_ocsp &&
                           ms_between(t.first_ocsp, t.last_ocsp) >= opt_.ocsp_min_wait_ms &&
                           o.connections >= opt_.ocsp_min_connections;
      if (o.stapled > 0 || waited_enough || t.working_ctx == nullptr) {
        if (t.in_flight == 0) finish_target(t);
        return;
      }
      if (t.in_flight == 0 && now >= t.next_ocsp_at) {
        ++progress_.planned;
        launch(t, 0, conn_kind::ocsp, -1, nullptr, now);
        t.next_ocsp_at = now + std::chrono::milliseconds(250);
      }
    }
  }

  void finish_runs(target_state& t, time_point now) {
    bool any_ok = false;
    for (auto& r : t.runs)
      any_ok = any_ok || (r.res.supported && !r.res.error) || r.res.connections > 0;
    if (!any_ok && !t.res.error) {
      t.res.error = t.first_error ? *t.first_error : std::string("no TLS handshake succeeded");
      if (std::all_of(t.runs.begin(), t.runs.end(),
                      [](const run_state& r) { return !r.res.supported; }))
        t.res.error =
            "the server accepted none of the protocol versions tried: " + t.res.error.value_or("");
    }
    bool need_retry = opt_.ocsp && !t.res.error && t.res.ocsp.stapled == 0 &&
                      t.working_ctx != nullptr &&
                      (!t.res.certificate || t.res.certificate->ocsp_url_present);
    if (need_retry) {
      t.st = stage::ocsp_retry;
      t.next_ocsp_at = now;
    } else {
      finish_target(t);
    }
  }

  void finish_target(target_state& t) {
    auto& o = t.res.ocsp;
    if (!opt_.ocsp || o.connections == 0) {
      o.status = ocsp_status::skipped;
    } else if (o.stapled > 0) {
      o.status = o.valid_staples == o.stapled ? ocsp_status::working : ocsp_status::invalid;
    } else if (t.res.certificate && !t.res.certificate->ocsp_url_present) {
      o.status = ocsp_status::not_applicable;
    } else {
      o.status = ocsp_status::absent;
    }
    if (t.shown_staple) {
      const auto& sc = *t.shown_staple;
      const auto& info = sc.info;
      o.staple_status = tls::to_string(sc.verdict);
      o.staple_reason = sc.reason;
      o.response_status = sc.verdict == tls::staple_verdict::garbage ? std::string("unparsable")
                                                                     : info.response_status;
      if (!info.cert_status.empty()) o.cert_status = info.cert_status;
      if (info.revocation_time_unix != 0) o.revocation_time_unix = info.revocation_time_unix;
      if (!info.revocation_reason.empty()) o.revocation_reason = info.revocation_reason;
      const auto now = static_cast<std::int64_t>(std::time(nullptr));
      if (info.next_update_unix != 0) o.next_update_in_s = info.next_update_unix - now;
      if (info.this_update_unix != 0) o.this_update_age_s = now - info.this_update_unix;
    }
    if (t.have_first_ocsp) o.waited_ms = ms_between(t.first_ocsp, t.last_ocsp);
    for (auto& r : t.runs) t.res.protocols.push_back(std::move(r.res));
    t.res.elapsed_ms = ms_between(t.started, clock_type::now());
    t.st = stage::finished;
    // A finished target keeps only its results: its sessions (each holding the peer's
    // certificate chain) would otherwise grow memory with the number of targets. The first
    // target keeps its first sessions for --sess-out.
    const bool keep_base = opt_.sess_out && !targets_.empty() && targets_.front().get() == &t;
    for (auto& r : t.runs) {
      if (!keep_base) r.base.reset();
      r.latest.reset();
      r.unused.clear();
      r.unused.shrink_to_fit();
    }
    t.shown_staple.reset();
    t.last_staple_check = {};
    if (!keep_base) std::vector<run_state>().swap(t.runs);
  }

  void abort_target(target_state& t, const std::string& why) {
    for (auto& c : conns_)
      if (c->owner == &t && c->ph != phase::done) fail(*c, why);
    reap();
    if (!t.res.error) t.res.error = why;
    for (auto& r : t.runs)
      if (!r.finished) finish_run(r, clock_type::now());
    finish_target(t);
  }

  void finish_run(run_state& r, time_point now) {
    if (r.finished) return;
    r.finished = true;
    auto& res = r.res;
    res.elapsed_ms = r.started ? ms_between(r.started_at, now) : 0;
    res.rate = res.attempts > 0 ? static_cast<double>(res.resumed) / res.attempts : 0.0;
    res.full_handshake_ms = summarize_ms(r.full_ms);
    res.resumed_handshake_ms = summarize_ms(r.resumed_ms);
    for (const auto& [prefix, n] : r.prefix_counts) {
      if (n >= 2)
        res.ticket_key_names[prefix] = n;
      else
        res.opaque_tickets += n;
    }
    res.tickets_per_connection =
        res.connections > 0 ? static_cast<double>(res.tickets) / res.connections : 0.0;
    res.single_use_pattern = res.mode == "same_session" && res.attempts >= 3 && res.resumed == 1;
    if (!res.error && res.session_offered && res.attempts == 0 && res.failed_connections > 0)
      res.error = "every resumption attempt failed: " + res.last_attempt_error.value_or("");
  }

  void launch(target_state& t, std::size_t run_index, conn_kind kind, int attempt,
              SSL_SESSION* offer, time_point now) {
    auto c = std::make_unique<connection>();
    c->owner = &t;
    c->run_index = run_index;
    c->kind = kind;
    c->attempt_index = attempt;
    c->started = now;
    c->deadline = now + std::chrono::milliseconds(opt_.timeout_ms);
    c->last_data = now;
    c->max_sessions = opt_.max_tickets_per_connection;
    SSL_CTX* ctx = kind == conn_kind::ocsp ? t.working_ctx : t.runs[run_index].spec.ctx;
    c->tls13 = kind == conn_kind::ocsp ? SSL_CTX_get_max_proto_version(ctx) == TLS1_3_VERSION
                                       : t.runs[run_index].spec.tls13;
    ++t.in_flight;
    if (kind != conn_kind::ocsp) ++t.runs[run_index].in_flight;
    connection& ref = *c;
    conns_.push_back(std::move(c));

    ref.fd = ::socket(t.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ref.fd < 0) {
      fail(ref, std::string("socket: ") + std::strerror(errno));
      return;
    }
    int one = 1;
    ::setsockopt(ref.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(ref.fd, reinterpret_cast<sockaddr*>(&t.addr), t.addr_len);
    if (rc != 0 && errno != EINPROGRESS) {
      ref.tcp_error = true;
      fail(ref, "TCP connect to " + t.res.address + " failed: " + std::strerror(errno));
      return;
    }
    ref.ssl.reset(SSL_new(ctx));
    if (!ref.ssl) {
      fail(ref, "SSL_new failed: " + first_openssl_reason());
      return;
    }
    SSL_set_app_data(ref.ssl.get(), &ref);
    SSL_set_fd(ref.ssl.get(), ref.fd);
    SSL_set_connect_state(ref.ssl.get());
    if (!t.t.sni.empty()) SSL_set_tlsext_host_name(ref.ssl.get(), t.t.sni.c_str());
    if (opt_.ocsp) SSL_set_tlsext_status_type(ref.ssl.get(), TLSEXT_STATUSTYPE_ocsp);
    if (offer != nullptr) {
      // Offer a copy: when a resumed TLS 1.3 connection gets a new ticket, OpenSSL marks the
      // session it offered not resumable (SSL_CTX_remove_session), which would spoil the
      // shared first session for every later attempt.
      session_ptr copy(SSL_SESSION_dup(offer));
      SSL_set_session(ref.ssl.get(), copy ? copy.get() : offer);
    }
    ref.ph = phase::connecting;
    if (rc == 0) step(ref);
  }

  void fail(connection& c, std::string why) {
    if (c.ph == phase::done) return;
    c.error = std::move(why);
    c.ph = phase::done;
  }

  void finish(connection& c) {
    if (c.ph == phase::done) return;
    ERR_clear_error();
    SSL_shutdown(c.ssl.get());  // sends close_notify; we do not wait for the peer's
    ERR_clear_error();
    c.ph = phase::done;
  }

  void on_handshake(connection& c) {
    auto now = clock_type::now();
    c.handshake_ok = true;
    c.handshake_ms = ms_between(c.started, now);
    c.last_data = now;
    SSL* s = c.ssl.get();
    c.reused = SSL_session_reused(s) == 1;
    c.negotiated_protocol = SSL_get_version(s);
    if (const SSL_CIPHER* ci = SSL_get_current_cipher(s)) c.cipher = SSL_CIPHER_get_name(ci);
    int nid = SSL_get_negotiated_group(s);
    if (nid != 0) {
      const char* name = SSL_group_to_name(s, nid);
      if (name == nullptr) name = OBJ_nid2sn(nid);
      if (name != nullptr) c.group = name;
    }
    const unsigned char* alpn = nullptr;
    unsigned alpn_len = 0;
    SSL_get0_alpn_selected(s, &alpn, &alpn_len);
    if (alpn != nullptr) c.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
    unsigned char* staple = nullptr;
    long n = SSL_get_tlsext_status_ocsp_resp(s, &staple);
    if (n > 0 && staple != nullptr) {
      c.stapled = true;
      // Checked here, against the chain this handshake carried: the issuer is normally the
      // second certificate.
      std::vector<X509*> chain;
      if (STACK_OF(X509)* peer_chain = SSL_get_peer_cert_chain(s))
        for (int i = 0; i < sk_X509_num(peer_chain); ++i)
          chain.push_back(sk_X509_value(peer_chain, i));
      X509* leaf = SSL_get0_peer_certificate(s);
      const std::string_view der(reinterpret_cast<const char*>(staple),
                                 static_cast<std::size_t>(n));
      // A server staples the same bytes with the same chain on most connections: the verdict
      // of the previous identical staple stands (two signature checks saved per handshake;
      // a target's probe lasts at most its total deadline, so the time window barely moves).
      staple_memo& memo = c.owner->last_staple_check;
      if (memo.same(der, leaf, chain)) {
        c.staple = memo.verdict;
      } else {
        c.staple = tls::check_ocsp_staple(der, leaf, chain);
        memo.remember(der, leaf, chain, c.staple);
      }
    }
    if (opt_.http) {
      const target& t = c.owner->t;
      std::string host =
          !t.sni.empty() ? t.sni
                         : (t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host);
      if (t.port != 443) host += ":" + std::to_string(t.port);
      c.request = "HEAD / HTTP/1.1\r\nHost: " + host +
                  "\r\nUser-Agent: ngxtls/" NGXTLS_VERSION "\r\nConnection: close\r\n\r\n";
      c.ph = phase::writing;
    } else if (c.tls13) {
      c.ph = phase::reading;  // TLS 1.3 tickets come after the handshake: read them
    } else {
      finish(c);
    }
  }

  // Turns a failed SSL call into waiting or an error. `what` names the phase for messages.
  void ssl_trouble(connection& c, int rc, int saved_errno) {
    int e = SSL_get_error(c.ssl.get(), rc);
    switch (e) {
      case SSL_ERROR_WANT_READ:
        c.want_write = false;
        ERR_clear_error();
        return;
      case SSL_ERROR_WANT_WRITE:
        c.want_write = true;
        ERR_clear_error();
        return;
      default:
        break;
    }
    bool in_handshake = c.ph == phase::handshaking;
    std::string reason = first_openssl_reason();
    if (!in_handshake) {
      // After the handshake the measurement stands; a close or reset ends the reading.
      if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) {
        finish_quiet(c);
        return;
      }
      fail(c,
           "TLS error after the handshake: " + (reason.empty() ? std::string("unknown") : reason));
      return;
    }
    std::string msg;
    if (e == SSL_ERROR_ZERO_RETURN) {
      msg = "the server closed the TLS connection during the handshake";
    } else if (e == SSL_ERROR_SYSCALL && reason.empty()) {
      if (saved_errno == ECONNRESET)
        msg = "connection reset by the server during the TLS handshake";
      else if (saved_errno == 0 || saved_errno == EPIPE)
        msg = "the server closed the connection during the TLS handshake (EOF)";
      else
        msg = std::string("TLS handshake failed: ") + std::strerror(saved_errno);
    } else {
      msg = "TLS handshake failed: " + (reason.empty() ? std::string("unknown error") : reason);
      if (reason.find("wrong version number") != std::string::npos ||
          reason.find("packet length too long") != std::string::npos ||
          reason.find("record layer failure") != std::string::npos ||
          reason.find("unexpected message") != std::string::npos)
        msg += " (the server did not answer with TLS)";
    }
    fail(c, msg);
  }

  void finish_quiet(connection& c) {
    ERR_clear_error();
    // The peer ended the connection after the handshake: to OpenSSL an unshut connection is a
    // "bad session" that SSL_free removes (marking it not resumable, ssl_clear_bad_session),
    // which would spoil the sessions this connection gave us. Whether the server resumes them
    // is the server's call, which is what we measure.
    SSL_set_shutdown(c.ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    c.ph = phase::done;
  }

  void step(connection& c) {
    if (c.ph == phase::connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == EINPROGRESS || err == EALREADY) return;
      if (err != 0) {
        c.tcp_error = true;
        fail(c, "TCP connect to " + c.owner->res.address + " failed: " + std::strerror(err));
        return;
      }
      c.ph = phase::handshaking;
    }
    char buf[16384];
    for (int guard = 0; guard < 1024 && c.ph != phase::done; ++guard) {
      ERR_clear_error();
      errno = 0;
      if (c.ph == phase::handshaking) {
        int rc = SSL_do_handshake(c.ssl.get());
        int saved = errno;
        if (rc == 1) {
          on_handshake(c);
          continue;
        }
        ssl_trouble(c, rc, saved);
        return;
      }
      if (c.ph == phase::writing) {
        int rc = SSL_write(c.ssl.get(), c.request.data() + c.request_off,
                           static_cast<int>(c.request.size() - c.request_off));
        int saved = errno;
        if (rc > 0) {
          c.request_off += static_cast<std::size_t>(rc);
          if (c.request_off >= c.request.size()) {
            c.ph = phase::reading;
            c.last_data = clock_type::now();
          }
          continue;
        }
        ssl_trouble(c, rc, saved);
        return;
      }
      if (c.ph == phase::reading) {
        std::size_t sessions_before = c.sessions.size();
        int rc = SSL_read(c.ssl.get(), buf, sizeof buf);
        int saved = errno;
        if (rc > 0) {
          c.bytes_read += static_cast<std::size_t>(rc);
          c.last_data = clock_type::now();
          if (c.bytes_read > opt_.max_response_bytes) {
            fail(c, "the server sent more than " + std::to_string(opt_.max_response_bytes) +
                        " bytes after the handshake without ending its response (endless data)");
            return;
          }
          if (opt_.http) {
            read_status(c, buf, static_cast<std::size_t>(rc));
            c.tail.append(buf, static_cast<std::size_t>(rc));
            if (c.tail.find("\r\n\r\n") != std::string::npos) {
              finish(c);
              return;
            }
            if (c.tail.size() > 8) c.tail.erase(0, c.tail.size() - 8);
          }
          continue;
        }
        if (c.too_many_sessions) {
          fail(c, "the server sent more than " + std::to_string(c.max_sessions) +
                      " session tickets on one connection (endless tickets)");
          return;
        }
        // A ticket processed inside SSL_read restarts the quiet timer too.
        if (c.sessions.size() != sessions_before) c.last_data = clock_type::now();
        ssl_trouble(c, rc, saved);
        return;
      }
    }
  }

  std::string timeout_message(const connection& c) const {
    std::string ms = std::to_string(opt_.timeout_ms) + " ms";
    switch (c.ph) {
      case phase::connecting:
        return "TCP connect to " + c.owner->res.address + " timed out after " + ms;
      case phase::handshaking:
        return "TLS handshake timed out after " + ms +
               " (the server accepted the connection but did not complete a handshake)";
      default:
        return "the server did not finish its response within " + ms;
    }
  }

  void poll_once() {
    reap();
    std::vector<pollfd> fds;
    std::vector<connection*> owners;
    auto now = clock_type::now();
    time_point wake = now + std::chrono::milliseconds(200);
    for (auto& c : conns_) {
      if (c->ph == phase::done || c->fd < 0) continue;
      short ev = c->ph == phase::connecting ? POLLOUT : (c->want_write ? POLLOUT : POLLIN);
      fds.push_back({c->fd, ev, 0});
      owners.push_back(c.get());
      wake = std::min(wake, c->deadline);
      if (c->ph == phase::reading) wake = std::min(wake, c->last_data + idle_for(*c));
    }
    for (auto& t : targets_) {
      if (t->st == stage::ocsp_retry) wake = std::min(wake, t->next_ocsp_at);
      if (t->st == stage::runs || t->st == stage::ocsp_retry) wake = std::min(wake, t->deadline);
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    int timeout = static_cast<int>(std::clamp<long long>(wait_ms + 1, 0, 200));
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents != 0) step(*owners[i]);
    }
    now = clock_type::now();
    for (auto& c : conns_) {
      if (c->ph == phase::done) continue;
      if (c->ph == phase::reading && now >= c->last_data + idle_for(*c)) {
        finish(*c);  // quiet long enough: the server has nothing more to say
      } else if (now >= c->deadline) {
        fail(*c, timeout_message(*c));
      }
    }
    reap();
  }

  // "HTTP/1.1 421 ..." -> 421, from the first 12 bytes of the response however they arrive.
  static void read_status(connection& c, const char* data, std::size_t n) {
    constexpr std::size_t status_end = 12;  // "HTTP/1.x NNN"
    if (c.http_status || c.status_line.size() >= status_end) return;
    c.status_line.append(data, std::min(n, status_end - c.status_line.size()));
    if (c.status_line.size() < status_end || c.status_line.compare(0, 7, "HTTP/1.") != 0 ||
        c.status_line[8] != ' ')
      return;
    int code = 0;
    for (std::size_t i = 9; i < status_end; ++i) {
      if (c.status_line[i] < '0' || c.status_line[i] > '9') return;
      code = code * 10 + (c.status_line[i] - '0');
    }
    c.http_status = code;
  }

  std::chrono::milliseconds idle_for(const connection& c) const {
    if (!opt_.http && c.tls13 && !c.sessions.empty())
      return std::chrono::milliseconds(ticket_quiet_ms);
    return std::chrono::milliseconds(opt_.idle_ms);
  }

  // Folds finished connections into their target's results and frees them.
  void reap() {
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->ph != phase::done) {
        ++it;
        continue;
      }
      account(**it);
      it = conns_.erase(it);
    }
  }

  void account(connection& c) {
    target_state& t = *c.owner;
    --t.in_flight;
    ++progress_.done;
    if (c.handshake_ok) {
      if (!t.res.certificate) take_certificate(t, c);
      if (t.working_ctx == nullptr) t.working_ctx = SSL_get_SSL_CTX(c.ssl.get());
      // Staples travel only in full handshakes: a resumed handshake has no Certificate
      // message (TLS 1.2 abbreviated handshake, TLS 1.3 PSK), so only full ones count.
      if (opt_.ocsp && !c.reused) {
        auto& o = t.res.ocsp;
        if (o.connections == 0) o.first_connection_stapled = c.stapled;
        ++o.connections;
        if (!t.have_first_ocsp) {
          t.have_first_ocsp = true;
          t.first_ocsp = c.started;
        }
        t.last_ocsp = std::max(t.last_ocsp, c.started);
        if (c.stapled) {
          ++o.stapled;
          const bool valid = c.staple.verdict == tls::staple_verdict::valid;
          if (valid) ++o.valid_staples;
          if (!t.shown_staple || t.shown_staple->verdict == tls::staple_verdict::valid)
            t.shown_staple = c.staple;
        }
      }
    }
    if (c.error && !t.first_error) t.first_error = c.error;
    if (c.kind != conn_kind::ocsp) account_run(t, t.runs[c.run_index], c);
    report_progress();
  }

  void take_certificate(target_state& t, connection& c) {
    X509* peer = SSL_get0_peer_certificate(c.ssl.get());
    if (peer == nullptr) return;
    try {
      tls::certificate_info info = tls::inspect_certificate_x509(peer);
      certificate_facts f;
      f.subject = info.subject;
      f.issuer = info.issuer;
      f.key_type = info.key_type;
      f.key_bits = info.key_bits;
      f.not_after_unix = info.not_after_unix;
      f.days_to_expiry =
          static_cast<double>(info.not_after_unix - static_cast<std::int64_t>(std::time(nullptr))) /
          86400.0;
      f.ocsp_urls = info.ocsp_urls;
      f.ocsp_url_present = !info.ocsp_urls.empty();
      f.dns_names = info.dns_names;
      f.sha256_hex = info.sha256_hex;
      STACK_OF(X509)* chain = SSL_get_peer_cert_chain(c.ssl.get());
      f.chain_length = chain ? sk_X509_num(chain) : 1;
      t.res.certificate = std::move(f);
    } catch (const std::exception&) {
      ERR_clear_error();
    }
  }

  void account_run(target_state& t, run_state& r, connection& c) {
    auto& res = r.res;
    --r.in_flight;
    if (c.handshake_ok) {
      ++res.connections;
      int with_ticket = 0;
      for (auto& s : c.sessions) {
        const unsigned char* tick = nullptr;
        std::size_t len = 0;
        SSL_SESSION_get0_ticket(s.get(), &tick, &len);
        if (tick == nullptr || len == 0) continue;
        ++with_ticket;
        ++res.tickets;
        res.ticket_min_bytes =
            res.ticket_min_bytes == 0 ? len : std::min(res.ticket_min_bytes, len);
        res.ticket_max_bytes = std::max(res.ticket_max_bytes, len);
        if (len <= stateful_ticket_max_bytes) {
          ++res.stateful_tickets;
        } else {
          ++res.stateless_tickets;
          ++r.prefix_counts[ticket_prefix_hex(s.get())];
        }
        res.lifetime_hint_s =
            static_cast<std::uint32_t>(SSL_SESSION_get_ticket_lifetime_hint(s.get()));
        res.max_early_data = std::max(res.max_early_data, SSL_SESSION_get_max_early_data(s.get()));
      }
      res.max_tickets_per_connection = std::max(res.max_tickets_per_connection, with_ticket);
      if (res.negotiated_protocol.empty()) {
        res.negotiated_protocol = c.negotiated_protocol;
        res.cipher = c.cipher;
        res.group = c.group;
        res.alpn = c.alpn;
      }
    }
    if (c.kind == conn_kind::sample) {
      if (c.handshake_ok) r.full_ms.push_back(c.handshake_ms);
      return;
    }
    if (c.kind == conn_kind::first) {
      r.first_done = true;
      if (!c.handshake_ok || c.error) {
        std::string why = c.error.value_or("no handshake");
        res.error = why;
        r.skip_attempts = true;
        if (unsupported_protocol(why)) {
          res.supported = false;
        } else {
          // Not a protocol refusal: the target is unreachable or hostile. Stop here.
          t.res.error = why;
          for (std::size_t i = t.run + 1; i < t.runs.size(); ++i) {
            t.runs[i].started = true;
            t.runs[i].first_done = true;
            t.runs[i].skip_attempts = true;
            t.runs[i].res.error = "not tried: " + why;
          }
        }
        return;
      }
      r.full_ms.push_back(c.handshake_ms);
      // The session to resume: the newest one of the first connection (for TLS 1.3 the last
      // NewSessionTicket; OpenSSL's s_client -sess_out keeps the last one too).
      if (!c.sessions.empty())
        r.base = share_session(c.sessions.back().get());
      else if (SSL_SESSION* s = SSL_get_session(c.ssl.get()); s && r.spec.mechanism == "session_id")
        r.base = share_session(s);
      if (r.base) {
        unsigned len = 0;
        SSL_SESSION_get_id(r.base.get(), &len);
        res.session_id_issued = len > 0;
        std::string name = ticket_prefix_hex(r.base.get());
        if (!name.empty()) res.offered_key_name = name;
      }
      bool offerable = r.base && SSL_SESSION_is_resumable(r.base.get());
      if (r.spec.mechanism == "ticket" && r.base && SSL_SESSION_has_ticket(r.base.get()) != 1)
        offerable = false;
      if (r.spec.mechanism == "session_id" && !res.session_id_issued) {
        // No session ID: OpenSSL servers send none without a server cache. Attempts show 0%.
        offerable = r.base != nullptr;
      }
      if (!offerable) {
        res.session_offered = false;
        r.skip_attempts = true;
        r.base.reset();
      }
      r.latest = share_session(r.base.get());
      if (r.base && opt_.fresh_tickets)
        for (auto& sess : c.sessions)
          if (SSL_SESSION_is_resumable(sess.get())) r.unused.push_back(share_session(sess.get()));
      return;
    }
    // An attempt.
    ++r.completed;
    if (!c.handshake_ok || c.error) {
      ++res.failed_connections;
      res.last_attempt_error = c.error;
      return;
    }
    ++res.attempts;
    if (c.http_status) ++res.http_statuses[*c.http_status];
    if (res.outcomes.size() <= static_cast<std::size_t>(c.attempt_index))
      res.outcomes.resize(static_cast<std::size_t>(c.attempt_index) + 1, false);
    res.outcomes[static_cast<std::size_t>(c.attempt_index)] = c.reused;
    if (c.reused) {
      ++res.resumed;
      r.resumed_ms.push_back(c.handshake_ms);
    } else {
      r.full_ms.push_back(c.handshake_ms);
    }
    if (!c.sessions.empty()) r.latest = share_session(c.sessions.back().get());
    if (opt_.fresh_tickets)
      for (auto& sess : c.sessions)
        if (SSL_SESSION_is_resumable(sess.get())) r.unused.push_back(share_session(sess.get()));
  }

  void finish_sess_out() {
    if (!opt_.sess_out || targets_.empty()) return;
    // A target that could not be probed is reported as such (exit code 3), with its reason.
    if (targets_.front()->res.error) return;
    for (auto& r : targets_.front()->runs) {
      if (r.base) {
        write_session_pem(*opt_.sess_out, r.base.get());
        return;
      }
    }
    throw target_error("no session to write to " + *opt_.sess_out +
                       ": no handshake gave a resumable session");
  }

  probe_options opt_;
  tls::ssl_ctx_ptr tls13_, tls12_ticket_, tls12_id_;
  session_ptr sess_in_;
  std::vector<std::unique_ptr<target_state>> targets_;
  std::list<std::unique_ptr<connection>> conns_;
  progress progress_;
};

}  // namespace

std::vector<target_result> run_probe(const std::vector<target>& targets,
                                     const probe_options& options) {
  // A server that resets while we write would otherwise kill the process with SIGPIPE
  // (OpenSSL's socket BIO uses write()).
  ::signal(SIGPIPE, SIG_IGN);
  prober p(targets, options);
  return p.run();
}

}  // namespace ngxtls::probe
