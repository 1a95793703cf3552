// `nginx -t` of the whole linted config, before the TLS servers run: every file the loader read
// is mirrored into the run directory line for line (so nginx's FILE:LINE is the operator's
// FILE:LINE), with what could act on the host neutralised in place, as directive_policy's
// whole_config_policy says. See sandbox::test_whole_config.

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "config/edits.hpp"
#include "config/values.hpp"
#include "sandbox/directive_policy.hpp"
#include "sandbox/sandbox_plan.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

// A host name (not an address literal, not loopback) that only a name service could resolve.
bool unreachable_name(std::string host) {
  if (host.empty() || loopback_host(host)) return false;
  if (host.size() > 1 && host.front() == '[') return false;  // an IPv6 literal
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) != 1 &&
         ::inet_pton(AF_INET6, host.c_str(), &v6) != 1;
}

// upstream block names: a *_pass that names one resolves nothing.
std::set<std::string> upstream_names_of(const config::config& cfg) {
  std::set<std::string> names;
  std::vector<config::list<config::directive>> runs;
  for (const auto& f : cfg.files) runs.push_back(f.parsed);
  while (!runs.empty()) {
    auto run = runs.back();
    runs.pop_back();
    for (const auto& d : run) {
      if (d.name.view() == "upstream" && d.has_block && !d.args.empty())
        names.insert(std::string(d.args[0].value()));
      if (d.has_block) runs.push_back(d.block);
    }
  }
  return names;
}

