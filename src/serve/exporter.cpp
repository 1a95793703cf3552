#include "serve/exporter.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <variant>

#include "base/error.hpp"
#include "probe/prober.hpp"
#include "probe/target.hpp"
#include "report/probe_output.hpp"
#include "report/terminal_text.hpp"
#include "serve/exposition.hpp"

namespace ngxtls::serve {

namespace {

using clock_type = std::chrono::steady_clock;

// Upper bounds of the probe duration histogram, seconds.
constexpr std::array<double, 10> duration_bounds = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

// A probe that cannot get this long is not started: it could measure nothing.
constexpr int min_probe_ms = 100;

double wall_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// X-Prometheus-Scrape-Timeout-Seconds ("10", "9.5"), in ms; nullopt when absent or malformed.
std::optional<int> scrape_timeout_ms(const std::optional<std::string>& header) {
  if (!header || header->empty() || header->size() > 32) return std::nullopt;
  char* end = nullptr;
  const double s = std::strtod(header->c_str(), &end);
  if (end != header->c_str() + header->size() || !std::isfinite(s) || s <= 0 || s > 3600)
    return std::nullopt;
  return static_cast<int>(s * 1000);
}

// Resident set size of this process, bytes (/proc/self/statm), 0 when unreadable.
double resident_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(f >> pages_total >> pages_resident)) return 0;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// The answer to `debug=true`: what blackbox_exporter's debug page gives, as text: the probe's
// log (what was asked, what was dialled, the probe's report), the metrics the scrape would
// have returned, and the module's settings. The probe's report holds no key material (no
// session, master secret or ticket key, only the public 16-byte ticket key names).
http_answer debug_answer(const probe::target& t, const std::string& module,
                         const probe::probe_options& o, const probe::target_result& result,
                         double duration_seconds, double age_seconds) {
  std::string out = "Logs for the probe:\n";
  out += "module=" + module + " target=" + report::terminal_safe(t.text) + " host=" + t.host +
         " port=" + std::to_string(t.port) + " sni=" + (t.sni.empty() ? "(none)" : t.sni) +
         " dial=" + t.connect_host + ":" + std::to_string(t.connect_port) + "\n";
  if (age_seconds > 0)
    out += "answered from the result measured " + sample_value(age_seconds) +
           " s ago (min_interval_seconds): no new probe ran for this scrape\n";
  out += "probe took " + sample_value(duration_seconds) + " s\n";
  if (result.error) out += "probe failed: " + report::terminal_safe(*result.error) + "\n";
  out += report::probe_text({result});
  out += "\nMetrics that would have been returned:\n";
  out += probe_exposition(result, duration_seconds, age_seconds);
  out += "\nModule configuration:\n";
  out += "attempts: " + std::to_string(o.attempts) +
         "\nper_target: " + std::to_string(o.per_target) +
         "\nprotocols:" + (o.tls13 ? " TLSv1.3" : "") + (o.tls12 ? " TLSv1.2" : "") +
         "\ntimeout_ms: " + std::to_string(o.timeout_ms) +
         "\nfresh_tickets: " + (o.fresh_tickets ? "true" : "false") +
         "\nocsp: " + (o.ocsp ? "true" : "false") + "\nhttp: " + (o.http ? "true" : "false") + "\n";
  return {200, "text/plain; charset=utf-8", std::move(out)};
}

}  // namespace

const char* to_string(reject_reason r) {
  switch (r) {
    case reject_reason::bad_target:
      return "bad_target";
    case reject_reason::unknown_module:
      return "unknown_module";
    case reject_reason::not_allowed:
      return "not_allowed";
    case reject_reason::busy:
      return "busy";
  }
  return "unknown";
}

exporter::exporter(serve_config config, std::function<void(const std::string&)> log)
    : log_(std::move(log)),
      config_(std::make_shared<const serve_config>(std::move(config))),
      duration_buckets_(duration_bounds.size(), 0),
      start_time_(wall_seconds()) {
  if (!log_) log_ = [](const std::string& line) { std::cerr << line << std::endl; };
}

void exporter::reload(serve_config config) {
  std::lock_guard lock(mutex_);
  config_ = std::make_shared<const serve_config>(std::move(config));
  ++generation_;
  // Running entries stay until their probe ends (their requests wait on them).
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->second.running) {
      it->second.last.reset();
      ++it;
    } else {
      it = cache_.erase(it);
    }
  }
  ++reloads_ok_;
}

void exporter::count_reload(bool ok) {
  std::lock_guard lock(mutex_);
  // A successful reload is counted by reload() itself.
  if (!ok) ++reloads_failed_;
}

std::shared_ptr<const serve_config> exporter::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

