#include "engine/engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "base/error.hpp"
#include "config/paths.hpp"
#include "engine/file_facts.hpp"
#include "tls/file_read.hpp"

namespace ngxtls::engine {

context::context(const model::model& m, const lint_options& opts)
    : m_(m), opts_(opts), files_(std::make_unique<file_facts>()) {}
context::~context() = default;

std::string context::resolve(std::string_view path) const {
  if (path.empty() || !m_.cfg) return std::string(path);
  // Thousands of servers name the same few files: normalise each once.
  const std::lock_guard<std::mutex> lock(resolve_mu_);
  if (auto it = resolved_.find(path); it != resolved_.end()) return it->second;
  return resolved_.emplace(std::string(path), config::resolve_file(m_.cfg->conf_prefix, path))
      .first->second;
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
  // A server without server_name is labelled "server at FILE:LINE" (model::server_label), and
  // messages say "the default server LABEL": one "server" is enough.
  for (std::size_t at; (at = f.message.find("server server at ")) != std::string::npos;)
    f.message.erase(at, 7);
  if (where_d && m_.cfg) {
    f.location = m_.cfg->where(*where_d);
    f.include_chain = m_.cfg->chain_of(*where_d);
  } else if (m_.cfg && !m_.cfg->files.empty()) {
    f.location = {m_.cfg->files[0].path, 1, 1};
  }
  return f;
}

namespace {

// Where `needle` occurs in `hay` at or after `from`, or npos. memmem (glibc's two-way
// search): string_view::find hunts the first byte with memchr, and the `n` of the
// suppression marker is on every other line of a config.
std::size_t find_text(std::string_view hay, std::string_view needle, std::size_t from = 0) {
  if (from > hay.size()) return std::string_view::npos;
  const void* p = ::memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return p == nullptr ? std::string_view::npos
                      : static_cast<std::size_t>(static_cast<const char*>(p) - hay.data());
}

// The lines of one file that hold a suppression comment, found once per file and run: a
// lookup per finding must not rescan the file (thousands of findings on a 20 MB config),
// and an index of every line start cost 12 MB there.
class line_index {
 public:
  explicit line_index(std::string_view content) {
    constexpr std::string_view marker = config::suppression_marker;
    std::uint32_t line = 1;
    std::size_t counted = 0;  // newlines before `counted` are in `line`
    for (std::size_t pos = find_text(content, marker); pos != std::string_view::npos;
         pos = find_text(content, marker, pos)) {
      for (const char *p = content.data() + counted, *e = content.data() + pos;
           (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(e - p))));) {
        ++line;
        ++p;
      }
      counted = pos;
      const std::size_t nl = content.rfind('\n', pos);
      const std::size_t b = nl == std::string_view::npos ? 0 : nl + 1;
      std::size_t e = content.find('\n', pos);
      if (e == std::string_view::npos) e = content.size();
      lines_[line] = content.substr(b, e - b);
      pos = e;
    }
  }
  // The text of 1-based line `n` when it holds a suppression comment, else "".
  std::string_view line(std::uint32_t n) const {
    auto it = lines_.find(n);
    return it == lines_.end() ? std::string_view() : it->second;
  }

 private:
  std::map<std::uint32_t, std::string_view> lines_;
};

// The rule ids a `# ngxtls: ignore a-rule, other-rule -- reason` comment names, with the
// 1-based byte column of each; empty when the line has no such comment.
std::vector<std::pair<std::string, std::uint32_t>> suppression_ids(std::string_view line) {
  std::vector<std::pair<std::string, std::uint32_t>> out;
  auto p = line.find("ngxtls: ignore");
  if (p == std::string_view::npos) return out;
  auto hash = line.rfind('#', p);
  if (hash == std::string_view::npos) return out;
  const std::size_t base = p + 14;
  std::string_view rest = line.substr(base);
  if (auto dash = rest.find("--"); dash != std::string_view::npos) rest = rest.substr(0, dash);
  std::size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == ',' || rest[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != ',' && rest[j] != '\t' &&
           rest[j] != '\r')
      ++j;
    if (j > i)
      out.emplace_back(std::string(rest.substr(i, j - i)),
                       static_cast<std::uint32_t>(base + i + 1));
    i = j;
  }
  return out;
}

bool line_suppresses(std::string_view line, const std::string& rule) {
  for (const auto& [id, col] : suppression_ids(line))
    if (id == rule) return true;
  return false;
}

// One suppression that silenced a finding: file, line of the comment, rule id.
using suppression_use = std::tuple<std::string, std::uint32_t, std::string>;

