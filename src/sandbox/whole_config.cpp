// `nginx -t` of the whole linted config, before the TLS servers run: every file the loader read
// is mirrored into the run directory line for line (so nginx's FILE:LINE is the operator's
// FILE:LINE), with what could act on the host neutralised in place. See
// sandbox::test_whole_config.

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "sandbox/sandbox.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

// One change to a file's bytes: [begin, end) replaced by `text`, the newlines of the replaced
// bytes kept after it so that every later line keeps its number.
struct edit {
  std::size_t begin = 0, end = 0;
  std::string text;
};

// Directives that run code or load it: their modules are never loaded, so nginx would stop at
// the first of them as an unknown directive; left out so that the rest is tested.
bool runs_code(std::string_view name) {
  return name.find("lua") != std::string_view::npos || name.rfind("perl", 0) == 0 ||
         name.rfind("js_", 0) == 0 || name.rfind("njs", 0) == 0;
}

// Directives whose first argument names a file nginx reads at `nginx -t` (certificates, keys,
// CA files, CRLs, ticket keys, DH parameters, passwords, staples), in every module that has
// them (ssl_, proxy_ssl_, grpc_ssl_, uwsgi_ssl_, stream and mail).
bool reads_file(std::string_view name) {
  for (std::string_view suffix :
       {"_certificate", "_certificate_key", "_password_file", "_dhparam", "_trusted_certificate",
        "_client_certificate", "_crl", "_stapling_file", "_session_ticket_key"})
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return true;
  return false;
}

// Directives whose first argument is a path nginx writes or creates at `nginx -t` or when it
// runs: pointed into the run directory.
bool writes_path(std::string_view name) {
  return name == "client_body_temp_path" || name == "proxy_temp_path" ||
         name == "fastcgi_temp_path" || name == "uwsgi_temp_path" || name == "scgi_temp_path" ||
         name == "proxy_cache_path" || name == "fastcgi_cache_path" || name == "uwsgi_cache_path" ||
         name == "scgi_cache_path";
}

// Directives whose address (first argument) nginx resolves while it loads the config, unless it
// holds a variable or names an upstream block.
bool resolves_at_load(std::string_view name) {
  return name == "proxy_pass" || name == "grpc_pass" || name == "uwsgi_pass" ||
         name == "scgi_pass" || name == "fastcgi_pass" || name == "memcached_pass";
}

// A host name (not an address literal, not loopback) that only a name service could resolve.
bool unreachable_name(std::string host) {
  if (host.empty() || loopback_host(host)) return false;
  if (host.size() > 1 && host.front() == '[') return false;  // an IPv6 literal
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) != 1 &&
         ::inet_pton(AF_INET6, host.c_str(), &v6) != 1;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Applies `edits` (sorted, not overlapping) to `content`.
std::string apply(std::string_view content, std::vector<edit> edits) {
  std::sort(edits.begin(), edits.end(), [](const edit& a, const edit& b) {
    // An insertion before a replacement at the same place.
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  std::string out;
  std::size_t at = 0;
  for (const auto& e : edits) {
    if (e.begin < at) continue;  // overlapping: the first one wins
    out.append(content.substr(at, e.begin - at));
    out += e.text;
    for (std::size_t i = e.begin; i < e.end; ++i)
      if (content[i] == '\n') out += '\n';
    at = e.end;
  }
  out.append(content.substr(at));
  return out;
}

}  // namespace

std::string name_service_outside(std::string_view nsswitch) {
  std::size_t pos = 0;
  while (pos < nsswitch.size()) {
    std::size_t eol = nsswitch.find('\n', pos);
    if (eol == std::string_view::npos) eol = nsswitch.size();
    std::string_view line = nsswitch.substr(pos, eol - pos);
    pos = eol + 1;
    line = line.substr(0, line.find('#'));
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos || line.substr(start, 6) != "hosts:") continue;
    std::istringstream words{std::string(line.substr(start + 6))};
    bool in_action = false;
    for (std::string w; words >> w;) {
      // [NOTFOUND=return] and the like are actions, not sources; they may hold spaces.
      if (in_action || w.front() == '[') {
        in_action = w.back() != ']';
        continue;
      }
      if (w != "files" && w != "dns" && w != "myhostname")
        return "the host's name service switch looks up host names with \"" + w +
               "\", which reaches a daemon through a local socket that the network namespace "
               "does not cut off";
    }
  }
  return "";
}