http_answer exporter::reject(reject_reason why, int status, const std::string& text) {
  {
    std::lock_guard lock(mutex_);
    ++rejected_[why];
  }
  return {status, "text/plain; charset=utf-8", text + "\n"};
}

void exporter::record(const std::string& module, bool ok, double seconds) {
  ++probes_total_[{module, ok}];
  for (std::size_t i = 0; i < duration_bounds.size(); ++i)
    if (seconds <= duration_bounds[i]) ++duration_buckets_[i];
  duration_sum_ += seconds;
  ++duration_count_;
}

void exporter::evict_locked() {
  const auto limit = config_->max_cached_results;
  if (cache_.size() < limit) return;
  // Drop the least recently used results that no probe is writing; a full sweep once the
  // limit is reached keeps this O(n) per eviction round, not per request.
  std::vector<std::pair<clock_type::time_point, std::string>> idle;
  for (const auto& [k, e] : cache_)
    if (!e.running) idle.emplace_back(e.used, k);
  std::sort(idle.begin(), idle.end());
  const std::size_t drop = std::min(idle.size(), cache_.size() - limit + 1 + limit / 10);
  for (std::size_t i = 0; i < drop; ++i) cache_.erase(idle[i].second);
}

namespace {

// Why a request is refused before any probe: the reason counted, the HTTP status, the text.
struct refusal {
  reject_reason why;
  int status;
  std::string text;
};

// The target, sni and connect parameters as text: bounded printable ASCII without spaces, and
// sni a host name.
std::optional<refusal> check_request_text(const probe_request& req) {
  if (req.target.empty())
    return refusal{reject_reason::bad_target, 400, "the target parameter is missing"};
  if (req.target.size() > max_target_bytes)
    return refusal{
        reject_reason::bad_target, 400,
        "the target is longer than the limit of " + std::to_string(max_target_bytes) + " bytes"};
  for (unsigned char c : req.target)
    if (c <= 0x20 || c >= 0x7f)
      return refusal{reject_reason::bad_target, 400,
                     "the target contains a space, a control character or a non-ASCII byte"};
  // Per-scrape choices: printable ASCII without spaces, bounded as the target is.
  for (const auto& [name, value] :
       {std::pair{"sni", &req.sni}, std::pair{"connect", &req.connect}}) {
    if (!*value) continue;
    const std::string& v = **value;
    bool printable = !v.empty() && v.size() <= max_target_bytes;
    for (unsigned char c : v) printable = printable && c > 0x20 && c < 0x7f;
    if (!printable)
      return refusal{reject_reason::bad_target, 400,
                     std::string(name) + " must be 1 to " + std::to_string(max_target_bytes) +
                         " printable bytes without spaces"};
  }
  if (req.sni) {
    // A host name (RFC 6066: no IP literal, no trailing dot once canonical): letters, digits,
    // hyphens, dots and the underscores some internal names carry, at most 253 bytes.
    const std::string n = canonical_host(*req.sni);
    bool name = !n.empty() && n.size() <= 253 && !probe::is_ip_literal(n);
    for (unsigned char c : n) name = name && (std::isalnum(c) || c == '-' || c == '.' || c == '_');
    if (!name)
      return refusal{reject_reason::bad_target, 400,
                     "sni must be a host name (letters, digits, '-', '.', '_'; no IP address)"};
  }
  return std::nullopt;
}

// `protocol=` narrows the module's protocols to one it probes.
std::optional<refusal> choose_protocol(const probe_request& req, const std::string& module_name,
                                       probe::probe_options& options) {
  if (!req.protocol) return std::nullopt;
  const bool t12 = *req.protocol == "tls1.2", t13 = *req.protocol == "tls1.3";
  if (!t12 && !t13)
    return refusal{reject_reason::bad_target, 400, "protocol must be tls1.2 or tls1.3"};
  if ((t12 && !options.tls12) || (t13 && !options.tls13))
    return refusal{
        reject_reason::bad_target, 400,
        "module \"" + module_name + "\" does not probe " + (t12 ? "TLS 1.2" : "TLS 1.3")};
  options.tls12 = t12;
  options.tls13 = t13;
  return std::nullopt;
}

// The endpoint to probe: parsed, every spelling of one endpoint made one (cache, one probe at a
// time, allow list), and inside the allow list.
std::variant<probe::target, refusal> endpoint_of(const probe_request& req, const probe_module& mod,
                                                 const serve_config& cfg) {
  probe::target target;
  try {
    target = probe::parse_target(req.target, req.sni ? req.sni : mod.sni,
                                 req.connect ? req.connect : mod.connect);
  } catch (const std::exception& e) {
    return refusal{reject_reason::bad_target, 400, std::string("malformed target: ") + e.what()};
  }
  // Every spelling of one endpoint is one endpoint (cache, one probe at a time, allow list).
  const bool dial_self = target.connect_host == target.host;
  target.host = canonical_host(target.host);
  target.connect_host = dial_self ? target.host : canonical_host(target.connect_host);
  if (!target.sni.empty()) target.sni = canonical_host(target.sni);
  // A name with an empty label ("localhost..") is no host name; canonical_host drops one
  // trailing dot, and the allow list must not match a name that is then dialled as another.
  for (const std::string* h : {&target.host, &target.connect_host, &target.sni})
    if (!h->empty() && h->find(':') == std::string::npos &&
        (h->front() == '.' || h->back() == '.' || h->find("..") != std::string::npos))
      return refusal{reject_reason::bad_target, 400,
                     "\"" + *h + "\" is not a host name: it has an empty label"};
  if (!allowed(cfg.allow, target.host, target.port))
    return refusal{reject_reason::not_allowed, 403,
                   "target \"" + req.target + "\" is not in the allow list of " +
                       (cfg.path.empty() ? std::string("the configuration") : cfg.path)};
  if (req.connect && !allowed(cfg.allow, target.connect_host, target.connect_port))
    return refusal{reject_reason::not_allowed, 403,
                   "connect \"" + *req.connect + "\" is not in the allow list of " +
                       (cfg.path.empty() ? std::string("the configuration") : cfg.path)};
  return target;
}

}  // namespace

