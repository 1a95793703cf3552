// OCSP staples: every full handshake asks for one (status_request); each staple is checked
// against its own handshake's chain (tls::check_ocsp_staple). nginx fetches staples lazily per
// worker, so while none arrived the module asks for more connections for a while.
#include "probe/modules/ocsp.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "probe/measurement.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::probe {
namespace {

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

struct ocsp_state final : module_state {
  time_point first_asked, last_asked;
  bool asked = false;
  std::optional<tls::staple_check> shown;  // the first invalid staple, else the last
  staple_memo memo;
};

// The staple of `c`'s handshake, checked against the chain that handshake carried (the issuer
// is normally the second certificate).
tls::staple_check check_staple(const connection& c, staple_memo& memo) {
  SSL* s = c.ssl.get();
  unsigned char* staple = nullptr;
  long n = SSL_get_tlsext_status_ocsp_resp(s, &staple);
  std::vector<X509*> chain;
  if (STACK_OF(X509)* peer_chain = SSL_get_peer_cert_chain(s))
    for (int i = 0; i < sk_X509_num(peer_chain); ++i) chain.push_back(sk_X509_value(peer_chain, i));
  X509* leaf = SSL_get0_peer_certificate(s);
  const std::string_view der(reinterpret_cast<const char*>(staple), static_cast<std::size_t>(n));
  // A server staples the same bytes with the same chain on most connections: the verdict of
  // the previous identical staple stands (two signature checks saved per handshake; a
  // target's probe lasts at most its total deadline, so the time window barely moves).
  if (memo.same(der, leaf, chain)) return memo.verdict;
  tls::staple_check v = tls::check_ocsp_staple(der, leaf, chain);
  memo.remember(der, leaf, chain, v);
  return v;
}

class ocsp final : public measurement {
 public:
  std::string_view name() const override { return "ocsp"; }

  std::unique_ptr<module_state> start_target(target_state& t) const override {
    t.res.ocsp.checked = t.options->ocsp;
    return std::make_unique<ocsp_state>();
  }

  void on_connection(target_state& t, module_state* state, run_state*,
                     const connection& c) const override {
    // Staples travel only in full handshakes: a resumed handshake has no Certificate message
    // (TLS 1.2 abbreviated handshake, TLS 1.3 PSK), so only full ones count.
    if (!t.options->ocsp || !c.handshake_ok || c.reused) return;
    auto& st = *static_cast<ocsp_state*>(state);
    auto& o = t.res.ocsp;
    if (o.connections == 0) o.first_connection_stapled = c.stapled;
    ++o.connections;
    if (!st.asked) {
      st.asked = true;
      st.first_asked = c.started;
    }
    st.last_asked = std::max(st.last_asked, c.started);
    if (!c.stapled) return;
    ++o.stapled;
    const tls::staple_check verdict = check_staple(c, st.memo);
    if (verdict.verdict == tls::staple_verdict::valid) ++o.valid_staples;
    if (!st.shown || st.shown->verdict == tls::staple_verdict::valid) st.shown = verdict;
  }

  // "Absent" needs a connection that started at least ocsp_min_wait_ms after the first, and
  // ocsp_min_connections connections; a certificate without an OCSP URL needs no wait.
  bool wants_retry(const target_state& t, const module_state* state) const override {
    const auto& st = *static_cast<const ocsp_state*>(state);
    const auto& o = t.res.ocsp;
    if (!t.options->ocsp || o.stapled > 0) return false;
    if (t.res.certificate && !t.res.certificate->ocsp_url_present) return false;
    const bool waited_enough =
        st.asked && ms_between(st.first_asked, st.last_asked) >= t.options->ocsp_min_wait_ms &&
        o.connections >= t.options->ocsp_min_connections;
    return !waited_enough;
  }

  void finish_target(target_state& t, module_state* state) const override {
    auto& o = t.res.ocsp;
    if (!t.options->ocsp || o.connections == 0) {
      o.status = ocsp_status::skipped;
    } else if (o.stapled > 0) {
      o.status = o.valid_staples == o.stapled ? ocsp_status::working : ocsp_status::invalid;
    } else if (t.res.certificate && !t.res.certificate->ocsp_url_present) {
      o.status = ocsp_status::not_applicable;
    } else {
      o.status = ocsp_status::absent;
    }
    if (state == nullptr) return;
    const auto& st = *static_cast<const ocsp_state*>(state);
    if (st.shown) {
      const auto& sc = *st.shown;
      const auto& info = sc.info;
      o.staple_status = sc.verdict;
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
    if (st.asked) o.waited_ms = ms_between(st.first_asked, st.last_asked);
    if (o.status == ocsp_status::skipped)
      o.wait = ocsp_wait::none;
    else if (o.stapled > 0)
      o.wait = ocsp_wait::staple_arrived;
    else if (o.status == ocsp_status::not_applicable)
      o.wait = ocsp_wait::skipped_no_responder_url;
    else
      o.wait = ocsp_wait::waited;
  }

  void target_verdicts(const target_result& t, std::vector<std::string>& out) const override {
    const auto& o = t.ocsp;
    if (o.status == ocsp_status::working) {
      std::string line = "OCSP stapling works: a valid staple on " + std::to_string(o.stapled) +
                         " of " + std::to_string(o.connections) + " connections";
      if (o.cert_status) line += ", certificate status " + *o.cert_status;
      if (!o.first_connection_stapled) line += " (none on the first connection: fetched lazily)";
      out.push_back(line);
    } else if (o.status == ocsp_status::invalid) {
      out.push_back("OCSP stapling is broken: " + std::to_string(o.stapled - o.valid_staples) +
                    " of " + std::to_string(o.stapled) + " staples are not valid (" +
                    staple_status_text(o) + "): " + o.staple_reason.value_or("?"));
    } else if (o.status == ocsp_status::absent) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", o.waited_ms / 1000.0);
      out.push_back("OCSP stapling: no staple on any of " + std::to_string(o.connections) +
                    " connections over " + secs +
                    " s although the certificate names an OCSP responder");
    } else if (o.status == ocsp_status::not_applicable) {
      out.push_back("OCSP stapling: not applicable (the certificate names no OCSP responder)");
    }
  }

