#include "support/golden.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "support/process.hpp"

namespace fs = std::filesystem;

namespace ngxtls::test {

std::string golden_mismatch(const fs::path& relative, const std::string& actual) {
  const fs::path golden = source_dir() / relative;
  if (const char* update = std::getenv("NGXTLS_UPDATE_GOLDENS");
      update && std::string(update) == "1") {
    std::ofstream out(golden, std::ios::binary | std::ios::trunc);
    out << actual;
    if (!out) throw std::runtime_error("cannot write " + golden.string());
    return "";
  }
  std::string expected;
  if (fs::exists(golden)) expected = read_file(golden);
  if (expected == actual) return "";
  temp_dir tmp;
  const fs::path got = tmp.path() / "actual";
  std::ofstream(got, std::ios::binary) << actual;
  const auto d = run({"diff", "-u", "--label", relative.string(), "--label", "actual",
                      fs::exists(golden) ? golden.string() : "/dev/null", got.string()});
  return relative.string() + " differs from the output (NGXTLS_UPDATE_GOLDENS=1 rewrites it):\n" +
         d.out;
}

}  // namespace ngxtls::test