std::string to_string(whole_config_test::outcome o) {
  switch (o) {
    case whole_config_test::outcome::passed:
      return "passed";
    case whole_config_test::outcome::rejected:
      return "rejected";
    case whole_config_test::outcome::not_testable:
      return "not_testable";
    case whole_config_test::outcome::skipped:
      break;
  }
  return "skipped";
}

void sandbox::test_whole_config(const model::model& m) {
  whole_ = {};
  auto skip = [&](const std::string& why) {
    whole_.result = whole_config_test::outcome::skipped;
    whole_.message = why;
  };
  if (!network_isolated_)
    return skip(
        "no network namespace: nginx resolves the host names a config names (upstream servers, "
        "proxy_pass, resolver) while it tests it, and only a loopback-only namespace keeps that "
        "from reaching another host");
  if (!m.cfg || m.cfg->files.empty()) return skip("the model has no configuration");
  // Host names nginx resolves must fail inside the namespace, not go to a daemon outside it.
  for (const char* nscd : {"/run/nscd/socket", "/var/run/nscd/socket"})
    if (fs::exists(nscd))
      return skip(std::string("nscd listens at ") + nscd +
                  ": host names would be resolved outside the network namespace");
  {
    std::ifstream in("/etc/nsswitch.conf", std::ios::binary);
    std::string text(64 * 1024, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (auto why = name_service_outside(text); !why.empty()) return skip(why);
  }
  const config::config& cfg = *m.cfg;
  const std::string mirror_dir = run_dir_ + "/material/whole";
  const std::string write_dir = inst_dirs_.front() + "/whole";
  fs::create_directories(mirror_dir);
  fs::create_directories(write_dir + "/logs");
  auto mirror_of = [&](std::size_t i) { return mirror_dir + "/" + std::to_string(i) + ".conf"; };
  // What nginx wrote: mirror file -> the operator's file.
  std::map<std::string, std::string> original_of;
  for (std::size_t i = 0; i < cfg.files.size(); ++i) original_of[mirror_of(i)] = cfg.files[i].path;

  // upstream block names: a *_pass that names one resolves nothing.
  std::set<std::string> upstream_names;
  {
    std::vector<config::list<config::directive>> runs;
    for (const auto& f : cfg.files) runs.push_back(f.parsed);
    while (!runs.empty()) {
      auto run = runs.back();
      runs.pop_back();
      for (const auto& d : run) {
        if (d.name.view() == "upstream" && d.has_block && !d.args.empty())
          upstream_names.insert(std::string(d.args[0].value()));
        if (d.has_block) runs.push_back(d.block);
      }
    }
  }
  bool loads_modules = false, has_stream = false;
  std::set<std::string> untranslated;  // files left as configured: nginx may not read them here
  std::vector<std::vector<edit>> edits(cfg.files.size());
  int writable = 0;
  // nginx creates the temp paths it was built with (/var/lib/nginx/...) when the config sets
  // none: each one an http block (holding `set_here`) does not set points into the run
  // directory.
  auto temp_paths = [&](const std::set<std::string>& set_here) {
    std::string text;
    // Without an access_log nginx opens the one it was built with (/var/log/nginx/...).
    if (!set_here.count("access_log"))
      text += " access_log " + quote_token(nx(write_dir + "/logs/access.log")) + ";";
    for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
      const std::string directive = std::string(t) + "_temp_path";
      if (set_here.count(directive)) continue;
      if (std::string(t) != "client_body" &&
          configure_.find(std::string(" --without-http_") + t + "_module ") != std::string::npos)
        continue;
      text += " " + directive + " " +
              quote_token(nx(write_dir + "/path-" + std::to_string(++writable))) + ";";
    }
    return text;
  };
  std::string why_not;  // set when a shape cannot be made safe
  for (std::size_t fi = 0; fi < cfg.files.size() && why_not.empty(); ++fi) {
    const auto& file = cfg.files[fi];
    const std::string_view content = file.content;
    auto offset_of = [&](const char* p) -> std::optional<std::size_t> {
      if (p < content.data() || p > content.data() + content.size()) return std::nullopt;
      return static_cast<std::size_t>(p - content.data());
    };
    // Where the directive's text ends: past its `;`, or at its `{` (block: false) / past the
    // block's `}` for a *_by_lua_block (block: true).
    auto end_of = [&](const config::directive& d, bool block) -> std::optional<std::size_t> {
      const char* last = d.name.end();
      for (const auto& a : d.args) {
        auto raw = a.raw();
        if (raw.data() + raw.size() > last) last = raw.data() + raw.size();
      }
      if (d.lua && block) {
        auto body = d.lua_body();
        if (body && body->data() + body->size() > last) last = body->data() + body->size();
      }
      auto at = offset_of(last);
      if (!at) return std::nullopt;
      for (std::size_t i = *at; i < content.size(); ++i) {
        const char c = content[i];
        if (c == '#') {
          while (i < content.size() && content[i] != '\n') ++i;
          continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
        if (c == ';' && !d.has_block) return i + 1;
        if (c == '{' && d.has_block && !block) return i;
        if (c == '}' && d.lua && block) return i + 1;
        return std::nullopt;
      }
      return std::nullopt;
    };
    // The directive replaced by `text` (empty: left out).
    auto replace = [&](const config::directive& d, const std::string& text, bool block = false) {
      auto b = offset_of(d.name.data());
      auto e = end_of(d, block);
      if (!b || !e) {
        why_not = "cannot place " + std::string(d.name.view()) + " at " + to_string(cfg.where(d));
        return;
      }
      edits[fi].push_back({*b, *e, text});
    };
    // The directive with its first argument replaced by `arg0`, the others as written.
    auto with_arg0 = [&](const config::directive& d, const std::string& arg0) {
      std::string text = std::string(d.name.view()) + " " + quote_token(arg0);
      for (std::size_t i = 1; i < d.args.size(); ++i) text += " " + std::string(d.args[i].raw());
      replace(d, text + ";");
    };
    auto note = [&](const config::directive& d, const std::string& what) {
      whole_.notes.push_back(std::string(d.name.view()) + " at " + to_string(cfg.where(d)) + ": " +
                             what);
    };
    // Each run of directives with the name of the block that holds it ("" at a file's top).
    std::vector<std::tuple<config::list<config::directive>, std::size_t, std::string>> todo{
        {file.parsed, 0, ""}};
    while (!todo.empty() && why_not.empty()) {
      auto& [run, i, parent] = todo.back();
      if (i == run.size()) {
        todo.pop_back();
        continue;
      }
      const config::directive& d = run[i++];
      const std::string name(d.name.view());
      const std::string arg0 = d.args.empty() ? "" : std::string(d.args[0].value());
      if (name == "stream" && d.has_block) has_stream = true;
      if (name == "include" && !d.has_block && !d.lua) {
        std::string text;
        if (auto it = file.includes.find(&d); it != file.includes.end())
          for (auto idx : it->second) text += "include " + quote_token(nx(mirror_of(idx))) + "; ";
        replace(d, text);
        continue;
      }
      if (d.lua || runs_code(name)) {
        if (d.has_block && !d.lua) {
          why_not =
              name + " at " + to_string(cfg.where(d)) + " is a block the sandbox cannot leave out";
          break;
        }
        replace(d, "", true);
        note(d, "left out (code the sandbox does not run; its module is not loaded)");
        continue;
      }
      // Host names nginx resolves while it tests the config (an upstream's servers, a
      // *_pass to a host that is no upstream's name, a resolver given by name): the sandbox's
      // network has loopback only, so nginx -t would stop at the first ("host not found in
      // upstream") and test nothing after it. Each stands as 127.0.0.1, listed in the notes.
      if (const bool upstream_server = name == "server" && !d.has_block && parent == "upstream";
          (upstream_server || name == "resolver" || resolves_at_load(name)) && !d.args.empty() &&
          !d.has_block) {
        std::string text = name;
        std::vector<std::string> hosts;
        for (std::size_t ai = 0; ai < d.args.size(); ++ai) {
          std::string a(d.args[ai].value());
          const bool address = ai == 0 || (name == "resolver" && a.find('=') == std::string::npos);
          if (address && a.find('$') == std::string::npos && a.rfind("unix:", 0) != 0) {
            const std::string host = host_of(a);
            if (unreachable_name(host) && !upstream_names.count(host)) {
              auto at = a.find("://");
              at = a.find(host, at == std::string::npos ? 0 : at + 3);
              a.replace(at, host.size(), "127.0.0.1");
              hosts.push_back(host);
            }
          }
          text += " " + (a == d.args[ai].value() ? std::string(d.args[ai].raw()) : quote_token(a));
        }
        if (!hosts.empty()) {
          replace(d, text + ";");
          for (const auto& h : hosts)
            note(d, "host \"" + h +
                        "\" stands as 127.0.0.1 (nginx resolves it while it tests the config, and "
                        "the sandbox's network has loopback only)");
          continue;
        }
      }
      if (name == "load_module") {
        loads_modules = true;
        replace(d, "");
        note(d, "left out (the sandbox loads no module a config names)");
        continue;
      }
      if (name == "user" || name == "pid" || name == "lock_file" || name == "ssl_engine" ||
          name == "ssl_key_log" || name == "working_directory" ||
          name == "google_perftools_profiles") {
        replace(d, "");
        if (name == "ssl_engine" || name == "ssl_key_log")
          note(d, name == "ssl_engine" ? "left out (an OpenSSL engine is code)"
                                       : "left out (it writes TLS secrets to a file)");
        continue;
      }
      if ((name == "error_log" && !arg0.empty() && arg0 != "stderr" &&
           arg0.rfind("memory:", 0) != 0) ||
          (name == "access_log" && !arg0.empty() && arg0 != "off") || writes_path(name)) {
        with_arg0(d, nx(write_dir + "/" + (writes_path(name) ? "path-" : "logs/log-") +
                        std::to_string(++writable)));
        continue;
      }
      if (name == "listen" && arg0.rfind("unix:", 0) == 0) {
        // nginx -t creates the socket file: in the run directory, not where the config says.
        with_arg0(d, "unix:" + nx(write_dir + "/sock-" + std::to_string(++writable)));
        continue;
      }
      if (reads_file(name) && !arg0.empty() && arg0.find('$') == std::string::npos &&
          arg0.rfind("data:", 0) != 0) {
        if (arg0.rfind("engine:", 0) == 0) {
          why_not = name + " \"" + arg0 + "\" at " + to_string(cfg.where(d)) +
                    " loads an OpenSSL engine (code)";
          break;
        }
        std::string path;
        if (auto it = sandbox_path_of_.find({d.file, d.offset}); it != sandbox_path_of_.end())
          path = it->second;
        else {
          std::string real = arg0;
          if (real[0] != '/')
            real = fs::absolute(fs::path(cfg.conf_prefix) / real).lexically_normal().string();
          struct stat st {};
          if (::stat(real.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
              ::access(real.c_str(), R_OK) == 0)
            path = usable(real, arg0);
          if (path.empty()) untranslated.insert(real);
        }
        if (!path.empty()) with_arg0(d, nx(path));
        continue;
      }
      if (name == "server" && d.has_block) {
        if (auto it = standin_for_server_.find({d.file, d.offset});
            it != standin_for_server_.end()) {
          auto open = end_of(d, false);
          if (!open) {
            why_not =
                "cannot place a stand-in certificate in the server at " + to_string(cfg.where(d));
            break;
          }
          edits[fi].push_back({*open + 1, *open + 1,
                               " ssl_certificate " + quote_token(nx(it->second.first)) +
                                   "; ssl_certificate_key " + quote_token(nx(it->second.second)) +
                                   ";"});
          note(d,
               "no ssl_certificate applies (nginx would refuse its `listen ... ssl`): tested "
               "with the sandbox's stand-in");
        }
      }
      if (name == "http" && d.has_block) {
        std::set<std::string> set_here;
        for (const auto& c : d.block) set_here.insert(std::string(c.name.view()));
        const std::string text = temp_paths(set_here);
        auto open = end_of(d, false);
        if (!open) {
          why_not = "cannot place the temp paths in http at " + to_string(cfg.where(d));
          break;
        }
        edits[fi].push_back({*open + 1, *open + 1, text});
      }
      if (d.has_block) todo.emplace_back(d.block, 0, name);
    }
  }
  if (!why_not.empty()) return skip(why_not + ": the whole config is not tested");

  // The main file's first line gains what the sandbox sets for every nginx it runs (no line
  // number changes): pid and lock file in the run directory, and the build's own stream module
  // when the config has stream servers and the build has it as a dynamic module.
  // A site file, snippet or folder of site files is read inside blocks no file holds
  // (config::implied_blocks, as lint reads it): a main file of the sandbox's own holds them,
  // around includes of the mirrors, as the operator's nginx.conf holds the includes.
  std::string wrapper;
  if (cfg.implied != config::implied_context::none) {
    std::set<std::uint32_t> included;  // reached through the file that includes them
    for (const auto& f : cfg.files)
      for (const auto& [d, targets] : f.includes) included.insert(targets.begin(), targets.end());
    // A block the loader added: its name is not a view into any file's text.
    auto implied = [&](const config::directive& d) {
      const std::string_view text = cfg.files[d.file].content;
      return d.name.data() < text.data() || d.name.data() >= text.data() + text.size();
    };
    bool events = false;
    std::function<std::string(config::list<config::directive>)> body =
        [&](config::list<config::directive> run) {
          std::string out;
          std::set<std::uint32_t> done;
          for (const auto& d : run) {
            if (d.has_block && implied(d)) {
              out += std::string(d.name.view());
              for (const auto& a : d.args) out += " " + quote_token(std::string(a.value()));
              out += " {\n";
              if (d.name.view() == "stream") has_stream = true;
              if (d.name.view() == "http") {
                std::set<std::string> set_here;
                for (const auto& c : d.block) set_here.insert(std::string(c.name.view()));
                out += temp_paths(set_here) + "\n";
              }
              out += body(d.block) + "}\n";
            } else if (!included.count(d.file) && done.insert(d.file).second) {
              out += "include " + quote_token(nx(mirror_of(d.file))) + ";\n";
            }
          }
          return out;
        };
    for (const auto& d : cfg.root) events = events || d.name.view() == "events";
    wrapper = (events ? "" : "events {}\n") + body(cfg.root);
  }
  std::string first = "pid " + quote_token(nx(write_dir + "/nginx.pid")) + "; lock_file " +
                      quote_token(nx(write_dir + "/nginx.lock")) + "; ";
  if (has_stream && configure_.find(" --with-stream=dynamic ") != std::string::npos) {
    const std::string stream_module = modules_path_ + "/ngx_stream_module.so";
    struct stat st {};
    if (::lstat(stream_module.c_str(), &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & 022) &&
        (st.st_uid == 0 || st.st_uid == ::getuid()))
      first += "load_module " + quote_token(stream_module) + "; ";
  }
  const std::string main_file = wrapper.empty() ? mirror_of(0) : mirror_dir + "/main.conf";
  if (wrapper.empty()) {
    edits[0].push_back({0, 0, first});
  } else {
    std::ofstream out(main_file, std::ios::binary | std::ios::trunc);
    out << first << "\n" << wrapper;
    if (!out) return skip("cannot write the mirrored config in the run directory");
  }
  for (std::size_t i = 0; i < cfg.files.size(); ++i) {
    std::ofstream out(mirror_of(i), std::ios::binary | std::ios::trunc);
    out << apply(cfg.files[i].content, edits[i]);
    if (!out) return skip("cannot write the mirrored config in the run directory");
  }
  hand_over();
  auto r = run_command({binary_, "-t", "-p", nx(write_dir) + "/", "-e",
                        nx(write_dir + "/logs/error.log"), "-c", nx(main_file)},
                       60000, setup());
  const std::string err = from_nginx(r.err.empty() ? r.out : r.err);
  // nginx's words, its paths mapped back: mirror -> operator's file, copies -> configured text.
  auto operator_words = [&](std::string text) {
    for (const auto& [mirror, original] : original_of) text = replace_all(text, mirror, original);
    return shown(text);
  };
  // "MESSAGE in FILE:LINE" -> the message and the operator's location.
  auto split = [&](std::string msg, source_location& where) {
    for (const auto& [mirror, original] : original_of) {
      const std::string tail = " in " + mirror + ":";
      auto t = msg.rfind(tail);
      if (t == std::string::npos) continue;
      try {
        where.file = original;
        where.line = static_cast<std::uint32_t>(std::stoul(msg.substr(t + tail.size())));
      } catch (const std::exception&) {
        where = {};
      }
      msg.resize(t);
      break;
    }
    // The column of the directive on that line, as lint locates it: the one whose name nginx
    // quotes, else the first.
    if (!where.file.empty()) {
      std::vector<config::list<config::directive>> todo{cfg.root};
      std::uint32_t first = 0, quoted = 0;
      while (!todo.empty() && quoted == 0) {
        auto run = todo.back();
        todo.pop_back();
        for (const auto& d : run) {
          if (d.line == where.line) {
            auto w = cfg.where(d);
            if (w.file == where.file && w.line == where.line) {
              if (first == 0 || w.column < first) first = w.column;
              if (msg.find("\"" + std::string(d.name.view()) + "\"") != std::string::npos)
                quoted = w.column;
            }
          }
          if (d.has_block) todo.push_back(d.block);
        }
      }
      where.column = quoted ? quoted : first;
    }
    return operator_words(msg);
  };
  std::istringstream in(err);
  std::string emerg_line;
  for (std::string l; std::getline(in, l);) {
    if (auto at = l.find("[warn] "); at != std::string::npos && whole_.warnings.size() < 256) {
      sandbox_warning w;
      w.message = split(l.substr(at + 7), w.where);
      // A listen line: the port it names, for the judges that compare ports.
      for (const auto& s : m.servers)
        for (const auto& ld : s.listens)
          if (ld.where && cfg.where(*ld.where).file == w.where.file &&
              cfg.where(*ld.where).line == w.where.line)
            w.port = ld.port;
      whole_.warnings.push_back(std::move(w));
    }
    if (auto at = l.find("[emerg] "); at != std::string::npos && emerg_line.empty())
      emerg_line = l.substr(at + 8);
  }
  if (r.exit_code == 0) {
    whole_.result = whole_config_test::outcome::passed;
    return;
  }
  if (emerg_line.empty()) {
    whole_.result = whole_config_test::outcome::not_testable;
    whole_.message = "nginx -t failed (exit " + std::to_string(r.exit_code) +
                     ") without an [emerg] line: " + operator_words(err);
    return;
  }
  source_location where;
  const std::string msg = split(emerg_line, where);
  whole_.where = where;
  // What the sandbox changed, not the config, can make nginx stop: not nginx's verdict.
  std::string not_testable;
  if (msg.find("host not found") != std::string::npos)
    not_testable =
        "nginx resolves host names while it tests a config, and the sandbox's network has "
        "loopback only";
  else if (msg.rfind("unknown directive", 0) == 0 && loads_modules)
    not_testable =
        "the config loads modules (load_module) that the sandbox does not load, and this "
        "directive may come from one of them";
  else if (msg.find("Address already in use") != std::string::npos)
    not_testable = "a port the config listens on is taken by the sandbox's own nginx";
  else if (msg.find("Permission denied") != std::string::npos ||
           msg.find("No such file or directory") != std::string::npos)
    not_testable =
        "nginx, run as the sandbox's unprivileged user, cannot open a file the config names";
  else
    for (const auto& u : untranslated)
      if (msg.find(u) != std::string::npos)
        not_testable = "nginx cannot read " + u + " in the sandbox";
  whole_.message = msg;
  if (!not_testable.empty()) {
    whole_.result = whole_config_test::outcome::not_testable;
    whole_.reason = not_testable;
    return;
  }
  whole_.result = whole_config_test::outcome::rejected;
}

}  // namespace ngxtls::sandbox
