#include "serve/http_server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "report/terminal_text.hpp"
#include "serve/exposition.hpp"
#include "serve/front.hpp"
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

constexpr const char* text_plain = "text/plain; charset=utf-8";

// How long stop() waits for answers that workers finished to be sent before closing.
constexpr auto answer_grace = std::chrono::seconds(2);

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

namespace {

// An encrypted key would make OpenSSL's default callback prompt on the terminal (a hang
// under a service manager): the passphrase is refused, so the load fails with a message.
int refuse_passphrase(char*, int, int, void*) {
  return -1;
}

// The exporter's own certificate chain and key, read as every TLS file the tool reads: a
// regular file, bounded, opened without blocking (a FIFO at the path would block open() for
// good). OpenSSL checks them (PEM, no passphrase, the key matches the certificate) so that the
// errors name the problem, and then serves with them (the front terminates TLS).
// "" when both are in `ctx`, else why not (the key's path may be printed, never its bytes).
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

bool is_loopback_address(const std::string& host) {
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z reaches the IPv4 loopback.
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

namespace {

using clock_type = std::chrono::steady_clock;

// An answer: status, Content-Type, body and extra header fields.
struct reply {
  int status = 200;
  std::string content_type = text_plain;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

reply plain(int status, std::string text) {
  return {status, text_plain, std::move(text), {}};
}

// What one request asked, copied out of libmicrohttpd while the request is being handled (the
// strings it hands the access handler live only as long as the request), and its answer once a
// worker has made it.
struct request_state {
  std::string method, path;
  // Query arguments in order, percent-decoded, NUL bytes kept; nullopt for `?key` without `=`.
  std::vector<std::pair<std::string, std::optional<std::string>>> args;
  std::optional<std::string> authorization, scrape_timeout;
  clock_type::time_point received;
  bool dispatched = false;      // answered, or handed to a worker
  std::optional<reply> answer;  // set by the worker before the connection is resumed
};

// A fixed pool of worker threads that can grow and shrink (http_threads on reload).
class worker_pool {
 public:
  ~worker_pool() { stop(); }

  void resize(int n) {
    std::lock_guard lock(mutex_);
    wanted_ = std::max(1, n);
    for (int i = 0; i < wanted_; ++i) {
      if (i < static_cast<int>(slots_.size()) && !slots_[i]->exited) continue;
      if (i >= static_cast<int>(slots_.size())) slots_.push_back(std::make_unique<slot>());
      auto& s = *slots_[i];
      if (s.thread.joinable()) s.thread.join();  // it has left: its loop returned
      s.exited = false;
      s.thread = std::thread([this, i] { loop(i); });
    }
    changed_.notify_all();
  }

  // Queues `job`; once the pool is stopping, runs it here (it must then be quick).
  void post(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      if (!stopping_) {
        jobs_.push_back(std::move(job));
        changed_.notify_one();
        return;
      }
    }
    job();
  }

  // Runs every job queued, then ends the threads.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      changed_.notify_all();
    }
    for (auto& s : slots_)
      if (s->thread.joinable()) s->thread.join();
  }

 private:
  struct slot {
    std::thread thread;
    bool exited = false;
  };

  void loop(int index) {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || index >= wanted_ || !jobs_.empty(); });
      // A worker beyond the wanted count leaves; the others take the queue.
      if ((index >= wanted_ && index > 0) || (jobs_.empty() && stopping_)) {
        slots_[index]->exited = true;
        return;
      }
      if (jobs_.empty()) continue;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::unique_ptr<slot>> slots_;
  int wanted_ = 0;
  bool stopping_ = false;
};

MHD_Result queue_reply(MHD_Connection* c, const reply& r) {
  MHD_Response* resp = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [k, v] : r.headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  const MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(r.status), resp);
  MHD_destroy_response(resp);
  return ok;
}

MHD_Result collect_arg(void* cls, MHD_ValueKind, const char* key, size_t key_size,
                       const char* value, size_t value_size) {
  auto& st = *static_cast<request_state*>(cls);
  st.args.emplace_back(
      std::string(key, key_size),
      value ? std::optional<std::string>(std::string(value, value_size)) : std::nullopt);
  return MHD_YES;
}

// What the header fields say about their own form, gathered in one pass.
struct header_scan {
  bool bad_name = false;  // a field name with a byte that is not a token character
  int content_lengths = 0;
};

