// Phase 5 of sandbox::generate(): the sandbox config rendered from the plan and tested with
// `nginx -t` until it passes, each [emerg] blamed on what can be left out.

#include <algorithm>
#include <fstream>
#include <sstream>

#include "sandbox/sandbox_plan.hpp"

namespace ngxtls::sandbox {

namespace {

// nginx -t's first [emerg] line of `err`, or null.
std::optional<config::nginx_log_line> first_emerg(const std::string& err) {
  for (auto& l : config::parse_nginx_log_lines(err))
    if (l.level == "emerg") return std::move(l);
  return std::nullopt;
}

}  // namespace

std::string message_in_sandbox_config(const config::nginx_log_line& l, const std::string& conf_path,
                                      int& line) {
  line = 0;
  if (l.file != conf_path) return config::message_with_place(l);
  line = static_cast<int>(l.line);
  return l.message;
}

sandbox::rendered_config sandbox::render(
    const model::model& m, const generation_plan& plan, std::optional<std::size_t> only,
    std::optional<std::pair<std::size_t, std::size_t>> extra) const {
  std::vector<line_origin> origin_of_line{line_origin{}};
  std::string text;
  auto emit = [&](const std::string& l, line_origin lo = {}) {
    text += l + "\n";
    origin_of_line.push_back(lo);
  };
  // `ssl` as written, so that nginx -t sees listen lines that differ in it as production does
  // ("protocol options redefined"); added to every listen of a socket where no rendered
  // listen has it (TLS from `ssl on`, which nginx >= 1.25.1 rejects; or the server that
  // wrote it left out), so that every socket the sandbox serves speaks TLS.
  std::set<std::size_t> ssl_written;
  for (std::size_t pi = 0; pi < plan.servers.size(); ++pi)
    if (!plan.servers[pi].dropped && (!only || *only == pi))
      for (const auto& l : plan.listens_of.at(pi))
        if (l.ssl) ssl_written.insert(l.socket);
  emit("# ngxtls check --sandbox: the TLS servers of " + m.cfg->files.front().path +
       " on loopback");
  for (const auto& mod : plan.modules) emit("load_module " + quote_token(mod) + ";");
  emit("worker_processes " + std::to_string(workers_) + ";");
  // Every path nginx writes, relative to the instance's -p prefix inside the run directory.
  emit("pid nginx.pid;");
  emit("lock_file nginx.lock;");
  emit("error_log logs/error.log notice;");
  emit("events { worker_connections " + std::to_string(worker_connections_) + "; }");
  for (int ctx = 0; ctx < 2; ++ctx) {
    const bool stream = ctx == 1;
    if (stream && plan.stream_dropped) continue;
    std::vector<std::size_t> in_ctx;
    for (std::size_t pi = 0; pi < plan.servers.size(); ++pi)
      if (!plan.servers[pi].dropped && (!only || *only == pi) &&
          (m.servers[plan.servers[pi].index].context == model::context_kind::stream) == stream)
        in_ctx.push_back(pi);
    if (in_ctx.empty()) continue;
    // The TLS upstreams of the servers rendered (upstream_plan.cpp), by server index.
    auto upstream_lines_of = [&](std::size_t server, bool block, std::size_t indent) {
      for (std::size_t k = 0; k < plan.upstream_plans.size(); ++k) {
        const auto& ul = plan.upstream_plans[k];
        if (ul.dropped || ul.server != server) continue;
        line_origin lo{line_kind::upstream, server, nullptr};
        lo.upstream = k;
        for (const auto& l : block ? ul.block : ul.location) emit(std::string(indent, ' ') + l, lo);
      }
    };
    emit(stream ? "stream {" : "http {",
         {stream ? line_kind::stream_head : line_kind::other, 0, nullptr});
    if (!stream) {
      emit("    access_log off;");
      for (const auto& t : plan.temp_paths) emit("    " + t);
    }
    for (auto pi : in_ctx) upstream_lines_of(plan.servers[pi].index, true, 4);
    for (auto pi : in_ctx) {
      const auto& p = plan.servers[pi];
      const auto& s = m.servers[p.index];
      emit("    server {  # " + p.label, {line_kind::server_head, p.index, s.where});
      for (const auto& l : plan.listens_of.at(pi))
        emit(l.head + (!l.quic && (l.ssl || !ssl_written.count(l.socket)) ? " ssl" : "") + l.text +
                 ";",
             {line_kind::listen, p.index, l.where, 0, 0, l.port});
      if (!stream) {
        std::string names = "        server_name";
        for (const auto& n : s.names) names += " " + quote_token(n);
        if (!s.names.empty()) emit(names + ";", {line_kind::listen, p.index, s.where});
      }
      for (std::size_t li = 0; li < p.lines.size(); ++li) {
        if (plan.dropped_lines.count({pi, li}) || (extra && *extra == std::make_pair(pi, li)))
          continue;
        std::string l = "        " + p.lines[li].first;
        for (const auto& a : p.lines[li].second) l += " " + quote_token(a);
        emit(l + ";", {line_kind::directive, p.index, p.origins[li], pi, li});
      }
      const bool proxied =
          std::any_of(plan.upstream_plans.begin(), plan.upstream_plans.end(),
                      [&](const auto& ul) { return !ul.dropped && ul.server == p.index; });
      upstream_lines_of(p.index, false, 8);
      if (stream && !proxied)
        emit("        return \"ok\\n\";");
      else if (!stream)
        emit("        location / { return 200 \"ok\\n\"; }");
      emit("    }");
    }
    emit("}");
  }
  return {text, origin_of_line};
}

command_output sandbox::nginx_test(const std::string& text) const {
  {
    std::ofstream out(conf_path_, std::ios::binary | std::ios::trunc);
    out << material_.config_for_nginx(text);
    if (!out) throw target_error("sandbox: cannot write " + conf_path_);
  }
  hand_over();
  const std::string inst = material_.path_for_nginx(inst_dirs_.front());
  auto r = run_command({build_.binary, "-t", "-q", "-p", inst + "/", "-e", inst + "/logs/error.log",
                        "-c", material_.path_for_nginx(conf_path_)},
                       60000, setup());
  r.out = material_.paths_from_nginx(std::move(r.out));
  r.err = material_.paths_from_nginx(std::move(r.err));
  return r;
}

void sandbox::test_with_blame(const model::model& m, generation_plan& plan) {
  for (int round = 0;; ++round) {
    const rendered_config rendered = render(m, plan, std::nullopt, std::nullopt);
    auto t = nginx_test(rendered.text);
    if (t.exit_code == 0) {
      record_warnings(m, rendered, t.err);
      break;
    }
    auto e = first_emerg(t.err);
    if (!e || round >= 64 + 2 * static_cast<int>(plan.servers.size()))
      throw target_error("sandbox: nginx -t rejects the sandbox config: " +
                         material_.in_configured_terms(t.err.empty() ? t.out : t.err));
    int line = 0;
    const std::string message = message_in_sandbox_config(*e, conf_path_, line);
    leave_out(m, plan, blame(m, plan, rendered, message, line), message);
  }
}

void sandbox::record_warnings(const model::model& m, const rendered_config& rendered,
                              const std::string& err) {
  for (const auto& logged : config::parse_nginx_log_lines(err)) {
    if (warnings_.size() >= 256) break;
    if (logged.level != "warn") continue;
    int line = 0;
    const std::string msg = message_in_sandbox_config(logged, conf_path_, line);
    sandbox_warning w;
    w.message = material_.in_configured_terms(msg);
    if (line > 0 && static_cast<std::size_t>(line) < rendered.origin_of_line.size()) {
      const auto& lo = rendered.origin_of_line[static_cast<std::size_t>(line)];
      if (lo.where) w.where = m.cfg->where(*lo.where);
      w.port = lo.port;
    }
    warnings_.push_back(std::move(w));
  }
}

sandbox::line_origin sandbox::blame(const model::model& m, const generation_plan& plan,
                                    const rendered_config& rendered, const std::string& message,
                                    int line) const {
  const auto& origin_of_line = rendered.origin_of_line;
  // A directive whose argument the message quotes (nginx reports some errors with no line, or
  // at a block's end: docs/nginx-facts.md#ticket-key-rotation), else the line nginx names.
  // Several directives can quote the same argument (one file named as the certificate key and
  // as the ticket key, an error nginx reports at the block's end): then the line nginx names
  // decides if it is one of them, else the search below finds the directive whose removal makes
  // the server pass.
  auto quotes_argument = [&](std::size_t ln) {
    const auto& lo = origin_of_line[ln];
    if (lo.what != line_kind::directive) return false;
    for (const auto& a : plan.servers[lo.plan_server].lines[lo.line].second)
      if ((a.size() > 2 || (a.size() > 1 && a[0] == '/')) &&
          message.find("\"" + a + "\"") != std::string::npos)
        return true;
    return false;
  };
  std::vector<std::size_t> quoting;
  for (std::size_t ln = 1; ln < origin_of_line.size(); ++ln)
    if (quotes_argument(ln)) quoting.push_back(ln);
  const bool named = line > 0 && static_cast<std::size_t>(line) < origin_of_line.size();
  const auto named_line = static_cast<std::size_t>(line);
  std::size_t blamed = 0;
  if (quoting.size() == 1)
    blamed = quoting.front();
  else if (named && std::find(quoting.begin(), quoting.end(), named_line) != quoting.end())
    blamed = named_line;
  else if (quoting.empty() && named)
    blamed = named_line;
  line_origin lo = blamed ? origin_of_line[blamed] : line_origin{};
  if (lo.what != line_kind::other) return lo;
  // Nothing to go by: find the one server that fails alone, then the one directive whose
  // removal makes it pass (a few more `nginx -t` runs, only on this path).
  for (std::size_t pi = 0; pi < plan.servers.size() && lo.what == line_kind::other; ++pi) {
    const auto& p = plan.servers[pi];
    if (p.dropped || nginx_test(render(m, plan, pi, std::nullopt).text).exit_code == 0) continue;
    lo = {line_kind::server_head, p.index, m.servers[p.index].where};
    for (std::size_t li = 0; li < p.lines.size(); ++li) {
      if (plan.dropped_lines.count({pi, li})) continue;
      if (nginx_test(render(m, plan, pi, std::make_pair(pi, li)).text).exit_code == 0) {
        lo = {line_kind::directive, p.index, p.origins[li], pi, li};
        break;
      }
    }
  }
  return lo;
}

void sandbox::leave_out(const model::model& m, generation_plan& plan, const line_origin& lo,
                        const std::string& message) {
  const std::string msg = material_.in_configured_terms(message);
  if (lo.what == line_kind::directive) {
    const std::size_t pi = lo.plan_server, li = lo.line;
    plan.dropped_lines.insert({pi, li});
    sandbox_rejection r;
    if (lo.where) r.where = m.cfg->where(*lo.where);
    r.server = plan.servers[pi].label;
    r.message = msg;
    rejections_.push_back(r);
    notes_.push_back({plan.servers[pi].label, "nginx -t rejects " +
                                                  plan.servers[pi].lines[li].first +
                                                  (lo.where ? " at " + to_string(r.where) : "") +
                                                  ": " + msg + " (left out to test the rest)"});
  } else if (lo.what == line_kind::server_head || lo.what == line_kind::listen) {
    for (auto& p : plan.servers)
      if (p.index == lo.server && !p.dropped) {
        p.dropped = true;
        untested_[p.label] = "nginx -t rejects it in the sandbox: " + msg;
        if (lo.where) rejections_.push_back({m.cfg->where(*lo.where), p.label, msg});
      }
  } else if (lo.what == line_kind::upstream) {
    // Every variant of that TLS upstream: the configured one is what the rule findings are on.
    const std::size_t ui = plan.upstream_plans.at(lo.upstream).upstream;
    for (auto& ul : plan.upstream_plans)
      if (ul.upstream == ui) ul.dropped = true;
    notes_.push_back(
        {model::server_label(m, m.servers[lo.server]),
         "nginx -t rejects the sandbox's lines for its TLS upstream: " + msg + " (not measured)"});
  } else if (lo.what == line_kind::stream_head) {
    plan.stream_dropped = true;
    for (auto& p : plan.servers)
      if (m.servers[p.index].context == model::context_kind::stream) {
        p.dropped = true;
        untested_[p.label] = "the sandbox nginx has no stream module: " + msg;
      }
  } else {
    throw target_error("sandbox: nginx -t rejects the sandbox config: " + msg);
  }
}

}  // namespace ngxtls::sandbox
