#include "support/host_state.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace ngxtls::test {

std::map<std::string, std::string> snapshot(const std::vector<std::string>& roots) {
  std::map<std::string, std::string> out;
  auto add = [&](const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return;
    std::ostringstream s;
    s << st.st_uid << ":" << st.st_gid << " " << std::oct << st.st_mode << std::dec;
    if (!S_ISDIR(st.st_mode))
      s << " " << st.st_size << " " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec;
    out[p.string()] = s.str();
  };
  for (const auto& r : roots) {
    add(r);
    std::error_code ec;
    for (auto it =
             fs::recursive_directory_iterator(r, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      add(it->path());
  }
  return out;
}

std::string differences(const std::map<std::string, std::string>& a,
                        const std::map<std::string, std::string>& b) {
  std::string d;
  for (const auto& [p, v] : a)
    if (!b.count(p))
      d += "removed " + p + "\n";
    else if (b.at(p) != v)
      d += "changed " + p + ": " + v + " -> " + b.at(p) + "\n";
  for (const auto& [p, v] : b)
    if (!a.count(p)) d += "added " + p + " " + v + "\n";
  return d;
}

}  // namespace ngxtls::test
