// The certificate: facts about the server certificate of the first successful handshake.
#include "probe/modules/certificate.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cmath>
#include <cstdio>
#include <ctime>

#include "probe/measurement.hpp"
#include "tls/certificate.hpp"

namespace ngxtls::probe {
namespace {

std::string cut_label(std::string s) {
  if (s.size() > max_certificate_label_bytes) s = s.substr(0, max_certificate_label_bytes) + "...";
  return s;
}

chain_certificate chain_entry(const tls::certificate_info& info) {
  return {cut_label(info.subject), cut_label(info.issuer), info.serial_hex, info.not_after_unix};
}

class certificate final : public measurement {
 public:
  std::string_view name() const override { return "certificate"; }

  void on_connection(target_state& t, module_state*, run_state*,
                     const connection& c) const override {
    if (!c.handshake_ok || t.res.certificate) return;
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
      if (chain == nullptr) f.chain.push_back(chain_entry(info));
      for (int i = 0;
           chain != nullptr && i < sk_X509_num(chain) && f.chain.size() < max_chain_certificates;
           ++i)
        f.chain.push_back(chain_entry(tls::inspect_certificate_x509(sk_X509_value(chain, i))));
      t.res.certificate = std::move(f);
    } catch (const std::exception&) {
      ERR_clear_error();
    }
  }

  void target_verdicts(const target_result& t, std::vector<std::string>& out) const override {
    if (t.certificate && t.certificate->days_to_expiry < 0)
      out.push_back("the certificate has expired");
  }

  void target_text(const target_result& t, text_sink& s) const override {
    if (!t.certificate) return;
    const auto& c = *t.certificate;
    char days[32];
    std::snprintf(days, sizeof days, "%.0f", std::floor(c.days_to_expiry));
    s.out << "  certificate: " << s.safe(c.subject) << ", issuer " << s.safe(c.issuer) << ", "
          << s.safe(c.key_type) << " " << c.key_bits << " bits, expires in " << days
          << " days, OCSP URL "
          << (c.ocsp_url_present ? s.safe(c.ocsp_urls.front()) : std::string("none")) << "\n";
  }

  // What the server presented reads before what was measured over its connections.
  std::string_view target_text_before() const override { return "ocsp"; }

  void target_json(const target_result& t, nlohmann::json& j) const override {
    if (!t.certificate) {
      j["certificate"] = nullptr;
      return;
    }
    const auto& c = *t.certificate;
    nlohmann::json chain = nlohmann::json::array();
    for (const auto& x : c.chain)
      chain.push_back({{"subject", x.subject},
                       {"issuer", x.issuer},
                       {"serial", x.serial_hex},
                       {"not_after_unix", x.not_after_unix}});
    j["certificate"] = {{"subject", c.subject},
                        {"issuer", c.issuer},
                        {"key_type", c.key_type},
                        {"key_bits", c.key_bits},
                        {"not_after_unix", c.not_after_unix},
                        {"days_to_expiry", c.days_to_expiry},
                        {"ocsp_url_present", c.ocsp_url_present},
                        {"ocsp_urls", c.ocsp_urls},
                        {"dns_names", c.dns_names},
                        {"sha256", c.sha256_hex},
                        {"chain_length", c.chain_length},
                        {"chain", chain}};
  }

  void declare_metrics(metric_set& m) const override {
    m.declare("ngxtls_certificate_not_after_timestamp_seconds",
              "notAfter of each certificate the server sent (position 0: the leaf), seconds "
              "since the epoch; at most " +
                  std::to_string(max_chain_certificates) + " per target",
              "ngxtls_ocsp_stapled_connections");
    m.declare("ngxtls_certificate_chain_certificates", "Certificates the server sent",
              "ngxtls_ocsp_stapled_connections");
  }

  void target_metrics(const target_result& t, const label_set& l, metric_set& m) const override {
    if (!t.certificate) return;
    const auto& c = *t.certificate;
    for (std::size_t i = 0; i < c.chain.size(); ++i) {
      const auto& x = c.chain[i];
      label_set cl = with_label(l, "position", std::to_string(i));
      cl = with_label(std::move(cl), "subject", x.subject);
      cl = with_label(std::move(cl), "issuer", x.issuer);
      cl = with_label(std::move(cl), "serial", x.serial_hex);
      m.add("ngxtls_certificate_not_after_timestamp_seconds", cl,
            static_cast<double>(x.not_after_unix));
    }
    m.add("ngxtls_certificate_chain_certificates", l, c.chain_length);
  }
};

}  // namespace

/// The certificate module (registered in measurements.cpp).
const measurement& certificate_module() {
  static const certificate m;
  return m;
}

}  // namespace ngxtls::probe
