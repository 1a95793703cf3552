#pragma once
// Snapshots of files outside a test's own directories, to show that a run changed none of them
// (the sandbox and the tests' own nginx runs must leave the host's nginx state alone).

#include <map>
#include <string>
#include <vector>

namespace ngxtls::test {

/// Every file and directory at and below `roots` (links not followed; unreadable directories
/// skipped): path -> "uid:gid mode", plus " size mtime" for non-directories.
std::map<std::string, std::string> snapshot(const std::vector<std::string>& roots);

/// What changed from `before` to `after`, one line each ("added", "removed", "changed P: A -> B");
/// empty when nothing did.
std::string differences(const std::map<std::string, std::string>& before,
                        const std::map<std::string, std::string>& after);

}  // namespace ngxtls::test
