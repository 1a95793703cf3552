#include "report/fingerprint.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "tls/openssl_ptr.hpp"

namespace ngxtls::report {

namespace {

namespace fs = std::filesystem;

// A place key's SHA-256, and a hash of it for the count of places seen (a digest is already
// uniform: its first bytes do).
using digest_key = std::array<unsigned char, 32>;
struct digest_hash {
  std::size_t operator()(const digest_key& d) const noexcept {
    std::size_t h;
    std::memcpy(&h, d.data(), sizeof h);
    return h;
  }
};

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
  // Findings come sorted by place: most follow one of their own file.
  if (!last_wanted_ || !loc.file.same_string(last_wanted_file_)) {
    last_wanted_ = &wanted_[loc.file];
    last_wanted_file_ = loc.file;
  }
  last_wanted_->insert(loc.line);
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

const place_index::entry* place_index::best_entry(const file_lines& lines,
                                                  const source_location& loc) {
  auto l = lines.find(loc.line);
  if (l == lines.end() || l->second.empty()) return nullptr;
  const entry* best = &l->second.front();
  for (const auto& e : l->second)
    if (e.column <= loc.column) best = &e;
  return best;
}

void place_index::append_place(const source_location& loc, std::string& out) const {
  auto f = files_.find(loc.file);
  if (f == files_.end()) return;
  if (const entry* e = best_entry(f->second, loc)) out += e->text;
}

void place_index::cursor::append_place(const source_location& loc, std::string& out) {
  if (!looked_ || !loc.file.same_string(file_) || file_.empty()) {
    auto f = index_.files_.find(loc.file);
    lines_ = f == index_.files_.end() ? nullptr : &f->second;
    file_ = loc.file;
    looked_ = true;
  }
  if (!lines_) return;
  if (const entry* e = best_entry(*lines_, loc)) out += e->text;
}

namespace {

// True for an absolute path with no empty, "." or ".." segment: lexically_normal() would
// return it unchanged.
bool plainly_absolute(std::string_view p) {
  if (p.empty() || p.front() != '/') return false;
  for (std::size_t i = 0; i < p.size();) {
    const std::size_t end = std::min(p.find('/', i + 1), p.size());
    const std::string_view seg = p.substr(i + 1, end - i - 1);
    if (seg.empty() || seg == "." || seg == "..") return false;
    i = end;
  }
  return true;
}

}  // namespace

std::string project_path(const std::string& file, const std::string& project_root) {
  if (file.empty()) return file;
  // Most paths are absolute and clean, under a clean root: the same answer by string, without
  // std::filesystem's per-segment copies (14,000 files per run on a large config).
  if (plainly_absolute(file) && (project_root.empty() || plainly_absolute(project_root))) {
    if (file == project_root) return ".";
    if (!project_root.empty() && file.size() > project_root.size() &&
        file.compare(0, project_root.size(), project_root) == 0 &&
        file[project_root.size()] == '/' && file.compare(project_root.size() + 1, 2, "..") != 0)
      return file.substr(project_root.size() + 1);
    return file;  // outside the root: its relative form would start with ".."
  }
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
  // than the findings on a config with 100,000s of places). The digests are made on up to 4
  // threads, each over a run of findings; the counts, which follow findings' order, after.
  std::vector<std::size_t> first_place(findings.size() + 1, 0);  // index into `digests`
  for (std::size_t i = 0; i < findings.size(); ++i)
    first_place[i + 1] = first_place[i] + 1 + findings[i].also_at.size();
  std::vector<digest_key> digests(first_place.back());
  // SHA-256 fetched once: per place it cost more than the digest.
  const tls::ossl_ptr<EVP_MD, EVP_MD_free> sha256(EVP_MD_fetch(nullptr, "SHA256", nullptr));
  if (!sha256) throw std::runtime_error("fingerprints: SHA-256 is not available");
  auto digest_run = [&](std::size_t begin, std::size_t end) {
    const tls::ossl_ptr<EVP_MD_CTX, EVP_MD_CTX_free> md_ctx(EVP_MD_CTX_new());
    if (!md_ctx) throw std::runtime_error("fingerprints: SHA-256 is not available");
    place_index::cursor lookup(places);
    std::unordered_map<std::string, std::string> path_of;  // project path, once per file
    // The last file's project path: places come sorted by file, so most repeat it.
    file_path last_file;
    const std::string* last_path = nullptr;
    std::string key;
    auto one = [&](const engine::finding& f, const source_location& loc, digest_key& digest) {
      if (!last_path || !loc.file.same_string(last_file)) {
        auto p = path_of.find(loc.file);
        if (p == path_of.end())
          p = path_of.emplace(loc.file, project_path(loc.file, project_root)).first;
        last_file = loc.file;
        last_path = &p->second;
      }
      key = f.rule;
      ((key += '\0') += *last_path) += '\0';
      lookup.append_place(loc, key);
      unsigned int n = 0;
      if (!EVP_DigestInit_ex2(md_ctx.get(), sha256.get(), nullptr) ||
          !EVP_DigestUpdate(md_ctx.get(), key.data(), key.size()) ||
          !EVP_DigestFinal_ex(md_ctx.get(), digest.data(), &n) || n != digest.size())
        throw std::runtime_error("fingerprints: SHA-256 failed");
    };
    for (std::size_t i = begin; i < end; ++i) {
      digest_key* d = &digests[first_place[i]];
      one(findings[i], findings[i].location, *d++);
      for (const auto& at : findings[i].also_at) one(findings[i], at, *d++);
    }
  };
  const std::size_t threads =
      findings.size() < 4096 ? 1 : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  {
    std::vector<std::exception_ptr> failed(threads);
    std::vector<std::jthread> pool;
    // Runs of about as many places each.
    auto split = [&](std::size_t t) {
      const std::size_t target = first_place.back() * t / threads;
      return static_cast<std::size_t>(
          std::lower_bound(first_place.begin(), first_place.end() - 1, target) -
          first_place.begin());
    };
    for (std::size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          digest_run(split(t), t + 1 == threads ? findings.size() : split(t + 1));
        } catch (...) {
          failed[t] = std::current_exception();
        }
      });
    pool.clear();  // joins
    for (const auto& e : failed)
      if (e) std::rethrow_exception(e);
  }
  std::unordered_map<digest_key, std::size_t, digest_hash> seen;
  seen.reserve(digests.size());
  for (std::size_t i = 0; i < findings.size(); ++i) {
    out[i].reserve(first_place[i + 1] - first_place[i]);
    for (std::size_t k = first_place[i]; k < first_place[i + 1]; ++k) {
      std::string fp = tls::to_hex(digests[k].data(), digests[k].size());
      fp += ':';
      fp += std::to_string(++seen[digests[k]]);
      out[i].push_back(std::move(fp));
    }
  }
  return out;
}

}  // namespace ngxtls::report