bool token_char(unsigned char c) {
  return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

MHD_Result scan_header(void* cls, MHD_ValueKind, const char* key, size_t key_size, const char*,
                       size_t) {
  auto& scan = *static_cast<header_scan*>(cls);
  if (key_size == 0) scan.bad_name = true;
  for (size_t i = 0; i < key_size; ++i)
    if (!token_char(static_cast<unsigned char>(key[i]))) scan.bad_name = true;
  if (key_size == 14 && strncasecmp(key, "content-length", 14) == 0) ++scan.content_lengths;
  return MHD_YES;
}

std::optional<std::string> header_value(MHD_Connection* c, const char* name) {
  const char* v = nullptr;
  size_t n = 0;
  if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, name, std::strlen(name), &v, &n) !=
          MHD_YES ||
      v == nullptr)
    return std::nullopt;
  return std::string(v, n);
}

// libmicrohttpd's own messages (a client that broke the protocol, a closed socket) would let
// any client write to the exporter's stderr: they are dropped; answers say what went wrong.
void drop_log(void*, const char*, va_list) {}

}  // namespace

struct http_server::impl {
  exporter& core;
  std::mutex auth_mutex;
  std::shared_ptr<basic_auth> auth;
  SSL_CTX* tls = nullptr;  // the front's TLS server context; null for plain HTTP
  int listen_fd = -1;
  MHD_Daemon* daemon = nullptr;
  std::unique_ptr<front> relay;
  worker_pool workers;
  std::atomic<int> read_timeout_ms{5000}, header_timeout_ms{10000};
  std::atomic<bool> stopping{false};
  std::atomic<int> open_requests{0};
  std::mutex run_mutex;
  std::condition_variable run_changed;
  bool stop_requested = false;

  explicit impl(exporter& c) : core(c) {}

  ~impl() {
    relay.reset();
    if (daemon) MHD_stop_daemon(daemon);
    if (listen_fd >= 0) ::close(listen_fd);
    if (tls) SSL_CTX_free(tls);
  }

  std::shared_ptr<basic_auth> current_auth() {
    std::lock_guard lock(auth_mutex);
    return auth;
  }

  reply probe(const request_state& r);
  reply route(const request_state& r);

  static MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method,
                               const char* version, const char* upload_data,
                               size_t* upload_data_size, void** con_cls);
  static void on_completed(void* cls, MHD_Connection* c, void** con_cls,
                           MHD_RequestTerminationCode why);
};

namespace {

// The query parameters /probe takes; any other is refused so that a typo is not silently a
// different probe.
constexpr std::array<const char*, 6> probe_parameters = {"target",  "module",   "sni",
                                                         "connect", "protocol", "debug"};

}  // namespace

reply http_server::impl::probe(const request_state& r) {
  std::map<std::string, std::string> given;
  for (const auto& [k, v] : r.args) {
    if (std::find_if(probe_parameters.begin(), probe_parameters.end(),
                     [&](const char* p) { return k == p; }) == probe_parameters.end())
      return plain(400, "unknown parameter \"" + report::terminal_safe(k.substr(0, 64)) +
                            "\" (/probe takes target, module, sni, connect, protocol and debug)\n");
    if (given.count(k)) return plain(400, "the parameter \"" + k + "\" is given more than once\n");
    given[k] = v.value_or("");
  }
  probe_request p;
  p.target = given["target"];
  p.module = given["module"];
  if (given.count("sni")) p.sni = given["sni"];
  if (given.count("connect")) p.connect = given["connect"];
  if (given.count("protocol")) p.protocol = given["protocol"];
  if (given.count("debug")) {
    const auto& d = given["debug"];
    if (d != "true" && d != "false") return plain(400, "debug must be true or false\n");
    p.debug = d == "true";
  }
  p.scrape_timeout_header = r.scrape_timeout;
  p.received = r.received;
  auto answer = core.probe(p);
  return {answer.status, answer.content_type, std::move(answer.body), {}};
}

reply http_server::impl::route(const request_state& r) {
  const auto a = current_auth();
  if (!a->disabled() && !a->check(r.authorization.value_or(""))) {
    auto out = plain(401, "Unauthorized\n");
    out.headers.emplace_back("WWW-Authenticate", "Basic realm=\"ngxtls\"");
    return out;
  }
  if (r.path == "/probe") return probe(r);
  if (r.path == "/metrics") return {200, exposition_content_type, core.metrics(), {}};
  if (r.path == "/-/healthy") return plain(200, "Healthy\n");
  if (r.path == "/") return {200, "text/html; charset=utf-8", index_page, {}};
  return plain(404, "Not Found\n");
}

