#include "config/tree.hpp"

namespace ngxtls::config {

source_location config::where(const directive& d) const {
  return {d.file < files.size() ? files[d.file].path : std::string("?"), d.line, d.column};
}

std::vector<source_location> config::chain_of(const directive& d) const {
  std::vector<source_location> out;
  if (d.chain >= chains.size()) return out;
  for (const auto& f : chains[d.chain]) {
    out.push_back({f.file < files.size() ? files[f.file].path : std::string("?"), f.line, f.column});
  }
  return out;
}

}  // namespace ngxtls::config
