#pragma once
// Golden files: output a test pins byte for byte in a file under fixtures/ (probe reports, the
// lint text report). NGXTLS_UPDATE_GOLDENS=1 rewrites them from what the code now writes, for
// review before they are committed; without it a difference fails with a unified diff.

#include <filesystem>
#include <string>

namespace ngxtls::test {

/// "" when the golden file `relative` (to the source tree, e.g.
/// "fixtures/probe-output/text.txt") holds exactly `actual`; else what differs, as `diff -u`
/// from the golden file to `actual`. With NGXTLS_UPDATE_GOLDENS=1 in the environment, writes
/// `actual` to the file instead and returns "".
std::string golden_mismatch(const std::filesystem::path& relative, const std::string& actual);

}  // namespace ngxtls::test
