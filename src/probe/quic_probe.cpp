// The QUIC probe's plan: one full handshake (it gives the session, the first ticket and any
// NEW_TOKEN), a few more full handshakes (ticket key names, timings), `attempts` resumption
// attempts offering the first session (as the TCP runs' same_session mode), one connection
// with the NEW_TOKEN token (does it skip the Retry?), and with --early-data the request as 0-RTT
// with a ticket that allows it, then the same ticket and request again. One connection at a
// time: a QUIC handshake on loopback takes about a millisecond, and the probe stays bounded.
#include "probe/quic_probe.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "probe/modules/tickets.hpp"
#include "probe/prober.hpp"
#include "probe/quic_connection.hpp"

namespace ngxtls::probe {

std::string to_string(quic_trigger t) {
  return t == quic_trigger::asked ? "asked" : "alt_svc";
}

namespace {

constexpr std::size_t max_errors_kept = 5;
constexpr int too_early = 425;  // RFC 8470

struct quic_plan {
  const sockaddr_storage* addr = nullptr;
  socklen_t addr_len = 0;
  const quic_probe_options* o = nullptr;
  /// When the phase must end (total_timeout_ms); max() for none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  quic_result res;
  std::vector<double> full_ms, resumed_ms;
  std::vector<unsigned char> token;  // the newest NEW_TOKEN token
};

quic_connection_options connection_options(const quic_plan& p) {
  quic_connection_options c;
  c.sni = p.o->sni;
  c.authority = p.o->authority;
  c.timeout_ms = p.o->timeout_ms;
  c.http = p.o->http;
  return c;
}

// Why a connection was made: its handshake time counts as full, as an attempt's, or not at all
// (0-RTT connections: their figure is early_response_ms).
enum class quic_role { full, attempt, early };

// Folds one finished connection into the result.
void fold(quic_plan& p, const quic_connection_result& c, quic_role role, bool token_sent) {
  auto& r = p.res;
  if (c.retry_received && !token_sent) r.retry = true;
  if (c.error) {
    ++r.failed_connections;
    if (r.errors.size() < max_errors_kept &&
        std::find(r.errors.begin(), r.errors.end(), *c.error) == r.errors.end())
      r.errors.push_back(*c.error);
  }
  if (!c.new_token.empty()) {
    r.new_token_received = true;
    p.token = c.new_token;
  }
  if (!c.handshake_ok) return;
  if (!r.handshake_ok) {
    r.handshake_ok = true;
    r.alpn = c.alpn;
    r.cipher = c.cipher;
    r.group = c.group;
    r.version = c.version;
  }
  if (c.http_status) ++r.http_statuses[*c.http_status];
  for (const auto& t : c.tickets) {
    ++r.tickets;
    if (!r.ticket_lifetime_hint_s) {
      r.ticket_lifetime_hint_s = t.lifetime_hint_s;
      r.max_early_data = t.max_early_data;
    }
    if (t.size_bytes <= stateful_ticket_max_bytes) {
      ++r.stateful_tickets;  // a session ID for the server's cache: no key name in it
      continue;
    }
    if (std::find(r.ticket_key_names.begin(), r.ticket_key_names.end(), t.key_name) ==
        r.ticket_key_names.end())
      r.ticket_key_names.push_back(t.key_name);
  }
  if (role == quic_role::early) return;
  if (role == quic_role::full) {
    ++r.full_handshakes;
    p.full_ms.push_back(c.handshake_ms);
  } else if (c.resumed) {
    p.resumed_ms.push_back(c.handshake_ms);
  } else {
    p.full_ms.push_back(c.handshake_ms);
  }
}

quic_connection_result connect_once(quic_plan& p, const quic_connection_options& c,
                                    quic_role role) {
  auto bounded = c;
  bounded.stop = p.o->stop;
  const auto stopped = [&p] {
    if (!p.o->stop || !p.o->stop->load()) return false;
    p.res.error = probe_interrupted_error;
    return true;
  };
  if (stopped()) return {};
  if (p.deadline != std::chrono::steady_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          p.deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      // Out of time: no connection; the phase's error says why it stopped.
      if (!p.res.error)
        p.res.error = "the QUIC probe stopped at the per-target deadline (--total-timeout " +
                      std::to_string(p.o->total_timeout_ms) + " ms)";
      return {};
    }
    bounded.timeout_ms = static_cast<int>(std::min<long long>(bounded.timeout_ms, left));
  }
  auto res = run_quic_connection(*p.addr, p.addr_len, bounded);
  if (stopped()) return {};  // cut short by the stop: not a measurement
  fold(p, res, role, !c.token.empty());
  return res;
}

// `creds` offered o->token_offers times, one connection after another (each from a new UDP
// port: behind a shared reuseport socket they reach the instances in turn). The first completed
// offer sets `first`'s retry_with_token and token_resumed when `first` is given.
quic_token_offers offer_credentials(quic_plan& p, const quic_credentials& creds,
                                    quic_result* first) {
  quic_token_offers out;
  auto c = connection_options(p);
  c.token = creds.token;
  c.offer = creds.session ? &*creds.session : nullptr;
  for (int i = 0; i < p.o->token_offers && std::chrono::steady_clock::now() < p.deadline; ++i) {
    auto t = connect_once(p, c, quic_role::attempt);
    ++out.offered;
    if (!t.handshake_ok) {
      if (t.server_close && t.server_close->rfind("0xb ", 0) == 0) ++out.invalid_token;
      const std::string why = t.error ? *t.error : "no QUIC handshake";
      if (out.errors.size() < max_errors_kept &&
          std::find(out.errors.begin(), out.errors.end(), why) == out.errors.end())
        out.errors.push_back(why);
      continue;
    }
    ++out.completed;
    out.retried += t.retry_received ? 1 : 0;
    out.resumed += t.resumed ? 1 : 0;
    if (first && !first->retry_with_token) {
      first->retry_with_token = t.retry_received;
      first->token_resumed = t.resumed;
    }
  }
  return out;
}

void fill_try(early_data_try& e, const quic_connection_result& c) {
  e = early_try_of(c.early, c.http_status, c.error, c.handshake_ok, "no QUIC handshake");
}

// 0-RTT: a fresh ticket that allows early data, the request with it, and again.
void early_data_runs(quic_plan& p) {
  auto setup = connect_once(p, connection_options(p), quic_role::full);
  if (!setup.session || setup.session->max_early_data == 0) return;
  const quic_session ticket = *setup.session;
  auto c = connection_options(p);
  c.offer = &ticket;
  c.early_data = true;
  auto first = connect_once(p, c, quic_role::early);
  p.res.early_data_tried = true;
  fill_try(p.res.early_first, first);
  if (first.handshake_ok && first.http_status && first.early == early_data_outcome::accepted)
    p.res.early_response_ms = first.first_byte_ms;
  auto replay = connect_once(p, c, quic_role::early);
  fill_try(p.res.early_replay, replay);
  p.res.early_replay_answered = replay.early == early_data_outcome::accepted &&
                                replay.http_status && *replay.http_status != too_early;
}

}  // namespace