// Why the whole config cannot be tested safely on this host, or "".
std::string host_unsafe_for_whole_config() {
  // Host names nginx resolves must fail inside the namespace, not go to a daemon outside it.
  for (const char* nscd : {"/run/nscd/socket", "/var/run/nscd/socket"})
    if (fs::exists(nscd))
      return std::string("nscd listens at ") + nscd +
             ": host names would be resolved outside the network namespace";
  std::ifstream in("/etc/nsswitch.conf", std::ios::binary);
  std::string text(64 * 1024, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return name_service_outside(text);
}

// The operator's files mirrored with the edits whole_config_policy asks for. Files nginx reads
// are the server plans' copies and stand-ins (`sandbox_path_of`), else copies made here.
struct config_mirror {
  using file_key = std::pair<std::uint32_t, std::uint32_t>;
  const config::config& cfg;
  run_material& material;
  const nginx_build& build;
  const std::map<file_key, std::string>& sandbox_path_of;
  const std::map<file_key, std::pair<std::string, std::string>>& standin_for_server;
  std::string mirror_dir, write_dir;

  std::vector<std::vector<config::byte_edit>> edits;  // per file, line numbers kept
  std::vector<std::string> notes;
  std::set<std::string> untranslated;  // files left as configured: nginx may not read them here
  std::set<std::string> upstream_names;
  bool loads_modules = false, has_stream = false;
  int writable = 0;
  std::string why_not;  // set when a shape cannot be made safe
  std::size_t fi = 0;   // the file being edited

  config_mirror(const config::config& c, run_material& mat, const nginx_build& b,
                const std::map<file_key, std::string>& paths,
                const std::map<file_key, std::pair<std::string, std::string>>& standins,
                std::string mirror, std::string write)
      : cfg(c),
        material(mat),
        build(b),
        sandbox_path_of(paths),
        standin_for_server(standins),
        mirror_dir(std::move(mirror)),
        write_dir(std::move(write)) {}

  std::string mirror_of(std::size_t i) const {
    return mirror_dir + "/" + std::to_string(i) + ".conf";
  }
  std::string for_nginx(const std::string& path) const { return material.path_for_nginx(path); }
  std::string_view content() const { return cfg.files[fi].content; }

  std::optional<std::size_t> offset_of(const char* p) const {
    if (p < content().data() || p > content().data() + content().size()) return std::nullopt;
    return static_cast<std::size_t>(p - content().data());
  }
  // Where the directive's text ends: past its `;`, or at its `{` (block: false) / past the
  // block's `}` for a *_by_lua_block (block: true).
  std::optional<std::size_t> end_of(const config::directive& d, bool block) const {
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
    const std::string_view text = content();
    for (std::size_t i = *at; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '#') {
        while (i < text.size() && text[i] != '\n') ++i;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      if (c == ';' && !d.has_block) return i + 1;
      if (c == '{' && d.has_block && !block) return i;
      if (c == '}' && d.lua && block) return i + 1;
      return std::nullopt;
    }
    return std::nullopt;
  }
  // The directive replaced by `text` (empty: left out).
  void replace(const config::directive& d, const std::string& text, bool block = false) {
    auto b = offset_of(d.name.data());
    auto e = end_of(d, block);
    if (!b || !e) {
      why_not = "cannot place " + std::string(d.name.view()) + " at " + to_string(cfg.where(d));
      return;
    }
    edits[fi].push_back({*b, *e - *b, text});
  }
  // The directive with its first argument replaced by `arg0`, the others as written.
  void with_arg0(const config::directive& d, const std::string& arg0) {
    std::string text = std::string(d.name.view()) + " " + quote_token(arg0);
    for (std::size_t i = 1; i < d.args.size(); ++i) text += " " + std::string(d.args[i].raw());
    replace(d, text + ";");
  }
  // Text inserted right after the `{` of block directive `d`; `what` names it in why_not.
  void insert_in_block(const config::directive& d, const std::string& text,
                       const std::string& what) {
    auto open = end_of(d, false);
    if (!open) {
      why_not = "cannot place " + what + " at " + to_string(cfg.where(d));
      return;
    }
    edits[fi].push_back({*open + 1, 0, text});
  }
  void note(const config::directive& d, const std::string& what) {
    notes.push_back(std::string(d.name.view()) + " at " + to_string(cfg.where(d)) + ": " + what);
  }

  void edit_file(std::size_t file_index);
  bool edit_directive(const config::directive& d, const std::string& parent);
  bool hosts_to_loopback(const config::directive& d, const std::string& name);
  void translate_file(const config::directive& d, const std::string& name, const std::string& arg0);
  void paths_of_http(const config::directive& d);
  std::string temp_paths(const std::set<std::string>& set_here);
  std::string implied_wrapper();
  std::string first_line() const;
};

void config_mirror::edit_file(std::size_t file_index) {
  fi = file_index;
  // Each run of directives with the name of the block that holds it ("" at a file's top).
  std::vector<std::tuple<config::list<config::directive>, std::size_t, std::string>> todo{
      {cfg.files[fi].parsed, 0, ""}};
  while (!todo.empty() && why_not.empty()) {
    auto& [run, i, parent] = todo.back();
    if (i == run.size()) {
      todo.pop_back();
      continue;
    }
    const config::directive& d = run[i++];
    if (edit_directive(d, parent) && d.has_block && why_not.empty())
      todo.emplace_back(d.block, 0, std::string(d.name.view()));
  }
}

// Edits `d` as its policy says; false when its block (if any) is not walked (left out or
// replaced, or the mirror cannot be made).
bool config_mirror::edit_directive(const config::directive& d, const std::string& parent) {
  const std::string name(d.name.view());
  const std::string arg0 = d.args.empty() ? "" : std::string(d.args[0].value());
  const directive_policy& policy = whole_config_policy(name);
  if (name == "stream" && d.has_block) has_stream = true;
  if (policy.whole == in_whole_config::include_mirrored && !d.has_block && !d.lua) {
    std::string text;
    if (auto it = cfg.files[fi].includes.find(&d); it != cfg.files[fi].includes.end())
      for (auto idx : it->second)
        text += "include " + quote_token(for_nginx(mirror_of(idx))) + "; ";
    replace(d, text);
    return false;
  }
  if (d.lua || policy.whole == in_whole_config::code_left_out) {
    if (d.has_block && !d.lua) {
      why_not =
          name + " at " + to_string(cfg.where(d)) + " is a block the sandbox cannot leave out";
      return false;
    }
    replace(d, "", true);
    // A Lua block is code whatever its name: the reason of the code rows.
    note(d, "left out (" + std::string(whole_config_policy("lua").whole_reason) + ")");
    return false;
  }
  const bool upstream_server = name == "server" && !d.has_block && parent == "upstream";
  if ((upstream_server || policy.whole == in_whole_config::hosts_loopback) && !d.args.empty() &&
      !d.has_block && hosts_to_loopback(d, name))
    return false;
  switch (policy.whole) {
    case in_whole_config::module_left_out:
      loads_modules = true;
      [[fallthrough]];
    case in_whole_config::left_out:
      replace(d, "");
      if (!policy.whole_reason.empty())
        note(d, "left out (" + std::string(policy.whole_reason) + ")");
      return false;
    case in_whole_config::log_in_run:
      if ((name == "error_log" && !arg0.empty() && arg0 != "stderr" &&
           arg0.rfind("memory:", 0) != 0) ||
          (name == "access_log" && !arg0.empty() && arg0 != "off")) {
        with_arg0(d, for_nginx(write_dir + "/logs/log-" + std::to_string(++writable)));
        return false;
      }
      break;
    case in_whole_config::path_in_run:
      with_arg0(d, for_nginx(write_dir + "/path-" + std::to_string(++writable)));
      return false;
    case in_whole_config::unix_socket:
      if (arg0.rfind("unix:", 0) == 0) {
        // nginx -t creates the socket file: in the run directory, not where the config says.
        with_arg0(d, "unix:" + for_nginx(write_dir + "/sock-" + std::to_string(++writable)));
        return false;
      }
      break;
    case in_whole_config::file_translated:
      if (!arg0.empty() && arg0.find('$') == std::string::npos && arg0.rfind("data:", 0) != 0) {
        translate_file(d, name, arg0);
        return false;
      }
      break;
    case in_whole_config::server_block:
      if (auto it = standin_for_server.find({d.file, d.offset});
          d.has_block && it != standin_for_server.end()) {
        insert_in_block(d,
                        " ssl_certificate " + quote_token(for_nginx(it->second.first)) +
                            "; ssl_certificate_key " + quote_token(for_nginx(it->second.second)) +
                            ";",
                        "a stand-in certificate in the server");
        if (why_not.empty())
          note(d,
               "no ssl_certificate applies (nginx would refuse its `listen ... ssl`): tested "
               "with the sandbox's stand-in");
      }
      break;
    case in_whole_config::http_block:
      if (d.has_block) paths_of_http(d);
      break;
    default:
      break;
  }
  return true;
}

// Host names nginx resolves while it tests the config (an upstream's servers, a *_pass to a
// host that is no upstream's name, a resolver given by name): the sandbox's network has
// loopback only, so nginx -t would stop at the first ("host not found in upstream") and test
// nothing after it. Each stands as 127.0.0.1, listed in the notes. False when `d` names none.
bool config_mirror::hosts_to_loopback(const config::directive& d, const std::string& name) {
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
  if (hosts.empty()) return false;
  replace(d, text + ";");
  for (const auto& h : hosts)
    note(d, "host \"" + h +
                "\" stands as 127.0.0.1 (nginx resolves it while it tests the config, and the "
                "sandbox's network has loopback only)");
  return true;
}

// A file nginx reads: the server plans' copy or stand-in, else a copy made now, else left as
// configured (and listed: nginx may not read it here).
void config_mirror::translate_file(const config::directive& d, const std::string& name,
                                   const std::string& arg0) {
  if (arg0.rfind("engine:", 0) == 0) {
    why_not = name + " \"" + arg0 + "\" at " + to_string(cfg.where(d)) +
              " loads an OpenSSL engine (code)";
    return;
  }
  std::string path;
  if (auto it = sandbox_path_of.find({d.file, d.offset}); it != sandbox_path_of.end()) {
    path = it->second;
  } else {
    std::string real = arg0;
    if (real[0] != '/')
      real = fs::absolute(fs::path(cfg.conf_prefix) / real).lexically_normal().string();
    if (readable_file(real)) path = material.file_for_nginx(real, arg0);
    if (path.empty()) untranslated.insert(real);
  }
  if (!path.empty()) with_arg0(d, for_nginx(path));
}

// nginx creates the temp paths it was built with (/var/lib/nginx/...) when the config sets none:
// each one an http block (holding `set_here`) does not set points into the run directory.
std::string config_mirror::temp_paths(const std::set<std::string>& set_here) {
  std::string text;
  // Without an access_log nginx opens the one it was built with (/var/log/nginx/...).
  if (!set_here.count("access_log"))
    text += " access_log " + quote_token(for_nginx(write_dir + "/logs/access.log")) + ";";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    const std::string directive = std::string(t) + "_temp_path";
    if (set_here.count(directive)) continue;
    if (std::string(t) != "client_body" && !build.has_http_module(t)) continue;
    text += " " + directive + " " +
            quote_token(for_nginx(write_dir + "/path-" + std::to_string(++writable))) + ";";
  }
  return text;
}

