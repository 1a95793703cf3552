#include "serve/http_server.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <charconv>
#include <mutex>

#include "base/error.hpp"
#include "serve/exposition.hpp"
#include "tls/errors.hpp"
#include "tls/file_read.hpp"

namespace ngxtls::serve {

namespace {

constexpr const char* index_page = R"(<!DOCTYPE html>
<html><head><title>ngxtls exporter</title></head>
<body><h1>ngxtls exporter</h1>
<p>Probes TLS session resumption, ticket keys, OCSP staples and certificates of one target per
scrape (the multi-target pattern).</p>
<ul>
<li><a href="/probe?target=example.com:443&amp;module=default">/probe?target=HOST[:PORT]&amp;module=NAME</a></li>
<li><a href="/metrics">/metrics</a>: the exporter's own metrics</li>
<li><a href="/-/healthy">/-/healthy</a></li>
</ul></body></html>
)";

// The most bytes of a request body accepted (the exporter's endpoints take none).
constexpr std::size_t max_body_bytes = 8192;

}  // namespace

listen_address parse_listen_address(const std::string& text) {
  listen_address a;
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw usage_error("--listen: an IPv6 address is written [ADDRESS]:PORT, not \"" + text +
                        "\"");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    in6_addr v6{};
    if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1)
      throw usage_error("--listen: \"" + host + "\" is not an IPv6 address");
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos)
      throw usage_error("--listen: expected ADDRESS:PORT (e.g. 127.0.0.1:10924), not \"" + text +
                        "\"");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    in_addr v4{};
    if (::inet_pton(AF_INET, host.c_str(), &v4) != 1)
      throw usage_error("--listen: \"" + host +
                        "\" is not an IPv4 address (IPv6 is written [ADDRESS]:PORT)");
  }
  int p = -1;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || end != port.data() + port.size() || p < 0 || p > 65535)
    throw usage_error("--listen: the port must be a number from 0 to 65535, not \"" + port + "\"");
  a.host = host;
  a.port = p;
  return a;
}

struct http_server::impl {
  exporter& core;
  std::unique_ptr<httplib::Server> server;
  std::mutex auth_mutex;
  std::shared_ptr<basic_auth> auth;

  explicit impl(exporter& c) : core(c) {}

  std::shared_ptr<basic_auth> current_auth() {
    std::lock_guard lock(auth_mutex);
    return auth;
  }
};

namespace {

// An encrypted key would make OpenSSL's default callback prompt on the terminal (a hang
// under a service manager): the passphrase is refused, so the load fails with a message.
int refuse_passphrase(char*, int, int, void*) {
  return -1;
}

// The exporter's own certificate chain and key, read as every TLS file the tool reads: a
// regular file, bounded, opened without blocking (a FIFO at the path would block open() for
// good). "" when both are in `ctx`, else why not (the key's path may be printed, never its bytes).
std::string load_certificate_and_key(SSL_CTX& ctx, const web_config& w) {
  std::string pem;
  try {
    pem = tls::read_file_bounded(*w.cert_file);
  } catch (const tls::file_error& e) {
    return "cannot read the certificate chain " + *w.cert_file + ": " + e.reason();
  }
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return "out of memory reading " + *w.cert_file;
  X509* leaf = PEM_read_bio_X509_AUX(bio, nullptr, nullptr, nullptr);
  bool ok = leaf != nullptr && SSL_CTX_use_certificate(&ctx, leaf) == 1;
  X509_free(leaf);
  while (ok) {
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (!ca) break;
    if (SSL_CTX_add0_chain_cert(&ctx, ca) != 1) {
      X509_free(ca);
      ok = false;
    }
  }
  BIO_free(bio);
  ERR_clear_error();
  if (!ok) return "no PEM certificate chain in " + *w.cert_file;

  try {
    pem = tls::read_file_bounded(*w.key_file);
  } catch (const tls::file_error& e) {
    return "cannot read the private key " + *w.key_file + ": " + e.reason();
  }
  bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, refuse_passphrase, nullptr) : nullptr;
  BIO_free(bio);
  OPENSSL_cleanse(pem.data(), pem.size());
  ERR_clear_error();
  if (!key)
    return "cannot load the private key from " + *w.key_file +
           " (not a PEM key, or an encrypted one: ngxtls serve takes an unencrypted key)";
  ok = SSL_CTX_use_PrivateKey(&ctx, key) == 1;
  EVP_PKEY_free(key);
  if (!ok || SSL_CTX_check_private_key(&ctx) != 1) {
    ERR_clear_error();
    return "the private key in " + *w.key_file + " does not match the certificate in " +
           *w.cert_file;
  }
  return {};
}

}  // namespace