// The first config::files index of each path: findings are matched to their file by path, and
// a scan of every file per finding was quadratic on configs of thousands of files. A finding's
// path is most often its file's own shared string, found by its address without hashing it.
struct file_index {
  std::unordered_map<std::string_view, std::size_t> by_path;
  std::unordered_map<const void*, std::size_t> by_identity;

  std::optional<std::size_t> find(const file_path& p) const {
    if (auto it = by_identity.find(p.identity()); it != by_identity.end()) return it->second;
    if (auto it = by_path.find(p.str()); it != by_path.end()) return it->second;
    return std::nullopt;
  }
};

file_index index_files(const model::model& m) {
  file_index out;
  if (!m.cfg) return out;
  out.by_path.reserve(m.cfg->files.size());
  for (std::size_t i = 0; i < m.cfg->files.size(); ++i) {
    const auto [at, fresh] = out.by_path.emplace(m.cfg->files[i].path.str(), i);
    if (!m.cfg->files[i].path.empty())
      out.by_identity.emplace(m.cfg->files[i].path.identity(), at->second);
  }
  return out;
}

bool suppressed(const model::model& m, const finding& f, std::set<suppression_use>& used,
                std::map<std::size_t, line_index>& lines, const file_index& files) {
  if (!m.cfg || f.location.line == 0) return false;
  if (const auto at = files.find(f.location.file)) {
    const std::size_t i = *at;
    const auto& file = m.cfg->files[i];
    // No comment to look for: the file's bytes (maybe a mapping whose pages were dropped
    // after the parse) are not read back.
    if (!file.suppressions) return false;
    auto it = lines.find(i);
    if (it == lines.end()) it = lines.emplace(i, line_index(file.content)).first;
    if (line_suppresses(it->second.line(f.location.line), f.rule)) {
      used.insert({file.path, f.location.line, f.rule});
      return true;
    }
    if (f.location.line > 1 && line_suppresses(it->second.line(f.location.line - 1), f.rule)) {
      used.insert({file.path, f.location.line - 1, f.rule});
      return true;
    }
    return false;
  }
  return false;
}

constexpr const char* unused_suppression_id = "unused-suppression";

// Suppression comments that silenced nothing: a note each, so stale ones get removed.
// Only rules that ran count: a comment for a deselected rule is not stale.
void report_unused(const rule_catalog& catalog, const model::model& m, const lint_options& opts,
                   const std::set<std::string>& ran, const std::set<suppression_use>& used,
                   finding_list& out) {
  if (!m.cfg || !ran.count(unused_suppression_id)) return;
  std::set<std::string> seen_files;
  for (const auto& file : m.cfg->files) {
    if (!seen_files.insert(file.path).second) continue;
    if (!file.suppressions) continue;  // the usual case
    std::string_view content = file.content;
    std::uint32_t n = 0;
    std::size_t start = 0;
    while (start <= content.size()) {
      ++n;
      auto nl = content.find('\n', start);
      std::string_view line =
          content.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
      for (const auto& [id, col] : suppression_ids(line)) {
        std::string message;
        const rule* named = find_rule(catalog, id);
        if (!named)
          message = "suppression names no rule \"" + id + "\" (see `ngxtls rules`)";
        else if (ran.count(id) && !used.count({file.path, n, id}) && !named->probe_only)
          message =
              "suppression of " + id + " matches no finding on this line or the next: remove it";
        else
          continue;
        finding f;
        f.rule = unused_suppression_id;
        f.level = severity::note;
        f.message = std::move(message);
        f.location = {file.path, n, col};
        if (auto it = opts.severity_overrides.find(f.rule); it != opts.severity_overrides.end())
          f.level = it->second;
        out.push_back(std::move(f));
      }
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
  }
}

// The directives whose argument names a file that lint, check or the sandbox nginx reads.
constexpr std::string_view file_directives[] = {"ssl_certificate",
                                                "ssl_certificate_key",
                                                "ssl_trusted_certificate",
                                                "ssl_client_certificate",
                                                "ssl_dhparam",
                                                "ssl_session_ticket_key",
                                                "ssl_stapling_file",
                                                "ssl_crl",
                                                "ssl_password_file"};

}  // namespace

bool suppressed_inline(const model::model& m, const finding& f) {
  std::set<suppression_use> used;
  std::map<std::size_t, line_index> lines;
  return suppressed(m, f, used, lines, index_files(m));
}