void config_mirror::paths_of_http(const config::directive& d) {
  std::set<std::string> set_here;
  for (const auto& c : d.block) set_here.insert(std::string(c.name.view()));
  insert_in_block(d, temp_paths(set_here), "the temp paths in http");
}

// A site file, snippet or folder of site files is read inside blocks no file holds
// (config::implied_blocks, as lint reads it): a main file of the sandbox's own holds them, around
// includes of the mirrors, as the operator's nginx.conf holds the includes. Empty for a config
// read as a main file.
std::string config_mirror::implied_wrapper() {
  if (cfg.implied == config::implied_context::none) return {};
  std::set<std::uint32_t> included;  // reached through the file that includes them
  for (const auto& f : cfg.files)
    for (const auto& [d, targets] : f.includes) included.insert(targets.begin(), targets.end());
  // A block the loader added: its name is not a view into any file's text.
  auto implied = [&](const config::directive& d) {
    const std::string_view text = cfg.files[d.file].content;
    return d.name.data() < text.data() || d.name.data() >= text.data() + text.size();
  };
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
            out += "include " + quote_token(for_nginx(mirror_of(d.file))) + ";\n";
          }
        }
        return out;
      };
  bool events = false;
  for (const auto& d : cfg.root) events = events || d.name.view() == "events";
  return (events ? "" : "events {}\n") + body(cfg.root);
}

