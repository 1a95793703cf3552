#pragma once
// The fuzz input framing, shared by the libFuzzer target (tests/fuzz/fuzz_config.cpp) and the
// regression test that replays its findings (tests/unit/test_fuzz_regressions.cpp), so a
// saved crash input means the same file map in both.

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "config/loader.hpp"
#include "support/tree_diff.hpp"

namespace ngxtls::fuzz {

/// Where the files of a framed input live. Short, include-friendly names: the fuzzer finds
/// `include a.conf;`, `include *.conf;` and `include sub/*;` in its dictionary, and `*.conf`
/// also matches the main file, so globs and include cycles are reachable.
inline constexpr std::string_view main_path = "/etc/nginx/nginx.conf";
inline constexpr std::array<std::string_view, 3> included_paths = {
    "/etc/nginx/a.conf", "/etc/nginx/b.conf", "/etc/nginx/sub/c.conf"};

/// Splits `input` at NUL bytes into the main file and up to three included files (a NUL
/// after the third stays in the last file). NUL because nginx configs never contain it,
/// so every seed config is a valid one-file input as it stands.
inline std::map<std::string, std::string> split_files(std::string_view input) {
  std::map<std::string, std::string> files;
  std::size_t n = 0;
  while (true) {
    const std::size_t nul = n < included_paths.size() ? input.find('\0') : std::string_view::npos;
    const std::string_view path = n == 0 ? main_path : included_paths[n - 1];
    files.emplace(std::string(path), std::string(input.substr(0, nul)));
    if (nul == std::string_view::npos) break;
    input.remove_prefix(nul + 1);
    ++n;
  }
  return files;
}

/// Limits for fuzzing: the defaults allow hundreds of MB of expanded tree, which a fuzzer
/// would report as an out-of-memory or timeout although the limit works as designed. Smaller
/// limits exercise the same checks within the fuzzer's memory and time budget.
inline config::load_options fuzz_options() {
  config::load_options o;
  o.max_file_bytes = 1u << 20;
  o.max_include_depth = 16;
  o.max_included_files = 64;
  o.max_directives = 10000;
  return o;
}

/// Loads a framed input through the in-memory source, and the whole input as an `nginx -T`
/// dump when it looks like one. Returns true when it loaded, false on input_error (bad input
/// is expected); any other exception propagates, and is a finding.
inline bool load_framed(std::string_view input) {
  // Twice: split for the parallel parse wherever a `server {` line allows it (and loaded as
  // a mapped file is), and serially (read).
  // Both must give the same tree or the same error (src/config/parser.cpp, ahead_run).
  struct outcome {
    std::optional<config::config> cfg;
    std::string error;
  };
  auto load_with = [&](std::size_t parallel_min_bytes) {
    outcome out;
    config::load_options o = fuzz_options();
    o.parallel_parse_min_bytes = parallel_min_bytes;
    // The split parse also loads files as mapped ones (names interned, kept values copied):
    // the tree must not change either way.
    o.map_min_bytes = parallel_min_bytes;
    try {
      auto source = config::make_memory_source(split_files(input));
      out.cfg = config::load(std::string(main_path), *source, o);
    } catch (const input_error& e) {
      out.error = to_string(e.where()) + ": " + e.message();
    }
    return out;
  };
  const outcome parallel = load_with(0);
  const outcome serial = load_with(std::string_view::npos);
  if (parallel.error != serial.error)
    throw std::logic_error("parallel parse error differs: " + parallel.error + " | " +
                           serial.error);
  if (serial.cfg) {
    if (std::string d = test::tree_diff(parallel.cfg->root, serial.cfg->root); !d.empty())
      throw std::logic_error("parallel parse tree differs: " + d);
  }
  bool ok = serial.error.empty();
  if (config::looks_like_dump(input)) {
    try {
      (void)config::load_dump(input, "<fuzz>", fuzz_options());
    } catch (const input_error&) {
      ok = false;
    }
  }
  return ok;
}

}  // namespace ngxtls::fuzz