namespace {

// Calls visit(directive, its name as listed in file_directives, its first argument) for each
// directive of `cfg` that names a file lint reads: data: certificates, engine: keys and
// paths with variables name no file here.
template <class Visit>
void for_each_named_file(const config::config& cfg, Visit visit) {
  std::vector<config::list<config::directive>> todo{cfg.root};
  while (!todo.empty()) {
    const config::list<config::directive> run = todo.back();
    todo.pop_back();
    for (const config::directive& d : run) {
      if (d.has_block) todo.push_back(d.block);
      if (d.args.empty() || d.lua || !d.name.starts_with("ssl_")) continue;
      const std::string_view* named = nullptr;
      for (const auto& n : file_directives)
        if (d.name == n) named = &n;
      if (named == nullptr) continue;
      const std::string_view arg = d.args[0].value();
      if (arg.empty() || arg.substr(0, 5) == "data:" || arg.substr(0, 7) == "engine:" ||
          arg.find('$') != std::string_view::npos)
        continue;
      visit(d, *named, arg);
    }
  }
}

// The certificate and key files a config names (resolved, in config order, repeats kept).
struct tls_files {
  std::vector<std::string> certificates;
  std::vector<std::string> keys;
  /// Certificate and key paths stat() failed on, with its errno: file_facts learns them as
  /// unreadable without a stat of its own.
  std::vector<std::pair<std::string, int>> unstatable;
};

// check_named_files(), collecting the certificate and key files on the way: one walk of the
// tree for both.
tls_files check_and_list_named_files(const model::model& m) {
  tls_files out;
  if (!m.cfg) return out;
  const config::config& cfg = *m.cfg;
  std::map<std::string, std::string> verdicts;  // resolved path -> refusal ("" when fine)
  // Thousands of servers name the same few files by the same words: each argument is
  // resolved and looked up once (argument views live as long as the config).
  std::unordered_map<std::string_view, decltype(verdicts)::const_iterator> by_argument;
  for_each_named_file(
      cfg, [&](const config::directive& d, std::string_view name, std::string_view arg) {
        auto [seen, fresh] = by_argument.try_emplace(arg);
        if (fresh) {
          std::string path = config::resolve_file(cfg.conf_prefix, arg);
          auto it = verdicts.find(path);
          if (it == verdicts.end()) {
            int stat_errno = 0;
            std::string refusal = tls::refused_file_reason(path, stat_errno);
            if (stat_errno != 0 && (name == "ssl_certificate" || name == "ssl_certificate_key"))
              out.unstatable.emplace_back(path, stat_errno);
            it = verdicts.emplace(std::move(path), std::move(refusal)).first;
          }
          seen->second = it;
        }
        const auto& [path, refusal] = *seen->second;
        if (!refusal.empty())
          throw input_error(
              cfg.where(d),
              std::string(name) + " \"" + std::string(d.args[0].value()) + "\": " + refusal,
              cfg.chain_of(d));
        if (name == "ssl_certificate")
          out.certificates.push_back(path);
        else if (name == "ssl_certificate_key")
          out.keys.push_back(path);
      });
  return out;
}

}  // namespace

void check_named_files(const model::model& m) {
  check_and_list_named_files(m);
}

std::vector<finding> run(const rule_catalog& catalog, const model::model& m,
                         const lint_options& opts, unsigned threads) {
  return run_counted(catalog, m, opts, threads).findings;
}

