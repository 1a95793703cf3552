// libFuzzer target for the parser and include expansion. The input is
// framed into an in-memory file map (framing.hpp) and loaded as nginx would; input_error is
// the expected answer to bad input, so anything else -- another exception, a crash, a
// sanitizer report, a leak, a timeout -- is a finding. Run it with scripts/fuzz.sh.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/framing.hpp"

/// libFuzzer's entry point: `data`/`size` is one input; returns 0 (the input is always kept).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ngxtls::fuzz::load_framed(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