MHD_Result http_server::impl::on_request(void* cls, MHD_Connection* c, const char* url,
                                         const char* method, const char*, const char*,
                                         size_t* upload_data_size, void** con_cls) {
  auto* self = static_cast<impl*>(cls);
  auto* st = static_cast<request_state*>(*con_cls);
  if (st == nullptr) {
    // The header has been read; no byte of a body yet.
    st = new request_state;
    *con_cls = st;
    ++self->open_requests;
    st->received = clock_type::now();
    st->method = method;
    st->path = url;
    // A field name with a space or control byte ("Transfer-Encoding : chunked") or two
    // Content-Length fields is how requests are smuggled past a proxy: refused (RFC 9112
    // section 5.1 and 6.3), and the connection closed.
    header_scan scan;
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, scan_header, &scan);
    if (scan.bad_name || scan.content_lengths > 1) {
      auto out = plain(400, scan.bad_name ? "a header field name that is not a token\n"
                                          : "more than one Content-Length\n");
      out.headers.emplace_back(MHD_HTTP_HEADER_CONNECTION, "close");
      return queue_reply(c, out);
    }
    const auto length = header_value(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (header_value(c, MHD_HTTP_HEADER_TRANSFER_ENCODING) || (length && *length != "0")) {
      // No endpoint takes a body: it is refused before it is read (an answer queued now makes
      // libmicrohttpd skip the body and close the connection after the answer, so the body is
      // never parsed as a next request).
      auto out = plain(413, "the exporter's endpoints take no request body\n");
      out.headers.emplace_back(MHD_HTTP_HEADER_CONNECTION, "close");
      return queue_reply(c, out);
    }
    MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, collect_arg, st);
    st->authorization = header_value(c, MHD_HTTP_HEADER_AUTHORIZATION);
    st->scrape_timeout = header_value(c, "X-Prometheus-Scrape-Timeout-Seconds");
    // Answered on the next call, once the request is complete: an answer queued before that
    // would end the connection's keep-alive (and a pipelined request behind it).
    return MHD_YES;
  }
  // A body is never read (refused above): nothing arrives here but the end of the request and
  // the call after a worker resumed the connection.
  *upload_data_size = 0;
  if (st->answer) return queue_reply(c, *st->answer);
  if (st->dispatched) return MHD_YES;
  st->dispatched = true;
  if (st->method != "GET" && st->method != "HEAD") {
    auto out = plain(405, "only GET and HEAD are served\n");
    out.headers.emplace_back(MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    return queue_reply(c, out);
  }
  // Cheap answers come from this thread; a probe or a bcrypt check goes to a worker while the
  // connection is suspended, so that no client can hold the polling thread.
  const auto a = self->current_auth();
  const bool cheap = st->path != "/probe" &&
                     (a->disabled() || (st->authorization && a->remembered(*st->authorization)));
  if (cheap) return queue_reply(c, self->route(*st));
  MHD_suspend_connection(c);
  self->workers.post([self, c, st] {
    st->answer = self->stopping ? plain(503, "the exporter is stopping\n") : self->route(*st);
    MHD_resume_connection(c);
  });
  return MHD_YES;
}

void http_server::impl::on_completed(void* cls, MHD_Connection*, void** con_cls,
                                     MHD_RequestTerminationCode) {
  auto* st = static_cast<request_state*>(*con_cls);
  if (!st) return;
  delete st;
  *con_cls = nullptr;
  --static_cast<impl*>(cls)->open_requests;
}

http_server::http_server(exporter& core, const std::optional<web_config>& web)
    : impl_(std::make_unique<impl>(core)) {
  if (!MHD_is_feature_supported(MHD_FEATURE_EPOLL) ||
      !MHD_is_feature_supported(MHD_FEATURE_THREADS))
    throw input_error({"libmicrohttpd", 0, 0}, "this libmicrohttpd lacks epoll or threads");

  impl_->auth = std::make_shared<basic_auth>(web ? web->basic_auth_users
                                                 : std::map<std::string, std::string>{});
  if (web && web->cert_file) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) throw input_error({web->path, 0, 0}, "cannot set up TLS");
    const std::string why = load_certificate_and_key(*ctx, *web);
    ERR_clear_error();
    if (!why.empty()) {
      SSL_CTX_free(ctx);
      throw input_error({web->path, 0, 0}, why);
    }
    SSL_CTX_set_min_proto_version(ctx,
                                  web->min_version == "TLS13" ? TLS1_3_VERSION : TLS1_2_VERSION);
    // A client may not make the server renegotiate (a CPU cost it could repeat at will).
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    impl_->tls = ctx;
  }
  apply(*core.config());
}