http_answer exporter::probe(const probe_request& req) {
  const auto received = req.received.value_or(clock_type::now());
  const auto cfg = config();
  const std::string module_name = req.module.empty() ? "default" : req.module;
  const auto mod = cfg->modules.find(module_name);
  if (mod == cfg->modules.end())
    return reject(reject_reason::unknown_module, 400,
                  "unknown module \"" + report::terminal_safe(module_name.substr(0, 64)) + "\"");
  probe::probe_options options = mod->second.options;
  std::optional<refusal> refused = check_request_text(req);
  if (!refused) refused = choose_protocol(req, module_name, options);
  if (refused) return reject(refused->why, refused->status, refused->text);
  auto endpoint = endpoint_of(req, mod->second, *cfg);
  if (auto* r = std::get_if<refusal>(&endpoint)) return reject(r->why, r->status, r->text);
  const probe::target target = std::get<probe::target>(std::move(endpoint));

  const int timeout_ms =
      scrape_timeout_ms(req.scrape_timeout_header).value_or(cfg->default_scrape_timeout_ms);
  const auto deadline =
      received + std::chrono::milliseconds(std::max(0, timeout_ms - cfg->scrape_timeout_margin_ms));
  const std::string dialled = target.connect_host + '\n' + std::to_string(target.connect_port);
  const std::string key = module_name + '\n' + target.host + '\n' + std::to_string(target.port) +
                          '\n' + target.sni + '\n' + dialled + '\n' + req.protocol.value_or("");
  // One probe at a time per endpoint dialled, whatever the module.
  const std::string& target_key = dialled;
  const auto min_interval = std::chrono::seconds(cfg->min_interval_seconds);

  auto from_cache = [&](const stored& s, clock_type::time_point now) {
    const double age = std::chrono::duration<double>(now - s.finished).count();
    if (req.debug)
      return debug_answer(target, module_name, options, s.result, s.duration_seconds, age);
    return http_answer{200, exposition_content_type,
                       probe_exposition(s.result, s.duration_seconds, age)};
  };

  std::unique_lock lock(mutex_);
  const std::uint64_t generation = generation_;
  // A fresh enough result, or one that a probe running for another request brings in time.
  for (;;) {
    auto it = cache_.find(key);
    const auto now = clock_type::now();
    if (it != cache_.end() && it->second.last && now - it->second.last->finished < min_interval) {
      it->second.used = now;
      ++cache_hits_;
      auto s = it->second.last;
      lock.unlock();
      return from_cache(*s, now);
    }
    if (it == cache_.end() || !it->second.running) break;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      ++rejected_[reject_reason::busy];
      return {503, "text/plain; charset=utf-8",
              "a probe of this target is still running and did not finish before the scrape's "
              "deadline\n"};
    }
  }
  evict_locked();
  auto& mine = cache_[key];
  mine.running = true;
  mine.used = clock_type::now();
  // One probe per target (whatever the module) and at most max_probes_in_flight at once.
  const bool got =
      changed_.wait_until(lock, deadline - std::chrono::milliseconds(min_probe_ms), [&] {
        return running_targets_.count(target_key) == 0 && in_flight_ < cfg->max_probes_in_flight;
      });
  if (!got) {
    cache_[key].running = false;
    ++rejected_[reject_reason::busy];
    changed_.notify_all();
    return {503, "text/plain; charset=utf-8",
            "no probe could start before the scrape's deadline (max_probes_in_flight probes "
            "running, or this target busy)\n"};
  }
  running_targets_.insert(target_key);
  ++in_flight_;
  lock.unlock();

  probe::probe_options o = options;
  const auto start = clock_type::now();
  const int budget_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start).count());
  o.total_timeout_ms = std::max(1, budget_ms);
  o.timeout_ms = std::max(1, std::min(o.timeout_ms, o.total_timeout_ms));
  o.parallel = 1;
  o.on_progress = nullptr;
  o.sess_in.reset();
  o.sess_out.reset();
  auto s = std::make_shared<stored>();
  try {
    s->result = probe::run_probe({target}, o).at(0);
  } catch (const std::exception& e) {
    s->result.target = req.target;
    s->result.error = e.what();
  }
  s->finished = clock_type::now();
  s->duration_seconds = std::chrono::duration<double>(s->finished - start).count();
  const bool ok = !s->result.error;
  if (!ok)
    log_("ngxtls serve: probe failed: target=\"" + report::terminal_safe(req.target) +
         "\" module=\"" + module_name + "\": " + report::terminal_safe(*s->result.error));

  lock.lock();
  running_targets_.erase(target_key);
  --in_flight_;
  record(module_name, ok, s->duration_seconds);
  auto& e = cache_[key];
  e.running = false;
  e.used = s->finished;
  if (generation == generation_) e.last = s;
  changed_.notify_all();
  lock.unlock();
  if (req.debug)
    return debug_answer(target, module_name, options, s->result, s->duration_seconds, 0);
  return {200, exposition_content_type, probe_exposition(s->result, s->duration_seconds, 0)};
}

