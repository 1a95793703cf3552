#include "engine/project_config.hpp"

#include <filesystem>
#include <toml.hpp>

#include "base/error.hpp"
#include "engine/engine.hpp"

namespace ngxtls::engine {

namespace fs = std::filesystem;

std::optional<std::string> find_project_config(const std::string& start_dir) {
  std::error_code ec;
  fs::path dir = fs::absolute(start_dir, ec);
  while (!dir.empty()) {
    fs::path candidate = dir / ".ngxtls.toml";
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

namespace {

[[noreturn]] void fail(const std::string& file, const toml::value& at, const std::string& msg) {
  auto loc = at.location();
  throw input_error({file, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())}, msg);
}

std::string as_string(const std::string& file, const toml::value& v, const std::string& key) {
  if (!v.is_string()) fail(file, v, "\"" + key + "\" must be a string");
  return v.as_string().str;
}

std::vector<std::string> as_strings(const std::string& file, const toml::value& v, const std::string& key) {
  if (!v.is_array()) fail(file, v, "\"" + key + "\" must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : v.as_array()) out.push_back(as_string(file, e, key));
  return out;
}

std::string known_rule(const std::string& file, const toml::value& at, const std::string& id) {
  if (!find_rule(id)) fail(file, at, "unknown rule \"" + id + "\"");
  return id;
}

}  // namespace

project_config load_project_config(const std::string& path) {
  toml::value root;
  try {
    root = toml::parse(path);
  } catch (const toml::syntax_error& e) {
    auto loc = e.location();
    throw input_error({path, static_cast<std::uint32_t>(loc.line()), static_cast<std::uint32_t>(loc.column())},
                      "TOML syntax error");
  } catch (const std::runtime_error& e) {
    throw input_error({path, 0, 0}, e.what());
  }
  project_config pc;
  pc.path = path;
  const fs::path base = fs::absolute(path).parent_path();
  for (const auto& [key, v] : root.as_table()) {
    if (key == "nginx_version") pc.nginx_version = as_string(path, v, key);
    else if (key == "openssl_version") pc.openssl_version = as_string(path, v, key);
    else if (key == "strict_files") {
      if (!v.is_boolean()) fail(path, v, "\"strict_files\" must be true or false");
      pc.strict_files = v.as_boolean();
    } else if (key == "select") {
      std::set<std::string> s;
      for (const auto& id : as_strings(path, v, key)) s.insert(known_rule(path, v, id));
      pc.select = s;
    } else if (key == "ignore") {
      for (const auto& id : as_strings(path, v, key)) pc.ignore.insert(known_rule(path, v, id));
    } else if (key == "severity") {
      if (!v.is_table()) fail(path, v, "[severity] must be a table of rule = \"error|warning|note\"");
      for (const auto& [rid, sv] : v.as_table()) {
        known_rule(path, sv, rid);
        auto s = parse_severity(as_string(path, sv, rid));
        if (!s) fail(path, sv, "severity must be \"error\", \"warning\" or \"note\"");
        pc.severity_overrides[rid] = *s;
      }
    } else if (key == "fleet") {
      if (!v.is_table()) fail(path, v, "[fleet] must be a table with configs = [...]");
      for (const auto& [fk, fv] : v.as_table()) {
        if (fk != "configs") fail(path, fv, "unknown key \"fleet." + fk + "\"");
        for (const auto& c : as_strings(path, fv, "configs"))
          pc.fleet.push_back(fs::path(c).is_absolute() ? c : (base / c).lexically_normal().string());
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
        if (lv.is_integer()) rate = static_cast<double>(lv.as_integer());
        else if (lv.is_floating()) rate = lv.as_floating();
        else fail(path, lv, "\"load.new_sessions_per_second\" must be a number");
        if (!(rate > 0)) fail(path, lv, "\"load.new_sessions_per_second\" must be above 0");
        pc.new_sessions_per_second = rate;
      }
    } else {
      fail(path, v, "unknown key \"" + key + "\"");
    }
  }
  return pc;
}

}  // namespace ngxtls::engine
