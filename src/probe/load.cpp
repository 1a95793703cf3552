#include "probe/load.hpp"

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "probe/connection.hpp"
#include "probe/plan.hpp"
#include "probe/quic_connection.hpp"
#include "probe/target.hpp"

namespace ngxtls::probe {

std::string to_string(load_phase_kind k) {
  switch (k) {
    case load_phase_kind::full_tls13:
      return "full_tls13";
    case load_phase_kind::full_tls12:
      return "full_tls12";
    case load_phase_kind::psk_tls13:
      return "psk_tls13";
    case load_phase_kind::ticket_tls12:
      return "ticket_tls12";
    case load_phase_kind::session_id_tls12:
      return "session_id_tls12";
    case load_phase_kind::full_quic:
      return "full_quic";
    case load_phase_kind::resumed_quic:
      return "resumed_quic";
  }
  return "?";
}

bool is_resumed(load_phase_kind k) {
  return k == load_phase_kind::psk_tls13 || k == load_phase_kind::ticket_tls12 ||
         k == load_phase_kind::session_id_tls12 || k == load_phase_kind::resumed_quic;
}

bool is_quic(load_phase_kind k) {
  return k == load_phase_kind::full_quic || k == load_phase_kind::resumed_quic;
}

std::string to_string(load_phase_state s) {
  switch (s) {
    case load_phase_state::ran:
      return "ran";
    case load_phase_state::interrupted:
      return "interrupted";
    case load_phase_state::server_stopped:
      return "server_stopped";
    case load_phase_state::not_run_interrupted:
      return "not_run_interrupted";
    case load_phase_state::not_run_unanswered:
      return "not_run_unanswered";
    case load_phase_state::not_run_no_session:
      return "not_run_no_session";
  }
  return "?";
}

bool unmeasured(const load_phase_result& p) {
  return p.connections == 0 ||
         (p.state != load_phase_state::ran && p.state != load_phase_state::interrupted);
}

std::string to_string(certificate_key k) {
  switch (k) {
    case certificate_key::any:
      return "any";
    case certificate_key::ecdsa:
      return "ecdsa";
    case certificate_key::rsa:
      return "rsa";
  }
  return "?";
}

std::string phase_label(load_phase_kind k, certificate_key key) {
  std::string s;
  switch (k) {
    case load_phase_kind::full_tls13:
      s = "full TLS 1.3";
      break;
    case load_phase_kind::full_tls12:
      s = "full TLS 1.2";
      break;
    case load_phase_kind::psk_tls13:
      s = "TLS 1.3 PSK";
      break;
    case load_phase_kind::ticket_tls12:
      s = "TLS 1.2 ticket";
      break;
    case load_phase_kind::session_id_tls12:
      s = "TLS 1.2 session ID";
      break;
    case load_phase_kind::full_quic:
      s = "full QUIC";
      break;
    case load_phase_kind::resumed_quic:
      s = "QUIC resumed";
      break;
  }
  if (key == certificate_key::ecdsa) s += ", ECDSA";
  if (key == certificate_key::rsa) s += ", RSA";
  return s;
}

double capacity_at(double r, double full_per_s, double resumed_per_s) {
  if (full_per_s <= 0 || resumed_per_s <= 0) return 0;
  r = std::clamp(r, 0.0, 1.0);
  return 1.0 / ((1.0 - r) / full_per_s + r / resumed_per_s);
}

namespace {

// A phase to run.
struct phase_spec {
  load_phase_kind kind;
  certificate_key key;
};

bool is_tls13(load_phase_kind k) {
  return k == load_phase_kind::full_tls13 || k == load_phase_kind::psk_tls13;
}

const run_result* find_run(const target_result& p, tls_protocol proto, resumption_mechanism m) {
  for (const auto& r : p.protocols)
    if (r.protocol == proto && r.mechanism == m) return &r;
  return nullptr;
}

// The server completed handshakes in `proto` during the ordinary probe.
bool speaks(const target_result& p, tls_protocol proto) {
  for (const auto& r : p.protocols)
    if (r.protocol == proto && r.supported && r.connections > 0) return true;
  return false;
}

// The ordinary probe's run of this resumed phase resumed at least once.
const run_result* resuming_run(const target_result& p, load_phase_kind k) {
  const run_result* r = nullptr;
  if (k == load_phase_kind::psk_tls13)
    r = find_run(p, tls_protocol::tls1_3, resumption_mechanism::ticket);
  else if (k == load_phase_kind::ticket_tls12)
    r = find_run(p, tls_protocol::tls1_2, resumption_mechanism::ticket);
  else if (k == load_phase_kind::session_id_tls12)
    r = find_run(p, tls_protocol::tls1_2, resumption_mechanism::session_id);
  return r != nullptr && r->resumed > 0 ? r : nullptr;
}

std::vector<phase_spec> base_phases(const target_result& p) {
  std::vector<phase_spec> out;
  using enum load_phase_kind;
  if (speaks(p, tls_protocol::tls1_3)) {
    out.push_back({full_tls13, certificate_key::any});
    if (resuming_run(p, psk_tls13)) out.push_back({psk_tls13, certificate_key::any});
  }
  if (speaks(p, tls_protocol::tls1_2)) {
    out.push_back({full_tls12, certificate_key::any});
    if (resuming_run(p, ticket_tls12)) out.push_back({ticket_tls12, certificate_key::any});
    if (resuming_run(p, session_id_tls12)) out.push_back({session_id_tls12, certificate_key::any});
  }
  return out;
}

// QUIC where the QUIC probe made a handshake, resumed where one of its attempts resumed.
void add_quic_phases(const target_result& p, std::vector<phase_spec>& plan) {
  if (!p.quic || !p.quic->handshake_ok) return;
  plan.push_back({load_phase_kind::full_quic, certificate_key::any});
  if (p.quic->resumed > 0) plan.push_back({load_phase_kind::resumed_quic, certificate_key::any});
}

// Signature algorithms that admit only one key type (RFC 8446 section 4.2.3 names).
constexpr const char* ecdsa_sigalgs =
    "ecdsa_secp256r1_sha256:ecdsa_secp384r1_sha384:ecdsa_secp521r1_sha512";
constexpr const char* rsa_sigalgs =
    "rsa_pss_rsae_sha256:rsa_pss_rsae_sha384:rsa_pss_rsae_sha512:rsa_pkcs1_sha256:"
    "rsa_pkcs1_sha384:rsa_pkcs1_sha512";

tls::ssl_ctx_ptr phase_context(const phase_spec& s, bool request, long max_cert_list_bytes) {
  auto ctx = make_client_context(is_tls13(s.kind) ? TLS1_3_VERSION : TLS1_2_VERSION,
                                 s.kind == load_phase_kind::session_id_tls12, request,
                                 max_cert_list_bytes);
  if (s.key != certificate_key::any &&
      SSL_CTX_set1_sigalgs_list(ctx.get(),
                                s.key == certificate_key::ecdsa ? ecdsa_sigalgs : rsa_sigalgs) != 1)
    tls::throw_openssl("SSL_CTX_set1_sigalgs_list");
  return ctx;
}

// Where the endpoint is and how connections to it are set up.
struct endpoint {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string address, sni, request;
  // The UDP socket the QUIC probe dialled (quic_addr_len 0: none) and the request's authority.
  sockaddr_storage quic_addr{};
  socklen_t quic_addr_len = 0;
  std::string authority;
};

// One handshake, waited for: the session to offer in a resumed phase, or the leaf's key type.
struct single_handshake {
  bool ok = false;
  session_ptr session;  // newest session received
  int leaf_key_type = EVP_PKEY_NONE;
  std::string error;
  std::optional<quic_session> quic;  // a QUIC handshake's session, after its newest ticket
};

// A QUIC load connection: ends at the handshake (at the response with --request), no tickets
// waited for.
quic_connection_options quic_load_connection(const endpoint& e, const load_options& o) {
  quic_connection_options c;
  c.sni = e.sni;
  c.authority = e.authority;
  c.timeout_ms = o.timeout_ms;
  c.http = o.request;
  c.stop_after_handshake = true;
  c.stop = o.stop;
  return c;
}

// One QUIC handshake that waits for the server's tickets: the session of a resumed QUIC phase.
single_handshake one_quic_handshake(const endpoint& e, const load_options& o) {
  auto c = quic_load_connection(e, o);
  c.http = false;
  c.stop_after_handshake = false;
  auto r = run_quic_connection(e.quic_addr, e.quic_addr_len, c);
  single_handshake out;
  out.ok = r.handshake_ok && !r.error;
  if (r.error) out.error = *r.error;
  out.quic = std::move(r.session);
  return out;
}

single_handshake one_handshake(const endpoint& e, SSL_CTX* ctx, bool tls13, int timeout_ms) {
  connection_limits lim;
  lim.timeout_ms = timeout_ms;
  lim.idle_ms = probe_options{}.idle_ms;
  lim.max_response_bytes = probe_options{}.max_response_bytes;
  lim.max_tickets = probe_options{}.max_tickets_per_connection;
  connection c;
  c.limits = &lim;
  c.address = e.address;
  c.tls13 = tls13;
  open_connection(c, e.addr, e.addr_len, ctx, e.sni, false, nullptr, clock_type::now());
  single_handshake out;
  while (c.phase != connection_phase::done) {
    auto now = clock_type::now();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake_time(c) - now);
    pollfd pfd{c.fd, poll_events(c), 0};
    ::poll(&pfd, 1, static_cast<int>(std::clamp<long long>(wait.count() + 1, 0, 1000)));
    if (pfd.revents != 0) step(c);
    check_time(c, clock_type::now());
  }
  out.ok = c.handshake_ok && !c.error;
  if (c.error) out.error = *c.error;
  if (!c.sessions.empty()) out.session = share_session(c.sessions.back().get());
  if (c.handshake_ok && c.ssl) {
    if (X509* leaf = SSL_get0_peer_certificate(c.ssl.get()))
      if (EVP_PKEY* key = X509_get0_pubkey(leaf)) out.leaf_key_type = EVP_PKEY_get_base_id(key);
  }
  return out;
}

// What one thread saw in a phase.
struct tally {
  std::vector<double> connect_ms, handshake_ms, first_byte_ms;
  int ok = 0, resumed = 0, failures = 0;
  std::optional<std::string> last_error;
};

// Whether the server still answers, as a phase's threads see it together.
struct answering {
  std::atomic<clock_type::rep> last_ok;  // time of the last completed connection (or the start)
  std::atomic<int> failures_since_ok{0};
  std::atomic<bool> stopped{false};  // the server stopped answering: the phase ends
};

// The --max-rate cap of one phase, shared by its threads: the first launch starts with the
// phase, each later one at least 1 / rate seconds after the one before (a client that fell
// behind does not catch up in a burst), so a phase of D seconds launches at most
// floor(D * rate) + 1 connections. Kept in seconds as a double: 1 / rate for the smallest
// accepted rate is far beyond any phase and beyond what a clock duration holds, so it only
// means that no further launch falls inside the phase.
class launch_pacer {
 public:
  /// Caps launches at `rate_per_s` a second (0: no cap); before any launch.
  void set_rate(double rate_per_s) { interval_s_ = rate_per_s > 0 ? 1.0 / rate_per_s : 0; }
  /// True (and the launch is counted) when a connection may start `elapsed_s` after the
  /// phase's start.
  bool take(double elapsed_s) {
    if (interval_s_ == 0) return true;
    std::lock_guard lock(mutex_);
    if (elapsed_s < next_s_) return false;
    next_s_ = std::max(next_s_, elapsed_s) + interval_s_;
    return true;
  }
  /// Seconds after the start when the next launch may start (possibly far beyond the phase,
  /// or +inf); 0 without a cap.
  double next_s() const {
    std::lock_guard lock(mutex_);
    return next_s_;
  }
  /// True when a rate was set.
  bool capped() const { return interval_s_ > 0; }