quic_result run_quic_probe(const sockaddr_storage& addr, socklen_t addr_len,
                           const quic_probe_options& o) {
  auto started = std::chrono::steady_clock::now();
  quic_plan p;
  p.addr = &addr;
  p.addr_len = addr_len;
  p.o = &o;
  if (o.total_timeout_ms > 0) p.deadline = started + std::chrono::milliseconds(o.total_timeout_ms);
  if (o.carried) p.res.carried = offer_credentials(p, *o.carried, nullptr);
  auto first = connect_once(p, connection_options(p), quic_role::full);
  if (!first.handshake_ok) {
    // connect_once's own reason (the stop, the --total-timeout deadline) stands.
    if (!p.res.error) p.res.error = first.error ? *first.error : "no QUIC handshake";
  } else {
    for (int i = 0; i < o.samples; ++i) connect_once(p, connection_options(p), quic_role::full);
    p.res.credentials.session = first.session;
    if (first.session) {
      const quic_session base = *first.session;
      auto c = connection_options(p);
      c.offer = &base;
      for (int i = 0; i < o.attempts && std::chrono::steady_clock::now() < p.deadline; ++i) {
        auto a = connect_once(p, c, quic_role::attempt);
        ++p.res.attempts;
        if (a.handshake_ok && a.resumed) ++p.res.resumed;
      }
      if (!p.token.empty()) {
        const quic_credentials own{p.token, base};
        p.res.token_offers = offer_credentials(p, own, &p.res);
      }
    }
    if (o.early_data) early_data_runs(p);
  }
  auto& r = p.res;
  r.credentials.token = p.token;
  r.rate = r.attempts > 0 ? static_cast<double>(r.resumed) / r.attempts : 0;
  r.full_handshake_ms = summarize_ms(std::move(p.full_ms));
  r.resumed_handshake_ms = summarize_ms(std::move(p.resumed_ms));
  r.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return std::move(p.res);
}

std::optional<int> alt_svc_h3_port(const std::string& value, const std::string& same_host) {
  // Alt-Svc = clear / 1#( protocol-id "=" alt-authority *( OWS ";" parameter ) )
  std::size_t pos = 0;
  while (pos < value.size()) {
    std::size_t end = value.find(',', pos);
    if (end == std::string::npos) end = value.size();
    std::string entry = value.substr(pos, end - pos);
    pos = end + 1;
    auto first = entry.find_first_not_of(" \t");
    if (first == std::string::npos || entry.compare(first, 4, "h3=\"") != 0) continue;
    auto open = first + 4, close = entry.find('"', open);
    if (close == std::string::npos) continue;
    std::string authority = entry.substr(open, close - open);
    auto colon = authority.rfind(':');
    if (colon == std::string::npos) continue;
    std::string host = authority.substr(0, colon), port = authority.substr(colon + 1);
    if (!host.empty() && host != same_host) continue;
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](unsigned char ch) { return std::isdigit(ch); }))
      continue;
    int n = std::stoi(port);
    if (n >= 1 && n <= 65535) return n;
  }
  return std::nullopt;
}

}  // namespace ngxtls::probe