  void target_text(const target_result& t, text_sink& s) const override {
    const auto& o = t.ocsp;
    if (!o.checked || o.connections == 0) return;
    s.out << "  OCSP: " << to_string(o.status) << ", staple on " << o.stapled << "/"
          << o.connections << " connections";
    if (o.stapled > 0) s.out << " (" << o.valid_staples << " valid)";
    if (o.wait == ocsp_wait::skipped_no_responder_url)
      s.out << "; no wait for a staple (no OCSP responder URL in the certificate)";
    else if (o.wait == ocsp_wait::waited)
      s.out << "; waited " << static_cast<long>(o.waited_ms) << " ms for a staple";
    if (o.next_update_in_s) s.out << ", next update in " << *o.next_update_in_s << " s";
    if (o.staple_status)
      s.out << "; staple " << staple_status_text(o) << ": " << s.safe(o.staple_reason.value_or(""));
    s.out << "\n";
  }

  void target_json(const target_result& t, nlohmann::json& j) const override {
    const auto& o = t.ocsp;
    auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    j["ocsp"] = {{"checked", o.checked},
                 {"status", to_string(o.status)},
                 {"connections", o.connections},
                 {"stapled", o.stapled},
                 {"valid_staples", o.valid_staples},
                 {"staple_status", o.staple_status ? nlohmann::json(staple_status_text(o))
                                                   : nlohmann::json(nullptr)},
                 {"staple_reason", opt(o.staple_reason)},
                 {"first_connection_stapled", o.first_connection_stapled},
                 {"waited_ms", o.waited_ms},
                 {"wait", to_string(o.wait)},
                 {"response_status", opt(o.response_status)},
                 {"cert_status", opt(o.cert_status)},
                 {"revocation_time_unix", opt(o.revocation_time_unix)},
                 {"revocation_reason", opt(o.revocation_reason)},
                 {"next_update_in_s", opt(o.next_update_in_s)},
                 {"this_update_age_s", opt(o.this_update_age_s)}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_probe_ocsp_stapled_connections", "Connections that carried an OCSP staple");
    m.declare("ngxtls_probe_ocsp_checked_connections", "Connections that asked for an OCSP staple");
    m.declare("ngxtls_probe_ocsp_stapling_working",
              "1 when every staple was valid, 0 when none arrived or one was not valid (no sample "
              "when not applicable)");
    m.declare("ngxtls_probe_ocsp_staple_valid",
              "1 when the staple is valid for the certificate, 0 when not; label status says why "
              "(only when stapled)");
  }

  void target_metrics(const target_result& t, const std::string& l, metric_set& m) const override {
    const auto& o = t.ocsp;
    if (!o.checked || o.connections == 0) return;
    m.add("ngxtls_probe_ocsp_stapled_connections", l, o.stapled);
    m.add("ngxtls_probe_ocsp_checked_connections", l, o.connections);
    if (o.status == ocsp_status::working || o.status == ocsp_status::absent ||
        o.status == ocsp_status::invalid)
      m.add("ngxtls_probe_ocsp_stapling_working", l, o.status == ocsp_status::working ? 1 : 0);
    if (o.staple_status)
      m.add("ngxtls_probe_ocsp_staple_valid",
            l + ",status=\"" + label_value(staple_status_text(o)) + "\"",
            o.status == ocsp_status::working ? 1 : 0);
  }
};

}  // namespace

std::string to_string(ocsp_wait w) {
  switch (w) {
    case ocsp_wait::staple_arrived:
      return "staple_arrived";
    case ocsp_wait::skipped_no_responder_url:
      return "skipped_no_responder_url";
    case ocsp_wait::waited:
      return "waited";
    default:
      return "none";
  }
}

/// The OCSP module (registered in measurements.cpp).
const measurement& ocsp_module() {
  static const ocsp m;
  return m;
}

}  // namespace ngxtls::probe