http_server::~http_server() = default;

int http_server::bind(const listen_address& where) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const bool v6 = where.host.find(':') != std::string::npos;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<std::uint16_t>(where.port));
    ::inet_pton(AF_INET6, where.host.c_str(), &a->sin6_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<std::uint16_t>(where.port));
    ::inet_pton(AF_INET, where.host.c_str(), &a->sin_addr);
    len = sizeof *a;
  }
  const std::string shown =
      where.port == 0 ? where.host + " (any port)" : where.host + ":" + std::to_string(where.port);
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw usage_error("cannot listen on " + shown + ": " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (v6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 511) != 0) {
    const int e = errno;
    ::close(fd);
    throw usage_error("cannot listen on " + shown + " (" + std::strerror(e) +
                      ": in use, or not an address of this host)");
  }
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const int port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  impl_->listen_fd = fd;

  // Each client connection takes three descriptors here (its socket and both ends of the pair
  // to the daemon): the soft limit is raised towards the hard one if it is lower than that.
  rlimit files{};
  const rlim_t wanted = 3 * max_http_connections + 256;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < wanted) {
    files.rlim_cur = std::min(wanted, files.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }

  // The daemon listens on nothing: the front hands it each checked connection (plain HTTP over
  // a socket pair, TLS already taken off) and it answers what it is given.
  const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
  impl* self = impl_.get();
  std::vector<MHD_OptionItem> options = {
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(max_http_connections + 16), nullptr},
      // The head of a checked request (at most max_request_head_bytes) and the answer's header.
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(2 * max_request_head_bytes),
       nullptr},
      // Timeouts are the front's: it closes the pair when the client goes.
      {MHD_OPTION_CONNECTION_TIMEOUT, 0, nullptr},
      {MHD_OPTION_STRICT_FOR_CLIENT, 1, nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&impl::on_completed), self},
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&drop_log), nullptr},
      {MHD_OPTION_END, 0, nullptr},
  };
  impl_->daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &impl::on_request, self,
                                   MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
  if (!impl_->daemon) {
    ::close(fd);
    impl_->listen_fd = -1;
    throw usage_error("cannot serve on " + shown + " (libmicrohttpd did not start)");
  }
  MHD_Daemon* daemon = impl_->daemon;
  impl_->relay = std::make_unique<front>(
      fd, impl_->tls, [daemon](int pair_fd, const sockaddr* peer, socklen_t peer_len) {
        return MHD_add_connection(daemon, pair_fd, peer, peer_len) == MHD_YES;
      });
  impl_->relay->idle_timeout_ms = impl_->read_timeout_ms.load();
  impl_->relay->header_timeout_ms = impl_->header_timeout_ms.load();
  impl_->relay->start();
  return port;
}

void http_server::run() {
  {
    std::unique_lock lock(impl_->run_mutex);
    impl_->run_changed.wait(lock, [&] { return impl_->stop_requested; });
  }
  if (!impl_->daemon) return;
  // No new connections; requests being served are answered (a worker's probe ends within its
  // scrape's deadline), queued ones get 503; then the answers get a moment to be sent.
  impl_->relay->stop_accepting();
  impl_->stopping = true;
  impl_->workers.stop();
  const auto until = clock_type::now() + answer_grace;
  while (impl_->open_requests > 0 && clock_type::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The front passes the last answers on (it counts what it is sending every 50 ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  while (impl_->relay->answering() && clock_type::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  impl_->relay->stop();
  MHD_stop_daemon(impl_->daemon);
  impl_->daemon = nullptr;
  ::close(impl_->listen_fd);
  impl_->listen_fd = -1;
}

void http_server::stop() {
  std::lock_guard lock(impl_->run_mutex);
  impl_->stop_requested = true;
  impl_->run_changed.notify_all();
}

void http_server::set_users(std::map<std::string, std::string> users) {
  auto fresh = std::make_shared<basic_auth>(std::move(users));
  std::lock_guard lock(impl_->auth_mutex);
  impl_->auth = std::move(fresh);
}

void http_server::apply(const serve_config& config) {
  impl_->read_timeout_ms = config.http_read_timeout_ms;
  impl_->header_timeout_ms = config.http_header_timeout_ms;
  if (impl_->relay) {
    impl_->relay->idle_timeout_ms = config.http_read_timeout_ms;
    impl_->relay->header_timeout_ms = config.http_header_timeout_ms;
  }
  impl_->workers.resize(config.http_threads);
}

}  // namespace ngxtls::serve