http_server::http_server(exporter& core, const std::optional<web_config>& web)
    : impl_(std::make_unique<impl>(core)) {
  impl_->auth = std::make_shared<basic_auth>(web ? web->basic_auth_users
                                                 : std::map<std::string, std::string>{});
  if (web && web->cert_file) {
    std::string why;
    const web_config& w = *web;
    auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
      why = load_certificate_and_key(ctx, w);
      if (!why.empty()) return false;
      SSL_CTX_set_min_proto_version(&ctx,
                                    w.min_version == "TLS13" ? TLS1_3_VERSION : TLS1_2_VERSION);
      return true;
    });
    ERR_clear_error();
    if (!server->is_valid())
      throw input_error({w.path, 0, 0}, why.empty() ? "cannot set up TLS" : why);
    impl_->server = std::move(server);
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  auto& svr = *impl_->server;
  const auto cfg = core.config();
  const int threads = cfg->http_threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  const auto read_timeout = std::chrono::milliseconds(cfg->http_read_timeout_ms);
  svr.set_read_timeout(read_timeout);
  svr.set_write_timeout(read_timeout);
  svr.set_keep_alive_timeout(std::max<time_t>(1, cfg->http_read_timeout_ms / 1000));
  svr.set_payload_max_length(max_body_bytes);

  impl* self = impl_.get();
  svr.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) {
    const auto auth = self->current_auth();
    if (auth->disabled() || auth->check(req.get_header_value("Authorization")))
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_header("WWW-Authenticate", "Basic realm=\"ngxtls\"");
    res.set_content("Unauthorized\n", "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Get("/probe", [self](const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value_count("target") > 1 || req.get_param_value_count("module") > 1) {
      res.status = 400;
      res.set_content("target and module may be given once each\n", "text/plain; charset=utf-8");
      return;
    }
    probe_request p;
    p.target = req.get_param_value("target");
    p.module = req.get_param_value("module");
    if (req.has_header("X-Prometheus-Scrape-Timeout-Seconds"))
      p.scrape_timeout_header = req.get_header_value("X-Prometheus-Scrape-Timeout-Seconds");
    auto answer = self->core.probe(p);
    res.status = answer.status;
    res.set_content(answer.body, answer.content_type.c_str());
  });
  svr.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->core.metrics(), exposition_content_type);
  });
  svr.Get("/-/healthy", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("Healthy\n", "text/plain; charset=utf-8");
  });
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(index_page, "text/html; charset=utf-8");
  });
}

http_server::~http_server() = default;

int http_server::bind(const listen_address& where) {
  auto& svr = *impl_->server;
  if (where.port == 0) {
    const int port = svr.bind_to_any_port(where.host);
    if (port <= 0) throw usage_error("cannot listen on " + where.host + " (any port)");
    return port;
  }
  if (!svr.bind_to_port(where.host, where.port))
    throw usage_error("cannot listen on " + where.host + ":" + std::to_string(where.port) +
                      " (in use, or not an address of this host)");
  return where.port;
}

void http_server::run() {
  impl_->server->listen_after_bind();
}

void http_server::stop() {
  impl_->server->stop();
}

void http_server::set_users(std::map<std::string, std::string> users) {
  auto fresh = std::make_shared<basic_auth>(std::move(users));
  std::lock_guard lock(impl_->auth_mutex);
  impl_->auth = std::move(fresh);
}

}  // namespace ngxtls::serve
