#pragma once
// The fuzz input framing, shared by the libFuzzer target (tests/fuzz/fuzz_config.cpp) and the
// regression test that replays its findings (tests/unit/test_fuzz_regressions.cpp), so a
// saved crash input means the same file map in both.

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "config/loader.hpp"

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
  bool ok = true;
  try {
    auto source = config::make_memory_source(split_files(input));
    (void)config::load(std::string(main_path), *source, fuzz_options());
  } catch (const input_error&) {
    ok = false;
  }
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