 private:
  double interval_s_ = 0;
  mutable std::mutex mutex_;
  double next_s_ = 0;
};

// Everything a phase's threads share (read-only while they run, but `server` and `pacer`).
struct phase_run {
  const endpoint* e = nullptr;
  SSL_CTX* ctx = nullptr;
  SSL_SESSION* offer = nullptr;
  bool tls13 = false;
  connection_limits limits;
  time_point start, end;
  const std::atomic<bool>* stop = nullptr;
  clock_type::duration stopped_after{};   // no completion this long, with failures: stopped
  mutable std::atomic<int> completed{0};  // handshakes counted so far, over every thread
  mutable answering server;
  mutable launch_pacer pacer;
};

// Counts how a connection ended (TCP or QUIC) in `t` and in whether the server still answers;
// true when it completed within the phase, so that its figures count.
bool note_end(const phase_run& p, const std::optional<std::string>& error, bool handshake_ok,
              tally& t) {
  auto now = clock_type::now();
  if (error) {
    ++t.failures;
    t.last_error = *error;
    int failed = ++p.server.failures_since_ok;
    auto quiet = now - time_point(clock_type::duration(p.server.last_ok.load()));
    // After the phase's end the connections in flight are given their timeout.
    if (failed > 0 && quiet >= p.stopped_after && now < p.end) p.server.stopped.store(true);
    return false;
  }
  if (!handshake_ok) return false;
  p.server.last_ok.store(now.time_since_epoch().count());
  p.server.failures_since_ok.store(0);
  if (now > p.end) return false;  // finished after the phase
  ++t.ok;
  p.completed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void record(const phase_run& p, const connection& c, tally& t) {
  if (!note_end(p, c.error, c.handshake_ok, t)) return;
  if (c.reused) ++t.resumed;
  if (c.connected_at) t.connect_ms.push_back(ms_between(c.started, *c.connected_at));
  if (c.connected_at && c.handshake_at)
    t.handshake_ms.push_back(ms_between(*c.connected_at, *c.handshake_at));
  if (c.request_sent_at && c.first_byte_at)
    t.first_byte_ms.push_back(ms_between(*c.request_sent_at, *c.first_byte_at));
}

// One event loop: keeps `slots` connections in flight until the phase ends, launching only
// when the phase's pacer (shared by every thread) allows it.
void event_loop(const phase_run& p, int slots, tally& out) {
  std::vector<std::unique_ptr<connection>> conns(static_cast<std::size_t>(slots));
  auto since_start = [&p](time_point t) {
    return std::chrono::duration<double>(t - p.start).count();
  };
  std::vector<pollfd> pfds;
  std::vector<connection*> polled;
  auto finish_done = [&](std::unique_ptr<connection>& c) {
    if (c && c->phase == connection_phase::done) {
      record(p, *c, out);
      c.reset();
    }
  };
  for (;;) {
    // At once: in-flight connections are dropped.
    if ((p.stop != nullptr && p.stop->load()) || p.server.stopped.load()) return;
    auto now = clock_type::now();
    bool launching = now < p.end;
    if (launching) {
      for (auto& c : conns) {
        if (c) continue;
        if (!p.pacer.take(since_start(now))) break;
        c = std::make_unique<connection>();
        c->limits = &p.limits;
        c->address = p.e->address;
        c->request = p.e->request;
        c->tls13 = p.tls13;
        c->role = p.offer ? connection_role::attempt : connection_role::first;
        open_connection(*c, p.e->addr, p.e->addr_len, p.ctx, p.e->sni, false, p.offer, now);
        finish_done(c);
      }
    }
    pfds.clear();
    polled.clear();
    time_point wake = launching ? p.end : now + std::chrono::seconds(3600);
    bool free_slot = false;
    for (auto& c : conns) {
      if (!c) {
        free_slot = true;
        continue;
      }
      pfds.push_back({c->fd, poll_events(*c), 0});
      polled.push_back(c.get());
      wake = std::min(wake, wake_time(*c));
    }
    if (!launching && polled.empty()) return;
    if (launching && free_slot && p.pacer.capped()) {
      // The next launch, when it falls inside the phase (else the phase's end wakes us).
      const double next = p.pacer.next_s();
      const double to_end = std::chrono::duration<double>(p.end - p.start).count();
      if (next < to_end)
        wake = std::min(wake, p.start + std::chrono::duration_cast<clock_type::duration>(
                                            std::chrono::duration<double>(next)));
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
    // At most 100 ms between looks at the stop flag.
    ::poll(pfds.data(), pfds.size(), static_cast<int>(std::clamp<long long>(wait_ms, 0, 100)));
    now = clock_type::now();
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (pfds[i].revents != 0) step(*polled[i]);
      check_time(*polled[i], now);
    }
    for (auto& c : conns) finish_done(c);
  }
}

}  // namespace

std::string tick_text(const load_tick& t) {
  char buf[160];
  const double left_s = std::max(0.0, t.duration_s - t.elapsed_s);
  std::snprintf(buf, sizeof buf, ": %.0f s left, %.0f handshakes/s (%d so far)", std::ceil(left_s),
                t.elapsed_s > 0 ? t.connections / t.elapsed_s : 0.0, t.connections);
  return t.phase + buf;
}

namespace {

// Tells o.on_tick how the phase stands every load_tick_ms until its threads are done (looking
// every 50 ms, so that the end is not waited for).
void tick_while_running(const phase_run& p, const std::atomic<int>& running,
                        const std::string& label, const load_options& o) {
  auto next = p.start;
  while (running.load() > 0) {
    const auto now = clock_type::now();
    if (now >= next) {
      next = now + std::chrono::milliseconds(load_tick_ms);
      load_tick t;
      t.phase = label;
      t.elapsed_s = std::chrono::duration<double>(std::min(now, p.end) - p.start).count();
      t.duration_s = o.duration_s;
      t.connections = p.completed.load(std::memory_order_relaxed);
      o.on_tick(t);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// Client threads busier than this share of their time mean the client limited the rate.
constexpr double client_bound_share = 0.9;

// The phase's clock, launch cap and stop rules, as `o` says; just before its threads start.
void start_phase(phase_run& p, const load_options& o) {
  p.stop = o.stop;
  p.stopped_after = std::chrono::milliseconds(server_stopped_after_ms);
  if (o.max_rate) {
    p.pacer.set_rate(*o.max_rate);
    // Four launch intervals without a completion, capped at the phase's length: 4 / rate of a
    // tiny rate overflows a clock duration.
    const double quiet_s = std::min(4 / *o.max_rate, static_cast<double>(o.duration_s) + 1);
    p.stopped_after = std::max(p.stopped_after, std::chrono::duration_cast<clock_type::duration>(
                                                    std::chrono::duration<double>(quiet_s)));
  }
  p.start = clock_type::now();
  p.end = p.start + std::chrono::seconds(o.duration_s);
  p.server.last_ok.store(p.start.time_since_epoch().count());
}

// The phase's figures from its threads' tallies. The client's CPU share is over `cpu_threads`
// (the client cores the phase could use), whatever the number of threads.
load_phase_result summarize(const phase_run& p, const phase_spec& s, std::vector<tally>& tallies,
                            double cpu_before, int cpu_threads) {
  auto done = clock_type::now();
  double wall_s = std::chrono::duration<double>(done - p.start).count();
  load_phase_result r;
  r.kind = s.kind;
  r.key = s.key;
  r.elapsed_s = std::chrono::duration<double>(std::min(done, p.end) - p.start).count();
  if (p.stop != nullptr && p.stop->load()) {
    r.state = load_phase_state::interrupted;
  } else if (p.server.stopped.load()) {
    r.state = load_phase_state::server_stopped;
    // The figures cover the time the server answered.
    time_point last_ok(clock_type::duration(p.server.last_ok.load()));
    r.elapsed_s = std::chrono::duration<double>(std::min(last_ok, p.end) - p.start).count();
  }
  tally all;
  for (auto& t : tallies) {
    all.ok += t.ok;
    all.resumed += t.resumed;
    all.failures += t.failures;
    if (t.last_error) all.last_error = t.last_error;
    all.connect_ms.insert(all.connect_ms.end(), t.connect_ms.begin(), t.connect_ms.end());
    all.handshake_ms.insert(all.handshake_ms.end(), t.handshake_ms.begin(), t.handshake_ms.end());
    all.first_byte_ms.insert(all.first_byte_ms.end(), t.first_byte_ms.begin(),
                             t.first_byte_ms.end());
  }
  r.connections = all.ok;
  r.resumed = all.resumed;
  r.failures = all.failures;
  r.last_error = all.last_error;
  if (all.ok == 0 && r.state == load_phase_state::ran) r.state = load_phase_state::server_stopped;
  r.connections_per_s = r.elapsed_s > 0 ? all.ok / r.elapsed_s : 0;
  r.connect_ms = summarize_ms(std::move(all.connect_ms));
  r.handshake_ms = summarize_ms(std::move(all.handshake_ms));
  r.first_byte_ms = summarize_ms(std::move(all.first_byte_ms));
  if (wall_s > 0)
    r.client_cpu_share = std::min(1.0, (cpu_seconds() - cpu_before) / (wall_s * cpu_threads));
  r.client_bound = r.client_cpu_share >= client_bound_share;
  return r;
}

// Runs phase `s`: `workers` threads, thread i running body(i, its tally) until the phase ends,
// while o.on_tick is told how it stands; then its figures.
template <class Body>
load_phase_result run_workers(phase_run& p, const phase_spec& s, const load_options& o, int workers,
                              int cpu_threads, Body body) {
  double cpu_before = cpu_seconds();
  start_phase(p, o);
  std::vector<tally> tallies(static_cast<std::size_t>(workers));
  {
    std::atomic<int> running{workers};
    std::vector<std::jthread> pool;
    for (int i = 0; i < workers; ++i)
      pool.emplace_back([&tallies, &running, &body, i] {
        body(i, tallies[static_cast<std::size_t>(i)]);
        running.fetch_sub(1);
      });
    if (o.on_tick) tick_while_running(p, running, phase_label(s.kind, s.key), o);
  }
  return summarize(p, s, tallies, cpu_before, cpu_threads);
}

load_phase_result run_phase(const endpoint& e, const phase_spec& s, SSL_SESSION* offer,
                            const load_options& o, int threads) {
  auto ctx = phase_context(s, o.request, o.max_cert_list_bytes);
  phase_run p;
  p.e = &e;
  p.ctx = ctx.get();
  p.offer = offer;
  p.tls13 = is_tls13(s.kind);
  p.limits.timeout_ms = o.timeout_ms;
  p.limits.idle_ms = probe_options{}.idle_ms;
  p.limits.max_response_bytes = probe_options{}.max_response_bytes;
  p.limits.max_tickets = probe_options{}.max_tickets_per_connection;
  p.limits.http = o.request;
  p.limits.stop_after_handshake = true;
  p.limits.abortive_close = true;
  int n = std::max(1, std::min(threads, o.concurrency));
  return run_workers(p, s, o, n, n, [&p, n, &o](int i, tally& t) {
    int slots = o.concurrency / n + (i < o.concurrency % n ? 1 : 0);
    event_loop(p, slots, t);
  });
}

void record_quic(const phase_run& p, const quic_connection_result& c, tally& t) {
  if (!note_end(p, c.error, c.handshake_ok, t)) return;
  if (c.resumed) ++t.resumed;
  t.handshake_ms.push_back(c.handshake_ms);
  if (c.http_status) t.first_byte_ms.push_back(c.first_byte_ms);
}

// One QUIC worker: one connection at a time (run_quic_connection waits for it) until the phase
// ends, each launched when the phase's pacer allows it.
void quic_worker(const phase_run& p, const quic_connection_options& c, tally& out) {
  for (;;) {
    if ((p.stop != nullptr && p.stop->load()) || p.server.stopped.load()) return;
    auto now = clock_type::now();
    if (now >= p.end) return;
    const double elapsed_s = std::chrono::duration<double>(now - p.start).count();
    if (!p.pacer.take(elapsed_s)) {
      // At most 100 ms between looks at the stop flag.
      const double wait_s = std::clamp(p.pacer.next_s() - elapsed_s, 0.001, 0.1);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
      continue;
    }
    auto r = run_quic_connection(p.e->quic_addr, p.e->quic_addr_len, c);
    // Ctrl-C ends the connection in flight: not a failure of the server's.
    if (p.stop != nullptr && p.stop->load()) return;
    record_quic(p, r, out);
  }
}

load_phase_result run_quic_phase(const endpoint& e, const phase_spec& s,
                                 const std::optional<quic_session>& offer, const load_options& o,
                                 int threads) {
  phase_run p;
  p.e = &e;
  auto c = quic_load_connection(e, o);
  if (offer) c.offer = &*offer;
  const int workers = quic_load_workers(o.concurrency);
  const int cpu_threads = std::max(1, std::min(threads, o.concurrency));
  return run_workers(p, s, o, workers, cpu_threads,
                     [&p, &c](int, tally& t) { quic_worker(p, c, t); });
}

const load_phase_result* measured(const load_result& l, load_phase_kind k,
                                  certificate_key key = certificate_key::any) {
  for (const auto& p : l.phases)
    if (p.kind == k && p.key == key && !unmeasured(p)) return &p;
  return nullptr;
}

// R from a resumed phase in which only a share s of the connections resumed (the session is
// known to one of several servers): the phase's cost per connection is s / R + (1 - s) / F, so
// 1 / R = (1 / rate - (1 - s) / F) / s. The phase's own rate when every connection resumed, or
// when noise makes the estimate meaningless.
double resumed_capacity(const load_phase_result& r, double full_per_s) {
  double s = r.connections > 0 ? static_cast<double>(r.resumed) / r.connections : 0;
  if (s >= 1.0 || s <= 0 || full_per_s <= 0 || r.connections_per_s <= 0) return r.connections_per_s;
  double cost = (1.0 / r.connections_per_s - (1.0 - s) / full_per_s) / s;
  return cost > 0 ? 1.0 / cost : r.connections_per_s;
}

void price(load_result& l, const target_result& probed) {
  using enum load_phase_kind;
  // `rate`: the resumption rate the ordinary probe (or the QUIC probe) measured.
  auto add_at = [&](load_phase_kind full, load_phase_kind resumed, double rate) {
    const auto* f = measured(l, full);
    const auto* r = measured(l, resumed);
    if (f == nullptr || r == nullptr) return;
    resumption_price p;
    p.full = full;
    p.resumed = resumed;
    p.resumption_rate = rate;
    p.full_per_s = f->connections_per_s;
    p.resumed_per_s = resumed_capacity(*r, p.full_per_s);
    p.today_per_s = capacity_at(p.resumption_rate, p.full_per_s, p.resumed_per_s);
    p.full_resumption_per_s = capacity_at(1.0, p.full_per_s, p.resumed_per_s);
    p.gain = p.today_per_s > 0 ? p.full_resumption_per_s / p.today_per_s - 1 : 0;
    l.prices.push_back(p);
  };
  auto add = [&](load_phase_kind full, load_phase_kind resumed) {
    if (const run_result* run = resuming_run(probed, resumed)) add_at(full, resumed, run->rate);
  };
  add(full_tls13, psk_tls13);
  // TLS 1.2: the mechanism that resumes best in the ordinary probe is what clients get.
  const run_result* t = resuming_run(probed, ticket_tls12);
  const run_result* i = resuming_run(probed, session_id_tls12);
  if (t != nullptr && (i == nullptr || t->rate >= i->rate))
    add(full_tls12, ticket_tls12);
  else if (i != nullptr)
    add(full_tls12, session_id_tls12);
  if (probed.quic && probed.quic->resumed > 0) add_at(full_quic, resumed_quic, probed.quic->rate);
}

// The UDP socket the QUIC probe of `probed` dialled, into `e`; false when it made no handshake.
bool quic_endpoint(const target& t, const target_result& probed, endpoint& e) {
  if (!probed.quic || !probed.quic->handshake_ok) return false;
  e.authority = http_authority(t);
  // The numeric "ip:port" it reported: no name to resolve again.
  try {
    return !resolve_target(parse_target(probed.quic->address), e.quic_addr, e.quic_addr_len);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

namespace {

// The plan: the TCP phases the ordinary probe saw work, the full TLS phase again per key type
// where the server offers both, then the QUIC phases.
std::vector<phase_spec> plan_phases(const endpoint& e, bool resolved, const target_result& probed,
                                    const load_options& o, bool stopped) {
  auto plan = base_phases(probed);
  // Both key types offered: a handshake restricted to each gets a leaf of that type.
  if (!plan.empty() && resolved && !stopped) {
    phase_spec full = plan.front();  // TLS 1.3 when spoken
    auto probe_key = [&](certificate_key key) {
      auto ctx = phase_context({full.kind, key}, false, o.max_cert_list_bytes);
      return one_handshake(e, ctx.get(), is_tls13(full.kind), o.timeout_ms).leaf_key_type;
    };
    int ec = probe_key(certificate_key::ecdsa);
    int rsa = probe_key(certificate_key::rsa);
    if (ec == EVP_PKEY_EC && (rsa == EVP_PKEY_RSA || rsa == EVP_PKEY_RSA_PSS)) {
      plan.push_back({full.kind, certificate_key::ecdsa});
      plan.push_back({full.kind, certificate_key::rsa});
    }
  }
  if (e.quic_addr_len > 0) add_quic_phases(probed, plan);
  return plan;
}

void price_certificate(load_result& l, const std::vector<phase_spec>& plan) {
  for (const auto& s : plan) {
    if (s.key != certificate_key::ecdsa) continue;
    const auto* pe = measured(l, s.kind, certificate_key::ecdsa);
    const auto* pr = measured(l, s.kind, certificate_key::rsa);
    if (pe != nullptr && pr != nullptr) {
      certificate_price c;
      c.phase = s.kind;
      c.ecdsa_per_s = pe->connections_per_s;
      c.rsa_per_s = pr->connections_per_s;
      c.gain = c.rsa_per_s > 0 ? c.ecdsa_per_s / c.rsa_per_s - 1 : 0;
      l.certificate = c;
    }
  }
}

// Runs the planned phases in order into `l.phases`. Once the server stopped answering (over
// TCP, or over QUIC: each transport on its own), a phase runs only after one handshake
// succeeds; a resumed phase offers the session of one handshake just before it.
void run_plan(const target& t, const endpoint& e, bool resolved,
              const std::vector<phase_spec>& plan, const load_options& o, load_result& l) {
  auto stopped = [&] { return o.stop != nullptr && o.stop->load(); };
  bool tcp_answers = resolved, quic_answers = true;
  auto not_run = [&](const phase_spec& s, load_phase_state why, const std::string& error) {
    load_phase_result r;
    r.kind = s.kind;
    r.key = s.key;
    r.state = why;
    if (!error.empty()) {
      r.failures = 1;
      r.last_error = error;
    }
    l.phases.push_back(std::move(r));
  };
  for (const auto& s : plan) {
    if (stopped()) {
      not_run(s, load_phase_state::not_run_interrupted, "");
      continue;
    }
    const bool quic = is_quic(s.kind);
    bool& answers = quic ? quic_answers : tcp_answers;
    single_handshake first;
    if (is_resumed(s.kind) || !answers) {
      if (quic) {
        first = one_quic_handshake(e, o);
      } else if (resolved) {
        auto ctx = phase_context(s, false, o.max_cert_list_bytes);
        first = one_handshake(e, ctx.get(), is_tls13(s.kind), o.timeout_ms);
      } else {
        first.error = "cannot resolve " + t.connect_host;
      }
      if (stopped()) {
        not_run(s, load_phase_state::not_run_interrupted, "");
        continue;
      }
      answers = first.ok;
      if (!first.ok) {
        not_run(s, load_phase_state::not_run_unanswered, first.error);
        continue;
      }
      if (is_resumed(s.kind) && !(quic ? first.quic.has_value() : first.session != nullptr)) {
        not_run(s, load_phase_state::not_run_no_session, "");
        continue;
      }
    }
    if (o.on_phase) o.on_phase(phase_label(s.kind, s.key));
    l.phases.push_back(quic ? run_quic_phase(e, s, first.quic, o, l.client_threads)
                            : run_phase(e, s, first.session.get(), o, l.client_threads));
    if (l.phases.back().state == load_phase_state::server_stopped) answers = false;
  }
}

}  // namespace

load_result run_load(const target& t, const target_result& probed, const load_options& o) {
  load_result l;
  l.duration_s = o.duration_s;
  l.concurrency = o.concurrency;
  l.max_rate = o.max_rate;
  l.request = o.request;
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  l.client_threads = std::max(1, std::min(threads, o.concurrency));
  endpoint e;
  bool resolved = !resolve_target(t, e.addr, e.addr_len);
  e.address = probed.address;
  e.sni = t.sni;
  if (o.request) e.request = http_request(t);
  if (quic_endpoint(t, probed, e)) l.quic_concurrency = quic_load_workers(o.concurrency);

  auto plan = plan_phases(e, resolved, probed, o, o.stop != nullptr && o.stop->load());
  if (o.on_plan) {
    std::vector<std::string> names;
    for (const auto& s : plan) names.push_back(phase_label(s.kind, s.key));
    o.on_plan(names);
  }
  run_plan(t, e, resolved, plan, o, l);
  price_certificate(l, plan);
  l.interrupted = o.stop != nullptr && o.stop->load();
  price(l, probed);
  return l;
}

}  // namespace ngxtls::probe