run_result run_counted(const rule_catalog& catalog, const model::model& m, const lint_options& opts,
                       unsigned threads) {
  const tls_files named = check_and_list_named_files(m);
  if (opts.baseline) check_named_files(*opts.baseline);
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  context ctx(m, opts);
  // Every certificate and key decoded on the rule threads before the rules run: with a
  // thousand distinct files, decoding them one at a time as rules asked dominated the run.
  for (const auto& [path, stat_errno] : named.unstatable)
    ctx.files().learn_unstatable(path, stat_errno);
  ctx.files().prefetch(named.certificates, named.keys, threads);
  run_result result;
  std::vector<finding>& out = result.findings;
  // Kept in catalog order up to max_findings in all; the rest counted per rule.
  auto keep = [&](finding&& f) {
    if (out.size() < max_findings) {
      out.push_back(std::move(f));
    } else {
      ++result.dropped_per_rule[f.rule];
    }
  };
  std::set<std::string> ran;
  std::set<suppression_use> used;
  std::map<std::size_t, line_index> lines;
  const file_index files = index_files(m);
  std::vector<const rule*> selected;
  for (const auto& r : catalog) {
    if (opts.select && !opts.select->count(r.id)) continue;
    if (opts.ignore.count(r.id)) continue;
    selected.push_back(&r);
  }
  // Rules only read the model and share the context's locked caches, so they run side by
  // side; results are taken in catalog order, so the output does not depend on the threads.
  std::vector<finding_list> results(selected.size());
  std::vector<std::exception_ptr> errors(selected.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < selected.size();) {
      try {
        selected[i]->check(ctx, results[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, selected.size()));
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
  }
  std::size_t found_total = 0;
  for (const auto& found : results) found_total += found.size();
  out.reserve(std::min(found_total, max_findings));
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    const rule& r = *selected[i];
    ran.insert(r.id);
    finding_list& found = results[i];
    if (found.dropped() > 0) result.dropped_per_rule[r.id] += found.dropped();
    for (auto& f : found) {
      if (suppressed(m, f, used, lines, files)) continue;
      if (auto it = opts.severity_overrides.find(f.rule); it != opts.severity_overrides.end())
        f.level = it->second;
      keep(std::move(f));
    }
    std::vector<finding>().swap(found.kept());  // moved-from records still held their full size
  }
  {
    finding_list unused;
    report_unused(catalog, m, opts, ran, used, unused);
    if (unused.dropped() > 0) result.dropped_per_rule[unused_suppression_id] += unused.dropped();
    for (auto& f : unused) keep(std::move(f));
  }
  for (const auto& [id, n] : result.dropped_per_rule) result.dropped += n;
  auto key = [](const finding& f) { return std::tie(f.location, f.rule, f.message); };
  // Sort positions, then move each finding once: a stable sort of the records themselves
  // moved every one several times and took a buffer of half of them. Files are ranked once
  // (thousands of findings share one file, whose path would be compared byte by byte each
  // time) and rules by their id: the message breaks ties only.
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::uint64_t> rank(out.size());  // file rank << 32 | rule rank
  {
    // Findings of one file share its path's string (file_path), and findings of one rule
    // come together: each distinct one is ranked once, by its bytes.
    std::unordered_map<const void*, std::uint32_t> file_of;  // shared path -> distinct index
    std::vector<const std::string*> files;
    std::vector<const std::string*> rules;
    std::vector<std::uint32_t> file_index(out.size()), rule_index(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const finding& f = out[i];
      auto [at, fresh] =
          file_of.try_emplace(f.location.file.identity(), static_cast<std::uint32_t>(files.size()));
      if (fresh) files.push_back(&f.location.file.str());
      file_index[i] = at->second;
      if (rules.empty() || *rules.back() != f.rule) rules.push_back(&f.rule);
      rule_index[i] = static_cast<std::uint32_t>(rules.size() - 1);
    }
    // The rank of each distinct string: its place among the sorted distinct strings, equal
    // strings (two paths made apart, a rule met twice) ranked alike.
    auto ranks = [](const std::vector<const std::string*>& strings) {
      std::vector<std::uint32_t> by(strings.size());
      for (std::uint32_t k = 0; k < by.size(); ++k) by[k] = k;
      std::sort(by.begin(), by.end(),
                [&](std::uint32_t a, std::uint32_t b) { return *strings[a] < *strings[b]; });
      std::vector<std::uint32_t> rank_of(strings.size());
      std::uint32_t r = 0;
      for (std::size_t k = 0; k < by.size(); ++k) {
        if (k > 0 && *strings[by[k]] != *strings[by[k - 1]]) ++r;
        rank_of[by[k]] = r;
      }
      return rank_of;
    };
    const std::vector<std::uint32_t> file_rank = ranks(files), rule_rank = ranks(rules);
    for (std::size_t i = 0; i < out.size(); ++i)
      rank[i] = std::uint64_t{file_rank[file_index[i]]} << 32 | rule_rank[rule_index[i]];
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const finding& x = out[a];
    const finding& y = out[b];
    const std::uint64_t fx = rank[a] >> 32, fy = rank[b] >> 32;
    if (fx != fy) return fx < fy;
    if (x.location.line != y.location.line) return x.location.line < y.location.line;
    if (x.location.column != y.location.column) return x.location.column < y.location.column;
    if (rank[a] != rank[b]) return rank[a] < rank[b];
    return x.message < y.message;
  });
  // Position k takes the finding at order[k]: follow each cycle of the permutation once.
  for (std::size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    finding held = std::move(out[start]);
    std::size_t k = start;
    while (order[k] != start) {
      const std::size_t from = order[k];
      out[k] = std::move(out[from]);
      order[k] = k;
      k = from;
    }
    out[k] = std::move(held);
    order[k] = k;
  }
  out.erase(std::unique(out.begin(), out.end(),
                        [&](const finding& a, const finding& b) { return key(a) == key(b); }),
            out.end());
  return result;
}

const rule* find_rule(const rule_catalog& catalog, std::string_view id) {
  for (const auto& r : catalog)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace ngxtls::engine