// What the main file's first line gains (no line number changes): what the sandbox sets for
// every nginx it runs, pid and lock file in the run directory, and the build's own stream module
// when the config has stream servers and the build has it as a dynamic module.
std::string config_mirror::first_line() const {
  std::string first = "pid " + quote_token(for_nginx(write_dir + "/nginx.pid")) + "; lock_file " +
                      quote_token(for_nginx(write_dir + "/nginx.lock")) + "; ";
  if (has_stream && build.stream_is_dynamic() && trusted_module(build.stream_module_file()))
    first += "load_module " + quote_token(build.stream_module_file()) + "; ";
  return first;
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

namespace {

// nginx's words of the whole-config test in the operator's terms.
struct whole_config_words {
  const config::config& cfg;
  const run_material& material;
  std::map<std::string, std::string> original_of;  ///< mirror file -> the operator's file

  // Mirrors as the operator's files, copies as the configured text.
  std::string operator_words(std::string text) const {
    for (const auto& [mirror, original] : original_of) text = replace_all(text, mirror, original);
    return material.in_configured_terms(text);
  }
  // nginx's log line -> its message and the operator's location (none when nginx names a file
  // that is not a mirror).
  std::string split(const config::nginx_log_line& l, source_location& where) const {
    const auto original = original_of.find(l.file);
    if (original == original_of.end()) return operator_words(config::message_with_place(l));
    where.file = original->second;
    where.line = l.line;
    where.column = column_at(where, l.message);
    return operator_words(l.message);
  }
  // The column of the directive at `where`'s line, as lint locates it: the one whose name nginx
  // quotes in `msg`, else the first.
  std::uint32_t column_at(const source_location& where, const std::string& msg) const {
    std::vector<config::list<config::directive>> todo{cfg.root};
    std::uint32_t first = 0, quoted = 0;
    while (!todo.empty() && quoted == 0) {
      auto run = todo.back();
      todo.pop_back();
      for (const auto& d : run) {
        if (d.line == where.line) {
          auto w = cfg.where(d);
          if (w.same_line(where)) {
            if (first == 0 || w.column < first) first = w.column;
            if (msg.find("\"" + std::string(d.name.view()) + "\"") != std::string::npos)
              quoted = w.column;
          }
        }
        if (d.has_block) todo.push_back(d.block);
      }
    }
    return quoted ? quoted : first;
  }
};

// Why an [emerg] of the whole-config test is the sandbox's doing rather than the config's, or "".
std::string sandbox_made_it_fail(const std::string& msg, const config_mirror& mirror) {
  if (msg.find("host not found") != std::string::npos)
    return "nginx resolves host names while it tests a config, and the sandbox's network has "
           "loopback only";
  if (msg.rfind("unknown directive", 0) == 0 && mirror.loads_modules)
    return "the config loads modules (load_module) that the sandbox does not load, and this "
           "directive may come from one of them";
  if (msg.find("Address already in use") != std::string::npos)
    return "a port the config listens on is taken by the sandbox's own nginx";
  if (msg.find("Permission denied") != std::string::npos ||
      msg.find("No such file or directory") != std::string::npos)
    return "nginx, run as the sandbox's unprivileged user, cannot open a file the config names";
  std::string why;
  for (const auto& u : mirror.untranslated)
    if (msg.find(u) != std::string::npos) why = "nginx cannot read " + u + " in the sandbox";
  return why;
}

}  // namespace

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
  if (auto why = host_unsafe_for_whole_config(); !why.empty()) return skip(why);
  const config::config& cfg = *m.cfg;
  config_mirror mirror{cfg,
                       material_,
                       build_,
                       sandbox_path_of_,
                       standin_for_server_,
                       run_dir_ + "/material/whole",
                       inst_dirs_.front() + "/whole"};
  fs::create_directories(mirror.mirror_dir);
  fs::create_directories(mirror.write_dir + "/logs");
  whole_config_words words{cfg, material_, {}};
  for (std::size_t i = 0; i < cfg.files.size(); ++i)
    words.original_of[mirror.mirror_of(i)] = cfg.files[i].path;
  mirror.upstream_names = upstream_names_of(cfg);
  mirror.edits.resize(cfg.files.size());
  for (std::size_t fi = 0; fi < cfg.files.size() && mirror.why_not.empty(); ++fi)
    mirror.edit_file(fi);
  whole_.notes = mirror.notes;
  if (!mirror.why_not.empty()) return skip(mirror.why_not + ": the whole config is not tested");
  const std::string wrapper = mirror.implied_wrapper();
  const std::string main_file =
      wrapper.empty() ? mirror.mirror_of(0) : mirror.mirror_dir + "/main.conf";
  if (wrapper.empty()) {
    mirror.edits[0].push_back({0, 0, mirror.first_line()});
  } else {
    std::ofstream out(main_file, std::ios::binary | std::ios::trunc);
    out << mirror.first_line() << "\n" << wrapper;
    if (!out) return skip("cannot write the mirrored config in the run directory");
  }
  for (std::size_t i = 0; i < cfg.files.size(); ++i) {
    std::ofstream out(mirror.mirror_of(i), std::ios::binary | std::ios::trunc);
    out << config::apply_edits(cfg.files[i].content, mirror.edits[i],
                               config::replaced_newlines::kept);
    if (!out) return skip("cannot write the mirrored config in the run directory");
  }
  hand_over();
  const auto r =
      run_command({build_.binary, "-t", "-p", material_.path_for_nginx(mirror.write_dir) + "/",
                   "-e", material_.path_for_nginx(mirror.write_dir + "/logs/error.log"), "-c",
                   material_.path_for_nginx(main_file)},
                  60000, setup());
  const std::string err = material_.paths_from_nginx(r.err.empty() ? r.out : r.err);
  std::optional<config::nginx_log_line> emerg;
  for (auto& logged : config::parse_nginx_log_lines(err)) {
    if (logged.level == "warn" && whole_.warnings.size() < 256) {
      sandbox_warning w;
      w.message = words.split(logged, w.where);
      // A listen line: the port it names, for the judges that compare ports.
      for (const auto& s : m.servers)
        for (const auto& ld : s.listens)
          if (ld.where && cfg.where(*ld.where).same_line(w.where)) w.port = ld.port;
      whole_.warnings.push_back(std::move(w));
    }
    if (logged.level == "emerg" && !emerg) emerg = std::move(logged);
  }
  if (r.exit_code == 0) {
    whole_.result = whole_config_test::outcome::passed;
    return;
  }
  if (!emerg) {
    whole_.result = whole_config_test::outcome::not_testable;
    whole_.message = "nginx -t failed (exit " + std::to_string(r.exit_code) +
                     ") without an [emerg] line: " + words.operator_words(err);
    return;
  }
  source_location where;
  whole_.message = words.split(*emerg, where);
  whole_.where = where;
  // What the sandbox changed, not the config, can make nginx stop: not nginx's verdict.
  whole_.reason = sandbox_made_it_fail(whole_.message, mirror);
  whole_.result = whole_.reason.empty() ? whole_config_test::outcome::rejected
                                        : whole_config_test::outcome::not_testable;
}

}  // namespace ngxtls::sandbox