std::string exporter::metrics() const {
  metric_family probes("ngxtls_serve_probes_total", metric_type::counter,
                       "Probes run, by module and result (success: the target was probed to "
                       "the end)");
  metric_family duration("ngxtls_serve_probe_duration_seconds", metric_type::histogram,
                         "Time the probes took, seconds");
  metric_family in_flight("ngxtls_serve_probes_in_flight", metric_type::gauge,
                          "Probes running now");
  metric_family hits("ngxtls_serve_cache_hits_total", metric_type::counter,
                     "Scrapes answered with a result measured within min_interval_seconds "
                     "(or by a probe another scrape had started)");
  metric_family entries("ngxtls_serve_cached_results", metric_type::gauge,
                        "Results kept (bounded by max_cached_results)");
  metric_family rejected("ngxtls_serve_requests_rejected_total", metric_type::counter,
                         "/probe requests answered with an error status, by reason");
  metric_family reloads("ngxtls_serve_config_reloads_total", metric_type::counter,
                        "Configuration reloads (SIGHUP), by result");
  metric_family rss("process_resident_memory_bytes", metric_type::gauge,
                    "Resident memory size in bytes");
  metric_family started("process_start_time_seconds", metric_type::gauge,
                        "Start time of the process since unix epoch in seconds");
  metric_family build("ngxtls_build_info", metric_type::gauge, report::build_info_help);
  std::lock_guard lock(mutex_);
  for (const auto& m : config_->modules)
    for (bool ok : {true, false}) {
      auto it = probes_total_.find({m.first, ok});
      probes.add({{"module", m.first}, {"result", ok ? "success" : "failure"}},
                 it == probes_total_.end() ? 0 : static_cast<double>(it->second));
    }
  // record() counts a probe in every bucket it fits: the counts are already cumulative.
  for (std::size_t i = 0; i < duration_bounds.size(); ++i)
    duration.add({{"le", sample_value(duration_bounds[i])}},
                 static_cast<double>(duration_buckets_[i]), "_bucket");
  duration.add({{"le", "+Inf"}}, static_cast<double>(duration_count_), "_bucket");
  duration.add({}, duration_sum_, "_sum");
  duration.add({}, static_cast<double>(duration_count_), "_count");
  in_flight.add({}, in_flight_);
  hits.add({}, static_cast<double>(cache_hits_));
  entries.add({}, static_cast<double>(cache_.size()));
  for (auto r : {reject_reason::bad_target, reject_reason::unknown_module,
                 reject_reason::not_allowed, reject_reason::busy}) {
    auto it = rejected_.find(r);
    rejected.add({{"reason", to_string(r)}},
                 it == rejected_.end() ? 0 : static_cast<double>(it->second));
  }
  reloads.add({{"result", "success"}}, static_cast<double>(reloads_ok_));
  reloads.add({{"result", "failure"}}, static_cast<double>(reloads_failed_));
  rss.add({}, resident_bytes());
  started.add({}, start_time_);
  build.add(report::build_info_labels(), 1);
  std::string out;
  for (const auto* f : {&probes, &duration, &in_flight, &hits, &entries, &rejected, &reloads, &rss,
                        &started, &build})
    f->write(out);
  return out;
}

}  // namespace ngxtls::serve
