#include "engine/project_config.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <toml.hpp>

#include "base/error.hpp"
#include "base/suggest.hpp"
#include "engine/engine.hpp"
#include "tls/errors.hpp"
#include "tls/file_read.hpp"

namespace ngxtls::engine {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> user_home() {
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h);
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) return std::string(pw->pw_dir);
  return std::nullopt;
}

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Why `st` (the file, its symlink, or its directory) cannot be trusted, or "".
std::string distrust(const struct stat& st, const char* what, bool directory) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return std::string(what) + " is owned by uid " + std::to_string(st.st_uid) +
           ", not by you (uid " + std::to_string(me) + ") or root";
  if ((st.st_mode & S_IWOTH) && !(directory && (st.st_mode & S_ISVTX)))
    return std::string(what) + " is writable by others (mode " + octal_mode(st.st_mode) + ")";
  return {};
}

}  // namespace

project_config_search find_project_config(const std::string& start_dir,
                                          std::optional<std::string> home_dir) {
  if (!home_dir) home_dir = user_home();
  std::error_code ec;
  fs::path home = home_dir ? fs::weakly_canonical(*home_dir, ec) : fs::path();
  if (ec) home.clear();
  fs::path dir = fs::absolute(start_dir, ec).lexically_normal();
  project_config_search out;
  while (!dir.empty()) {
    const fs::path candidate = dir / ".ngxtls.toml";
    struct stat link {
    }, file{}, parent{};
    if (::lstat(candidate.c_str(), &link) == 0 && ::stat(candidate.c_str(), &file) == 0 &&
        S_ISREG(file.st_mode)) {
      // A symlink's own mode is always 0777 and means nothing: its owner and its target count.
      std::string why;
      if (S_ISLNK(link.st_mode)) {
        struct stat owner_only = link;
        owner_only.st_mode &= ~static_cast<mode_t>(S_IWOTH);
        why = distrust(owner_only, "the symlink", false);
        if (why.empty()) why = distrust(file, "the file it links to", false);
      } else {
        why = distrust(link, "the file", false);
      }
      if (why.empty() && ::stat(dir.c_str(), &parent) == 0)
        why = distrust(parent, "its directory", true);
      if (why.empty())
        out.path = candidate.string();
      else
        out.ignored = candidate.string() + ": " + why;
      return out;
    }
    // The nearest one is there but is no file to read (a FIFO would block, a dangling link
    // reads nothing): say so and stop, rather than go on to a parent's file unannounced.
    if (::lstat(candidate.c_str(), &link) == 0) {
      const bool target = ::stat(candidate.c_str(), &file) == 0;
      out.ignored = candidate.string() + ": " +
                    (!target                  ? "a symlink to nothing"
                     : S_ISDIR(file.st_mode)  ? "a directory, not a file"
                     : S_ISFIFO(file.st_mode) ? "a FIFO, not a regular file"
                                              : "not a regular file");
      return out;
    }
    // A repository's root or the user's home ends the search: a parent beyond them is not
    // the project's, and may be anyone's (/tmp).
    if (fs::exists(dir / ".git", ec) || (!home.empty() && dir == home)) break;
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return out;
}

[[noreturn]] void toml_fail(const std::string& file, const toml::value& at,
                            const std::string& msg) {
  auto loc = at.location();
  throw input_error(
      {file, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())},
      msg);
}

std::string toml_string(const std::string& file, const toml::value& v, const std::string& key) {
  if (!v.is_string()) toml_fail(file, v, "\"" + key + "\" must be a string");
  return v.as_string().str;
}

