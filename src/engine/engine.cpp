#include "engine/engine.hpp"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "engine/file_facts.hpp"

namespace ngxtls::engine {

context::context(const model::model& m, const lint_options& opts)
    : m_(m), opts_(opts), files_(std::make_unique<file_facts>()) {}
context::~context() = default;

std::string context::resolve(const std::string& path) const {
  if (path.empty() || path[0] == '/' || !m_.cfg) return path;
  std::filesystem::path p = std::filesystem::path(m_.cfg->conf_prefix) / path;
  return p.lexically_normal().string();
}

source_location context::where(const config::directive* d) const {
  if (!d || !m_.cfg) return {};
  return m_.cfg->where(*d);
}

finding context::make(const std::string& rule, severity level, std::string message,
                      const config::directive* where_d) const {
  finding f;
  f.rule = rule;
  f.level = level;
  f.message = std::move(message);
  if (where_d && m_.cfg) {
    f.location = m_.cfg->where(*where_d);
    f.include_chain = m_.cfg->chain_of(*where_d);
  } else if (m_.cfg && !m_.cfg->files.empty()) {
    f.location = {m_.cfg->files[0].path, 1, 1};
  }
  return f;
}

namespace {

// The text of 1-based line `n` of `content`, or "" past the end.
std::string_view line_of(std::string_view content, std::uint32_t n) {
  std::size_t start = 0;
  for (std::uint32_t i = 1; i < n; ++i) {
    auto nl = content.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  auto end = content.find('\n', start);
  return content.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// `# ngxtls: ignore a-rule, other-rule -- reason` names the rules it silences.
bool line_suppresses(std::string_view line, const std::string& rule) {
  auto p = line.find("ngxtls: ignore");
  if (p == std::string_view::npos) return false;
  auto hash = line.rfind('#', p);
  if (hash == std::string_view::npos) return false;
  std::string_view rest = line.substr(p + 14);
  if (auto dash = rest.find("--"); dash != std::string_view::npos) rest = rest.substr(0, dash);
  std::size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == ',' || rest[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != ',' && rest[j] != '\t' && rest[j] != '\r') ++j;
    if (j > i && rest.substr(i, j - i) == rule) return true;
    i = j;
  }
  return false;
}

bool suppressed(const model::model& m, const finding& f) {
  if (!m.cfg || f.location.line == 0) return false;
  for (const auto& file : m.cfg->files) {
    if (file.path != f.location.file) continue;
    if (line_suppresses(line_of(file.content, f.location.line), f.rule)) return true;
    if (f.location.line > 1 && line_suppresses(line_of(file.content, f.location.line - 1), f.rule))
      return true;
    return false;
  }
  return false;
}

}  // namespace

std::vector<finding> run(const model::model& m, const lint_options& opts) {
  context ctx(m, opts);
  std::vector<finding> out;
  for (const auto& r : all_rules()) {
    if (opts.select && !opts.select->count(r.id)) continue;
    if (opts.ignore.count(r.id)) continue;
    std::vector<finding> found;
    r.check(ctx, found);
    for (auto& f : found) {
      if (suppressed(m, f)) continue;
      if (auto it = opts.severity_overrides.find(f.rule); it != opts.severity_overrides.end())
        f.level = it->second;
      out.push_back(std::move(f));
    }
  }
  auto key = [](const finding& f) {
    return std::tie(f.location.file, f.location.line, f.location.column, f.rule, f.message);
  };
  std::stable_sort(out.begin(), out.end(), [&](const finding& a, const finding& b) { return key(a) < key(b); });
  out.erase(std::unique(out.begin(), out.end(), [&](const finding& a, const finding& b) { return key(a) == key(b); }),
            out.end());
  return out;
}

const rule* find_rule(const std::string& id) {
  for (const auto& r : all_rules())
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace ngxtls::engine
