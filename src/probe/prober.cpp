// The loop and the plan: which connections to open for which run of which target, how many at
// once, and when a target is finished. What the connections saw is folded by the measurement
// modules (measurements.cpp); the connections themselves live in connection.cpp.
#include "probe/prober.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <list>
#include <memory>

#include "base/error.hpp"
#include "probe/connection.hpp"
#include "probe/measurement.hpp"
#include "probe/plan.hpp"
#include "probe/session_file.hpp"

namespace ngxtls::probe {
namespace {

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

// A header field name compared as HTTP does (case-insensitively); `lower` is lower case.
bool header_named(const std::string& name, std::string_view lower) {
  return name.size() == lower.size() &&
         std::equal(name.begin(), name.end(), lower.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

bool unsupported_protocol(const std::string& reason) {
  return reason.find("protocol version") != std::string::npos ||
         reason.find("unsupported protocol") != std::string::npos ||
         reason.find("no protocols available") != std::string::npos ||
         reason.find("alert handshake failure") != std::string::npos;
}

// One protocol/mechanism run to plan.
struct run_spec {
  tls_protocol protocol;
  resumption_mechanism mechanism;
  SSL_CTX* ctx;
  SSL_CTX* strict_ctx;
};

// The newest session of `c` that can be resumed (null when none).
SSL_SESSION* newest_resumable(const connection& c) {
  for (auto it = c.sessions.rbegin(); it != c.sessions.rend(); ++it)
    if (SSL_SESSION_is_resumable(it->get())) return it->get();
  return nullptr;
}

class prober {
 public:
  prober(const std::vector<target>& targets, const probe_options& o) : opt_(o) {
    limits_.timeout_ms = o.timeout_ms;
    limits_.idle_ms = o.idle_ms;
    limits_.max_response_bytes = o.max_response_bytes;
    limits_.max_tickets = o.max_tickets_per_connection;
    limits_.http = o.http;
    limits_.read_to_close = o.http;
    tls13_ = make_client_context(TLS1_3_VERSION, false, o.http, o.max_cert_list_bytes);
    tls12_ticket_ = make_client_context(TLS1_2_VERSION, false, o.http, o.max_cert_list_bytes);
    tls12_id_ = make_client_context(TLS1_2_VERSION, true, o.http, o.max_cert_list_bytes);
    strict13_ = make_client_context(TLS1_3_VERSION, false, o.http, o.max_cert_list_bytes, true);
    strict12_ticket_ =
        make_client_context(TLS1_2_VERSION, false, o.http, o.max_cert_list_bytes, true);
    strict12_id_ = make_client_context(TLS1_2_VERSION, true, o.http, o.max_cert_list_bytes, true);
    if (o.sess_in) sess_in_ = read_session_pem(*o.sess_in);
    if (o.sess_out) check_session_output(*o.sess_out);  // fail before probing, not after
    for (const auto& t : targets) {
      auto ts = std::make_unique<target_state>();
      ts->options = &opt_;
      ts->t = t;
      ts->res.target = t.text;
      ts->res.sni = t.sni;
      ts->request = http_request(t);
      for (const auto& spec : plan()) {
        run_state r;
        r.protocol = spec.protocol;
        r.mechanism = spec.mechanism;
        r.ctx = spec.ctx;
        r.strict_ctx = spec.strict_ctx;
        r.res.protocol = spec.protocol;
        r.res.mechanism = spec.mechanism;
        r.res.mode = o.fresh_tickets ? offer_mode::fresh_tickets : offer_mode::same_session;
        if (sess_in_) {
          r.base = share_session(sess_in_.get());
          r.latest = share_session(sess_in_.get());
          r.res.session_source = session_origin::sess_in;
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
      if (opt_.stop != nullptr && opt_.stop->load()) {
        interrupt_all();
        break;
      }
      auto now = clock_type::now();
      while (active < std::max(1, opt_.parallel) && next_target < targets_.size()) {
        target_state& t = *targets_[next_target++];
        start_target(t, now);
        if (t.stage == target_stage::finished) {
          // Unresolvable: finished at once, never pumped, so it must not hold a slot.
          ++progress_.targets_done;
          report_progress();
          continue;
        }
        ++active;
      }
      for (auto& t : targets_) {
        if (t->stage == target_stage::waiting || t->stage == target_stage::finished) continue;
        pump(*t, now);
        if (t->stage == target_stage::finished) {
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
  // The runs of every target: TLS 1.3 ticket, TLS 1.2 ticket, TLS 1.2 session_id, as asked.
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
    using enum resumption_mechanism;
    if (want13) specs.push_back({tls_protocol::tls1_3, ticket, tls13_.get(), strict13_.get()});
    if (want12t)
      specs.push_back({tls_protocol::tls1_2, ticket, tls12_ticket_.get(), strict12_ticket_.get()});
    if (want12i)
      specs.push_back({tls_protocol::tls1_2, session_id, tls12_id_.get(), strict12_id_.get()});
    return specs;
  }

  void report_progress() {
    if (opt_.on_progress) opt_.on_progress(progress_);
  }

  void start_target(target_state& t, time_point now) {
    t.started = now;
    t.deadline = now + std::chrono::milliseconds(opt_.total_timeout_ms);
    t.stage = target_stage::runs;
    // Module states exist while the target is probed: memory follows --parallel, not the
    // length of the target list.
    for (const auto* m : measurements()) t.module_states.push_back(m->start_target(t));
    if (auto err = resolve_target(t.t, t.addr, t.addr_len)) {
      t.res.error = *err;
      t.stage = target_stage::finished;
      t.res.protocols.clear();
      progress_.done += static_cast<int>(t.runs.size()) * (1 + opt_.attempts);
      t.runs.clear();
      t.module_states.clear();
      return;
    }
    t.res.address = address_text(t.addr);
  }

  module_state* state_of(target_state& t, std::size_t module) {
    return module < t.module_states.size() ? t.module_states[module].get() : nullptr;
  }

  bool modules_want_full_handshakes(target_state& t, const run_state& r) {
    const auto& ms = measurements();
    for (std::size_t i = 0; i < ms.size(); ++i)
      if (ms[i]->wants_full_handshakes(t, state_of(t, i), r)) return true;
    return false;
  }

  bool modules_want_retry(target_state& t) {
    const auto& ms = measurements();
    for (std::size_t i = 0; i < ms.size(); ++i)
      if (ms[i]->wants_retry(t, state_of(t, i))) return true;
    return false;
  }

  void pump(target_state& t, time_point now) {
    if (now >= t.deadline) {
      abort_target(t, "the probe did not finish within the total deadline of " +
                          std::to_string(opt_.total_timeout_ms) + " ms");
      return;
    }
    if (t.stage == target_stage::runs) {
      if (!t.keepalive_launched && opt_.keepalive_wait_ms > 0 && opt_.http &&
          t.working_ctx != nullptr) {
        t.keepalive_launched = true;
        ++progress_.planned;
        launch(t, 0, connection_role::keepalive, -1, nullptr, now);
      }
      while (t.run < t.runs.size()) {
        run_state& r = t.runs[t.run];
        if (!r.started) {
          r.started = true;
          r.started_at = now;
          if (r.base) {
            r.first_done = true;  // --sess-in: the saved session stands in for the first handshake
          } else {
            launch(t, t.run, connection_role::first, -1, nullptr, now);
            for (const auto* m : measurements())
              for (int i = m->full_handshakes_at_start(r); i > 0; --i) {
                ++progress_.planned;
                launch(t, t.run, connection_role::sample, -1, nullptr, now);
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
              } else if (r.protocol == tls_protocol::tls1_3 && r.in_flight > 0) {
                break;
              } else {
                fresh = share_session(r.latest.get());
              }
            }
            SSL_SESSION* offer = opt_.fresh_tickets ? fresh.get() : r.base.get();
            launch(t, t.run, connection_role::attempt, r.launched, offer, now);
            ++r.launched;
          }
          if (r.completed < opt_.attempts) return;
          // Extra full handshakes a module asks for (more tickets to see key names repeat).
          if (r.extra_launched < max_extra_full_handshakes && modules_want_full_handshakes(t, r)) {
            if (r.in_flight == 0) {
              for (int i = 0;
                   i < std::max(1, opt_.per_target) && r.extra_launched < max_extra_full_handshakes;
                   ++i) {
                ++progress_.planned;
                ++r.extra_launched;
                launch(t, t.run, connection_role::sample, -1, nullptr, now);
              }
            }
            return;
          }
          if (!pump_follow_ups(t, r, now)) return;
        }
        if (r.in_flight > 0) return;
        finish_run(t, r, now);
        ++t.run;
      }
      if (t.in_flight > 0) return;
      finish_runs(t, now);
    }
    if (t.stage == target_stage::retries) {
      if (!modules_want_retry(t) || t.working_ctx == nullptr) {
        if (t.in_flight == 0) finish_target(t);
        return;
      }
      if (t.in_flight == 0 && now >= t.next_retry_at) {
        ++progress_.planned;
        launch(t, 0, connection_role::retry, -1, nullptr, now);
        t.next_retry_at = now + std::chrono::milliseconds(retry_interval_ms);
      }
    }
  }

  // The stages after a run's attempts, one after another: the chain of newest tickets, the
  // strict-client run, early data. True when all are over.
  bool pump_follow_ups(target_state& t, run_state& r, time_point now) {
    const std::size_t i = t.run;
    const bool strict = opt_.strict_client && opt_.http && r.res.session_offered;
    if (strict && r.strict_first_done && r.strict_launched < opt_.attempts) {
      // The strict-client attempts, -c in flight, each offering the strict first session.
      while (r.strict_launched < opt_.attempts && t.in_flight < std::max(1, opt_.per_target)) {
        ++progress_.planned;
        launch(t, i, connection_role::strict_attempt, r.strict_launched, r.strict_base.get(), now,
               true);
        ++r.strict_launched;
      }
      return false;
    }
    if (r.in_flight > 0) return false;
    // The chain: each connection offers the newest ticket of the one before.
    if (r.chain_next && r.chain_launched < opt_.chain_offers) {
      ++progress_.planned;
      ++r.chain_launched;
      session_ptr offer = std::move(r.chain_next);
      launch(t, i, connection_role::chain, r.chain_launched - 1, offer.get(), now);
      return false;
    }
    if (strict && !r.strict_started) {
      r.strict_started = true;
      ++progress_.planned;
      launch(t, i, connection_role::strict_first, -1, nullptr, now, true);
      return false;
    }
    if (opt_.early_data && opt_.http && r.protocol == tls_protocol::tls1_3 &&
        r.res.session_offered && r.res.max_early_data > 0 && r.early_stage < 5) {
      if (r.early_stage == 0) {
        r.early_stage = 1;
        ++progress_.planned;
        launch(t, i, connection_role::early_setup, -1, nullptr, now);
        return false;
      }
      if (!r.early_ticket) {
        r.early_stage = 5;  // the setup handshake gave no ticket that allows early data
        return true;
      }
      if (r.early_stage >= 4) {
        r.early_stage = 5;
        return true;
      }
      const connection_role roles[] = {connection_role::early_first, connection_role::early_replay,
                                       connection_role::early_parallel};
      const connection_role role = roles[r.early_stage - 1];
      const int count = role == connection_role::early_parallel ? 2 : 1;
      for (int k = 0; k < count; ++k) {
        ++progress_.planned;
        launch(t, i, role, k, r.early_ticket.get(), now, false, true);
      }
      ++r.early_stage;
      return false;
    }
    return true;
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
    if (!t.res.error && t.working_ctx != nullptr && modules_want_retry(t)) {
      t.stage = target_stage::retries;
      t.next_retry_at = now;
    } else {
      finish_target(t);
    }
  }

  void finish_target(target_state& t) {
    const auto& ms = measurements();
    for (std::size_t i = 0; i < ms.size(); ++i) ms[i]->finish_target(t, state_of(t, i));
    for (auto& r : t.runs) t.res.protocols.push_back(std::move(r.res));
    t.res.elapsed_ms = ms_between(t.started, clock_type::now());
    t.stage = target_stage::finished;
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
    t.module_states.clear();
    if (!keep_base) std::vector<run_state>().swap(t.runs);
  }

  void abort_target(target_state& t, const std::string& why) {
    for (auto& c : conns_)
      if (c->owner == &t && c->phase != connection_phase::done) fail(*c, why);
    reap();
    if (!t.res.error) t.res.error = why;
    for (auto& r : t.runs)
      if (!r.finished) finish_run(t, r, clock_type::now());
    finish_target(t);
  }

  // Ends every target at once: those being probed keep what they measured, those not yet
  // started are left unprobed; all say they were interrupted.
  void interrupt_all() {
    for (auto& t : targets_) {
      if (t->stage == target_stage::finished) continue;
      if (t->stage == target_stage::waiting) {
        t->res.error = probe_interrupted_error;
        t->stage = target_stage::finished;
        continue;
      }
      abort_target(*t, probe_interrupted_error);
    }
  }

  void finish_run(target_state& t, run_state& r, time_point now) {
    if (r.finished) return;
    r.finished = true;
    r.res.elapsed_ms = r.started ? ms_between(r.started_at, now) : 0;
    const auto& ms = measurements();
    for (std::size_t i = 0; i < ms.size(); ++i) ms[i]->finish_run(t, state_of(t, i), r);
  }

  // Opens a connection of `role`; `strict` with the run's strict context, `early` sending the
  // request as early data.
  void launch(target_state& t, std::size_t run_index, connection_role role, int attempt,
              SSL_SESSION* offer, time_point now, bool strict = false, bool early = false) {
    auto c = std::make_unique<connection>();
    c->limits = &limits_;
    c->address = t.res.address;
    c->request = t.request;
    c->owner = &t;
    c->run_index = run_index;
    c->role = role;
    c->attempt_index = attempt;
    const bool retry = role == connection_role::retry;
    const bool keepalive = role == connection_role::keepalive;
    SSL_CTX* ctx = retry || keepalive ? t.working_ctx : t.runs[run_index].ctx;
    if (keepalive) {
      // The same request without "Connection: close": the server keeps the connection until
      // its keep-alive timeout, and the connection reads until then.
      const std::string close_header = "Connection: close\r\n";
      if (auto at = c->request.find(close_header); at != std::string::npos)
        c->request.erase(at, close_header.size());
      c->idle_ms = opt_.keepalive_wait_ms;
    }
    if (strict) ctx = t.runs[run_index].strict_ctx;
    c->strict = strict;
    if (early) c->early_data = t.request;
    c->tls13 = retry || keepalive ? SSL_CTX_get_max_proto_version(ctx) == TLS1_3_VERSION
                                  : t.runs[run_index].protocol == tls_protocol::tls1_3;
    ++t.in_flight;
    if (!retry && !keepalive) ++t.runs[run_index].in_flight;
    connection& ref = *c;
    conns_.push_back(std::move(c));
    open_connection(ref, t.addr, t.addr_len, ctx, t.t.sni, opt_.ocsp, offer, now);
    if (keepalive) ref.deadline += std::chrono::milliseconds(opt_.keepalive_wait_ms);
  }

  void poll_once() {
    reap();
    std::vector<pollfd> fds;
    std::vector<connection*> owners;
    auto now = clock_type::now();
    time_point wake = now + std::chrono::milliseconds(200);
    for (auto& c : conns_) {
      short ev = poll_events(*c);
      if (ev == 0) {
        if (c->phase != connection_phase::done) wake = std::min(wake, wake_time(*c));
        continue;
      }
      fds.push_back({c->fd, ev, 0});
      owners.push_back(c.get());
      wake = std::min(wake, wake_time(*c));
    }
    for (auto& t : targets_) {
      if (t->stage == target_stage::retries) wake = std::min(wake, t->next_retry_at);
      if (t->stage == target_stage::runs || t->stage == target_stage::retries)
        wake = std::min(wake, t->deadline);
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    int timeout = static_cast<int>(std::clamp<long long>(wait_ms + 1, 0, 200));
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents != 0) step(*owners[i]);
    }
    now = clock_type::now();
    for (auto& c : conns_) check_time(*c, now);
    reap();
  }

  // Folds finished connections into their target's results and frees them.
  void reap() {
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->phase != connection_phase::done) {
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
    if (c.handshake_ok && t.working_ctx == nullptr) t.working_ctx = SSL_get_SSL_CTX(c.ssl.get());
    if (c.error && !t.first_error) t.first_error = c.error;
    run_state* r = c.role == connection_role::retry || c.role == connection_role::keepalive
                       ? nullptr
                       : &t.runs[c.run_index];
    if (r) account_run(t, *r, c);
    const auto& ms = measurements();
    for (std::size_t i = 0; i < ms.size(); ++i) ms[i]->on_connection(t, state_of(t, i), r, c);
    report_progress();
  }

  // The plan's own bookkeeping: the run's flow and the sessions it offers next.
  void account_run(target_state& t, run_state& r, connection& c) {
    auto& res = r.res;
    --r.in_flight;
    if (c.handshake_ok && !is_follow_up(c.role)) {
      ++res.connections;
      if (res.negotiated_protocol.empty()) {
        res.negotiated_protocol = c.negotiated_protocol;
        res.cipher = c.cipher;
        res.group = c.group;
        res.alpn = c.alpn;
      }
    }
    if (c.role == connection_role::sample) return;
    if (c.role == connection_role::chain) {
      r.chain_next.reset();
      if (c.handshake_ok && !c.error)
        if (SSL_SESSION* s = newest_resumable(c)) r.chain_next = share_session(s);
      return;
    }
    if (c.role == connection_role::strict_first) {
      r.strict_first_done = true;
      if (c.session_after_close) r.strict_base = share_session(c.session_after_close.get());
      return;
    }
    if (c.role == connection_role::early_setup) {
      for (auto it = c.sessions.rbegin(); it != c.sessions.rend(); ++it)
        if (SSL_SESSION_is_resumable(it->get()) && SSL_SESSION_get_max_early_data(it->get()) > 0) {
          r.early_ticket = share_session(it->get());
          break;
        }
      return;
    }
    if (c.role != connection_role::first && c.role != connection_role::attempt) return;
    if (c.role == connection_role::first) {
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
      // The session to resume: the newest one of the first connection (for TLS 1.3 the last
      // NewSessionTicket; OpenSSL's s_client -sess_out keeps the last one too).
      const bool by_id = r.mechanism == resumption_mechanism::session_id;
      if (!c.sessions.empty())
        r.base = share_session(c.sessions.back().get());
      else if (SSL_SESSION* s = SSL_get_session(c.ssl.get()); s && by_id)
        r.base = share_session(s);
      if (r.base) {
        unsigned len = 0;
        SSL_SESSION_get_id(r.base.get(), &len);
        res.session_id_issued = len > 0;
        std::string name = ticket_prefix_hex(r.base.get());
        if (!name.empty()) res.offered_key_name = name;
      }
      bool offerable = r.base && SSL_SESSION_is_resumable(r.base.get());
      if (!by_id && r.base && SSL_SESSION_has_ticket(r.base.get()) != 1) offerable = false;
      // No session ID: there is nothing a client could offer (OpenSSL servers send none
      // without a server cache), so no attempt is made (docs/probe-json.md, session_offered).
      if (by_id && !res.session_id_issued) offerable = false;
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
    if (!c.handshake_ok || c.error) return;
    // The chain starts from a ticket received on a resumed attempt (same_session ticket runs).
    if (c.reused && !r.chain_next && r.chain_launched == 0 && !opt_.fresh_tickets &&
        r.mechanism == resumption_mechanism::ticket)
      if (SSL_SESSION* s = newest_resumable(c)) r.chain_next = share_session(s);
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
  connection_limits limits_;
  tls::ssl_ctx_ptr tls13_, tls12_ticket_, tls12_id_, strict13_, strict12_ticket_, strict12_id_;
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
  auto results = p.run();
  if (options.quic != quic_mode::never)
    for (std::size_t i = 0; i < targets.size() && i < results.size(); ++i) {
      if (options.stop && options.stop->load()) break;
      probe_quic(targets[i], results[i], options);
    }
  return results;
}

void probe_quic(const target& t, target_result& r, const probe_options& options) {
  std::optional<std::string> alt_svc;
  std::optional<int> port;
  for (const auto& [name, value] : r.response_headers) {
    if (!header_named(name, "alt-svc")) continue;
    if (auto p = alt_svc_h3_port(value, t.host)) {
      alt_svc = value;
      port = p;
      break;
    }
  }
  if (!port && options.quic != quic_mode::always) return;
  quic_result q;
  q.trigger = options.quic == quic_mode::always ? quic_trigger::asked : quic_trigger::alt_svc;
  q.alt_svc = alt_svc;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  target udp = t;
  // --connect names another backend: Alt-Svc's port is then the backend's, on its address.
  udp.connect_port = port ? *port : t.connect_port;
  if (auto err = resolve_target(udp, addr, addr_len)) {
    q.error = *err;
    r.quic = std::move(q);
    return;
  }
  quic_probe_options o;
  o.attempts = options.attempts;
  o.timeout_ms = options.timeout_ms;
  o.total_timeout_ms = options.total_timeout_ms;
  o.http = options.http;
  o.early_data = options.early_data;
  o.carried = options.quic_carried;
  o.sni = t.sni;
  o.authority = http_authority(t);
  o.stop = options.stop;
  auto measured = run_quic_probe(addr, addr_len, o);
  measured.trigger = q.trigger;
  measured.alt_svc = q.alt_svc;
  measured.address = address_text(addr);
  r.quic = std::move(measured);
}

std::string http_authority(const target& t) {
  std::string host = !t.sni.empty()
                         ? t.sni
                         : (t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host);
  if (t.port != 443) host += ":" + std::to_string(t.port);
  return host;
}

std::string http_request(const target& t) {
  return "HEAD / HTTP/1.1\r\nHost: " + http_authority(t) +
         "\r\nUser-Agent: ngxtls/" NGXTLS_VERSION "\r\nConnection: close\r\n\r\n";
}

std::optional<std::string> resolve_target(const target& t, sockaddr_storage& addr,
                                          socklen_t& addr_len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port = std::to_string(t.connect_port);
  int rc = getaddrinfo(t.connect_host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr)
    return "cannot resolve \"" + t.connect_host + "\": " + gai_strerror(rc);
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  addr_len = found->ai_addrlen;
  freeaddrinfo(found);
  return std::nullopt;
}

}  // namespace ngxtls::probe