namespace {

[[noreturn]] void fail(const std::string& file, const toml::value& at, const std::string& msg) {
  toml_fail(file, at, msg);
}

std::string as_string(const std::string& file, const toml::value& v, const std::string& key) {
  return toml_string(file, v, key);
}

model::version as_version(const std::string& file, const toml::value& v, const std::string& key,
                          const std::string& what) {
  const std::string text = as_string(file, v, key);
  auto parsed = model::version::parse_given(text);
  if (!parsed) fail(file, v, model::unreadable_version(what, text));
  return *parsed;
}

std::vector<std::string> as_strings(const std::string& file, const toml::value& v,
                                    const std::string& key) {
  if (!v.is_array()) fail(file, v, "\"" + key + "\" must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : v.as_array()) out.push_back(as_string(file, e, key));
  return out;
}

std::string known_rule(const rule_catalog& catalog, const std::string& file, const toml::value& at,
                       const std::string& id) {
  if (!find_rule(catalog, id))
    fail(file, at, "unknown rule \"" + id + "\"" + did_you_mean(id, ids_of(catalog)));
  return id;
}

// The top-level keys load_project_config() reads, for "did you mean".
const std::vector<std::string> top_level_keys = {
    "nginx_version", "openssl_version", "strict_files", "select",  "ignore",
    "severity",      "fleet",           "expiry_days",  "modules", "load"};

}  // namespace

// Strings and comments are skipped as TOML reads them.
void check_toml_nesting(const std::string& path, const std::string& text) {
  std::uint32_t line = 1, col = 0;
  std::size_t depth = 0, parts = 1;
  std::vector<char> open;  // '[' or '{' for each open array or inline table
  bool key = true;         // reading a key (line start, table header, after '{' or ',' in one)
  auto too_deep = [&](const char* what) {
    throw input_error({path, line, col}, std::string(what) + " deeper than the limit of " +
                                             std::to_string(max_project_config_nesting) +
                                             " (max_project_config_nesting)");
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++col;
    if (c == '\n') {
      ++line;
      col = 0;
      if (open.empty()) key = true, parts = 1;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      std::size_t j = i + (multi ? 3 : 1);
      while (j < text.size()) {
        if (c == '"' && text[j] == '\\') {
          j += 2;
          continue;
        }
        if (!multi && text[j] == '\n') break;
        if (text[j] == c && (!multi || text.compare(j, 3, std::string(3, c)) == 0)) {
          j += multi ? 3 : 1;
          break;
        }
        if (text[j] == '\n') ++line, col = 0;
        ++j;
      }
      col += static_cast<std::uint32_t>(j - i - 1);
      i = j - 1;
    } else if (key && c == '.') {
      if (++parts > max_project_config_nesting) too_deep("a dotted key or table header nested");
    } else if (key && c == '=') {
      key = false;
    } else if (c == '[' || c == '{') {
      if (key && c == '[' && open.empty()) continue;  // a table header: its dots are counted
      open.push_back(c);
      if (++depth > max_project_config_nesting) too_deep("arrays and inline tables nested");
      key = c == '{';
      if (key) parts = 1;
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
      --depth;
      key = false;
    } else if (c == ',' && !open.empty() && open.back() == '{') {
      key = true;
      parts = 1;
    }
  }
}

project_config load_project_config(const std::string& path, const rule_catalog& catalog) {
  toml::value root;
  std::string text;
  try {
    // Never a blocking open or read (a FIFO at the path), never an unbounded one.
    text = tls::read_file_bounded(path, max_project_config_bytes);
  } catch (const tls::file_error& e) {
    std::string why = e.reason();
    if (why.rfind("larger than", 0) == 0) why += " (max_project_config_bytes)";
    throw input_error({path, 0, 0}, why);
  }
  check_toml_nesting(path, text);
  try {
    std::istringstream in(text);
    root = toml::parse(in, path);
  } catch (const toml::syntax_error& e) {
    auto loc = e.location();
    throw input_error(
        {path, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())},
        "TOML syntax error");
  } catch (const std::runtime_error& e) {
    throw input_error({path, 0, 0}, e.what());
  }
  project_config pc;
  pc.path = path;
  const fs::path base = fs::absolute(path).parent_path();
  for (const auto& [key, v] : root.as_table()) {
    if (key == "nginx_version")
      pc.nginx_version = as_version(path, v, key, "nginx");
    else if (key == "openssl_version")
      pc.openssl_version = as_version(path, v, key, "OpenSSL");
    else if (key == "strict_files") {
      if (!v.is_boolean()) fail(path, v, "\"strict_files\" must be true or false");
      pc.strict_files = v.as_boolean();
    } else if (key == "select") {
      std::set<std::string> s;
      for (const auto& id : as_strings(path, v, key)) s.insert(known_rule(catalog, path, v, id));
      pc.select = s;
    } else if (key == "ignore") {
      for (const auto& id : as_strings(path, v, key))
        pc.ignore.insert(known_rule(catalog, path, v, id));
    } else if (key == "severity") {
      if (!v.is_table())
        fail(path, v, "[severity] must be a table of rule = \"error|warning|note\"");
      for (const auto& [rid, sv] : v.as_table()) {
        // Its keys are rule ids: a key that is none is an unknown key of the table.
        if (!find_rule(catalog, rid))
          fail(path, sv,
               "unknown key \"severity." + rid + "\": [severity] keys are rule ids" +
                   did_you_mean(rid, ids_of(catalog)) + " (see `ngxtls rules`)");
        auto s = parse_severity(as_string(path, sv, rid));
        if (!s) fail(path, sv, "severity must be \"error\", \"warning\" or \"note\"");
        pc.severity_overrides[rid] = *s;
      }
    } else if (key == "fleet") {
      if (!v.is_table()) fail(path, v, "[fleet] must be a table with configs = [...]");
      for (const auto& [fk, fv] : v.as_table()) {
        if (fk != "configs") fail(path, fv, "unknown key \"fleet." + fk + "\"");
        for (const auto& c : as_strings(path, fv, "configs"))
          pc.fleet.push_back(fs::path(c).is_absolute() ? c
                                                       : (base / c).lexically_normal().string());
      }
    } else if (key == "expiry_days") {
      if (!v.is_integer() || v.as_integer() < 0 || v.as_integer() > 3650)
        fail(path, v, "\"expiry_days\" must be a whole number of days from 0 to 3650");
      pc.expiry_days = static_cast<int>(v.as_integer());
    } else if (key == "modules") {
      for (const auto& mod : as_strings(path, v, key)) pc.modules.insert(mod);
    } else if (key == "load") {
      if (!v.is_table()) fail(path, v, "[load] must be a table with new_sessions_per_second = N");
      for (const auto& [lk, lv] : v.as_table()) {
        if (lk != "new_sessions_per_second") fail(path, lv, "unknown key \"load." + lk + "\"");
        double rate = 0;
        if (lv.is_integer())
          rate = static_cast<double>(lv.as_integer());
        else if (lv.is_floating())
          rate = lv.as_floating();
        else
          fail(path, lv, "\"load.new_sessions_per_second\" must be a number");
        if (!(rate > 0)) fail(path, lv, "\"load.new_sessions_per_second\" must be above 0");
        pc.new_sessions_per_second = rate;
      }
    } else {
      fail(path, v, "unknown key \"" + key + "\"" + did_you_mean(key, top_level_keys));
    }
  }
  return pc;
}

}  // namespace ngxtls::engine
