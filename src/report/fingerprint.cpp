#include "report/fingerprint.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "tls/openssl_ptr.hpp"

namespace ngxtls::report {

namespace {

namespace fs = std::filesystem;

// A directive's name and arguments (nginx's unescaped values) joined by single spaces: the
// layout of the line and its quoting do not change the place.
std::string directive_text(const config::directive& d) {
  std::string out(d.name.view());
  for (const auto& a : d.args) {
    out += ' ';
    out += a.value();
  }
  return out;
}

// The block's part of a block path: `server` is named by its server_names (two servers of a
// file are told apart by them), other blocks by their name and arguments.
std::string block_label(const config::directive& d) {
  if (d.name != "server" || !d.args.empty()) return directive_text(d);
  std::string names;
  for (const auto& c : d.block)
    if (c.name == "server_name")
      for (const auto& a : c.args) (names += names.empty() ? "" : " ") += a.value();
  return names.empty() ? "server" : "server(" + names + ")";
}

}  // namespace

void place_index::want(const source_location& loc) {
  wanted_[loc.file].insert(loc.line);
}

void place_index::add(const config::config& cfg) {
  for (const auto& file : cfg.files) {
    const auto w = wanted_.find(file.path);
    if (w == wanted_.end()) continue;
    const auto& wanted_lines = w->second;
    auto& lines = files_[file.path];
    if (!lines.empty()) continue;
    // Iterative walk: a deeply nested config must not exhaust the stack.
    struct frame {
      const config::directive* it;
      const config::directive* end;
      std::string path;
    };
    std::vector<frame> stack{{file.parsed.begin(), file.parsed.end(), ""}};
    while (!stack.empty()) {
      frame& top = stack.back();
      if (top.it == top.end) {
        stack.pop_back();
        continue;
      }
      const config::directive& d = *top.it++;
      if (wanted_lines.count(d.line))
        lines[d.line].push_back({d.column, top.path + directive_text(d)});
      if (d.has_block && !d.block.empty()) {
        std::string path = top.path + block_label(d) + " > ";
        stack.push_back({d.block.begin(), d.block.end(), std::move(path)});
      }
    }
    for (auto& [line, entries] : lines)
      std::sort(entries.begin(), entries.end(),
                [](const entry& a, const entry& b) { return a.column < b.column; });
  }
}

std::string place_index::place(const source_location& loc) const {
  std::string out;
  append_place(loc, out);
  return out;
}

void place_index::append_place(const source_location& loc, std::string& out) const {
  auto f = files_.find(loc.file);
  if (f == files_.end()) return;
  auto l = f->second.find(loc.line);
  if (l == f->second.end() || l->second.empty()) return;
  const entry* best = &l->second.front();
  for (const auto& e : l->second)
    if (e.column <= loc.column) best = &e;
  out += best->text;
}

std::string project_path(const std::string& file, const std::string& project_root) {
  if (file.empty()) return file;
  std::error_code ec;
  const fs::path abs = fs::absolute(file, ec).lexically_normal();
  if (ec) return file;
  if (!project_root.empty()) {
    const fs::path rel = abs.lexically_relative(fs::path(project_root).lexically_normal());
    if (!rel.empty() && rel.native().rfind("..", 0) != 0) return rel.generic_string();
  }
  return abs.generic_string();
}

std::vector<std::vector<std::string>> fingerprints(const std::vector<engine::finding>& findings,
                                                   const place_index& places,
                                                   const std::string& project_root) {
  std::vector<std::vector<std::string>> out(findings.size());
  // Places are counted by the SHA-256 of their key: equal keys have equal digests, and a
  // digest is 32 bytes where a key holds a whole block path (a map of the keys cost more
  // than the findings on a config with 100,000s of places).
  std::unordered_map<std::string, std::size_t> seen;
  std::unordered_map<std::string, std::string> path_of;  // a file's project path, worked out once
  std::string key;
  // SHA-256 fetched and its context made once: per place they cost more than the digest.
  const tls::ossl_ptr<EVP_MD, EVP_MD_free> sha256(EVP_MD_fetch(nullptr, "SHA256", nullptr));
  const tls::ossl_ptr<EVP_MD_CTX, EVP_MD_CTX_free> md_ctx(EVP_MD_CTX_new());
  if (!sha256 || !md_ctx) throw std::runtime_error("fingerprints: SHA-256 is not available");
  auto one = [&](const engine::finding& f, const source_location& loc) {
    auto p = path_of.find(loc.file);
    if (p == path_of.end())
      p = path_of.emplace(loc.file, project_path(loc.file, project_root)).first;
    key = f.rule;
    ((key += '\0') += p->second) += '\0';
    places.append_place(loc, key);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_DigestInit_ex2(md_ctx.get(), sha256.get(), nullptr) ||
        !EVP_DigestUpdate(md_ctx.get(), key.data(), key.size()) ||
        !EVP_DigestFinal_ex(md_ctx.get(), digest, &n))
      throw std::runtime_error("fingerprints: SHA-256 failed");
    const std::size_t k =
        ++seen[std::string(reinterpret_cast<const char*>(digest), static_cast<std::size_t>(n))];
    return tls::to_hex(digest, n) + ":" + std::to_string(k);
  };
  for (std::size_t i = 0; i < findings.size(); ++i) {
    out[i].reserve(1 + findings[i].also_at.size());
    out[i].push_back(one(findings[i], findings[i].location));
    for (const auto& at : findings[i].also_at) out[i].push_back(one(findings[i], at));
  }
  return out;
}

}  // namespace ngxtls::report
