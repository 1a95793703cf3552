#include "config/tree.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

namespace ngxtls::config {

namespace detail {

namespace {

// The region: reserved PROT_NONE once, blocks committed (read/write) when handed out and
// decommitted when given back, so a freed block faults instead of being read stale.
// Blocks are multiples of 64 KiB; freed ones are reused first-fit and merged with free
// neighbours (the fuzzer and the tests load and drop configs millions of times).
constexpr std::size_t granule = std::size_t{1} << 16;

struct region {
  std::mutex mu;
  std::size_t top = granule;                       // offset 0 is never handed out: it means "none"
  std::map<std::size_t, std::size_t> free_blocks;  // offset -> bytes

  region() {
    void* p = ::mmap(nullptr, region_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    region_base = static_cast<std::byte*>(p);
  }

  std::byte* take(std::size_t bytes) {
    bytes = (bytes + granule - 1) / granule * granule;
    std::size_t off = 0;
    {
      const std::lock_guard<std::mutex> lock(mu);
      for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
        if (it->second < bytes) continue;
        off = it->first;
        if (it->second > bytes) free_blocks.emplace(off + bytes, it->second - bytes);
        free_blocks.erase(it);
        break;
      }
      if (off == 0) {
        if (bytes > region_bytes - top)
          throw std::length_error("the configuration needs more than 4 GiB of memory");
        off = top;
        top += bytes;
      }
    }
    std::byte* p = region_base + off;
    if (::mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) {
      give_back(p, bytes);
      throw std::bad_alloc();
    }
    return p;
  }

  void give_back(std::byte* p, std::size_t bytes) {
    bytes = (bytes + granule - 1) / granule * granule;
    ::madvise(p, bytes, MADV_DONTNEED);
    ::mprotect(p, bytes, PROT_NONE);
    std::size_t off = static_cast<std::size_t>(p - region_base);
    const std::lock_guard<std::mutex> lock(mu);
    auto next = free_blocks.lower_bound(off);
    if (next != free_blocks.end() && next->first == off + bytes) {
      bytes += next->second;
      next = free_blocks.erase(next);
    }
    if (next != free_blocks.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        bytes += prev->second;
        free_blocks.erase(prev);
      }
    }
    if (off + bytes == top)
      top = off;
    else
      free_blocks.emplace(off, bytes);
  }
};

// Never destroyed: storages with static lifetime (model defaults) give blocks back at exit.
region& the_region() {
  static region* r = new region;
  return *r;
}

}  // namespace

std::uint32_t region_offset(const void* p) {
  if (p == nullptr) return 0;
  const auto* b = static_cast<const std::byte*>(p);
  if (region_base == nullptr || b < region_base || b > region_base + (region_bytes - 1))
    throw std::logic_error("tree record made from memory outside any storage");
  return static_cast<std::uint32_t>(b - region_base);
}

}  // namespace detail

std::string_view argument::raw() const {
  if (unescaped_) {
    raw_header h;
    std::memcpy(&h, detail::region_at(off_) - sizeof(raw_header), sizeof h);
    return {detail::region_at(h.raw), h.size};
  }
  if (quote() == quote_style::none) return value();
  return {detail::region_at(off_) - 1, std::size_t{size_} + 2};
}

argument argument_builder::make(std::string_view raw, std::string_view value, quote_style quote,
                                storage& store) {
  if (value.size() > argument::max_bytes) throw std::length_error("argument longer than 512 MiB");
  argument a;
  a.quote_ = static_cast<std::uint32_t>(quote);
  a.size_ = static_cast<std::uint32_t>(value.size());
  const std::size_t inner = quote == quote_style::none ? 0 : 1;
  if (value.size() + 2 * inner == raw.size() &&
      (value.empty() || value.data() == raw.data() + inner)) {
    a.off_ = detail::region_offset(raw.data() + inner);
    return a;
  }
  // The escapes changed the bytes: keep the value in storage after a header saying
  // where the raw bytes are (raw() reads it back).
  char* p = store.allocate<char>(sizeof(raw_header) + value.size());
  const raw_header h{detail::region_offset(raw.data()), static_cast<std::uint32_t>(raw.size())};
  std::memcpy(p, &h, sizeof h);
  if (!value.empty()) std::memcpy(p + sizeof h, value.data(), value.size());
  a.off_ = detail::region_offset(p + sizeof h);
  a.unescaped_ = 1;
  return a;
}

storage::~storage() {
  for (const block& b : blocks_) detail::the_region().give_back(b.at, b.bytes);
}

std::byte* storage::take_block(std::size_t bytes) {
  blocks_.reserve(blocks_.size() + 1);
  std::byte* p = detail::the_region().take(bytes);
  blocks_.push_back({p, bytes});
  return p;
}

std::string_view storage::adopt(std::string_view text) {
  // An empty file still gets a real address: parsers compare pointers into it.
  std::byte* p =
      text.empty() ? static_cast<std::byte*>(allocate_bytes(1, 1)) : take_block(text.size());
  // An empty view may have a null data(): memcpy from null is undefined even for 0 bytes.
  if (!text.empty()) std::memcpy(p, text.data(), text.size());
  used_ += text.size();
  return {reinterpret_cast<const char*>(p), text.size()};
}

void* storage::allocate_bytes(std::size_t n, std::size_t align) {
  constexpr std::size_t chunk = std::size_t{1} << 20;
  auto pad = [&] {
    const auto addr = reinterpret_cast<std::uintptr_t>(next_);
    return (align - addr % align) % align;
  };
  if (next_ == nullptr || pad() + n > left_) {
    if (n + align > chunk / 4) {
      // Large runs get their own block, so the current chunk's tail is not wasted
      // (blocks are 64 KiB aligned: no padding needed).
      used_ += n;
      return take_block(n);
    }
    next_ = take_block(chunk);
    left_ = chunk;
  }
  const std::size_t p = pad();
  std::byte* out = next_ + p;
  next_ += p + n;
  left_ -= p + n;
  used_ += p + n;
  return out;
}

line_column locate(std::string_view content, std::size_t offset, std::uint32_t from_line,
                   std::size_t from_offset) {
  offset = std::min(offset, content.size());
  from_offset = std::min(from_offset, offset);
  std::uint32_t line = from_line;
  for (const char* p = content.data() + from_offset; p < content.data() + offset;) {
    p = static_cast<const char*>(
        std::memchr(p, '\n', static_cast<std::size_t>(content.data() + offset - p)));
    if (p == nullptr) break;
    ++line;
    ++p;
  }
  std::size_t start = offset;
  while (start > 0 && content[start - 1] != '\n') --start;
  return {line, static_cast<std::uint32_t>(offset - start + 1)};
}

namespace {

/// Position of argument `a` of `d` in `content`: counted on from the directive's name, so
/// the cost is the directive's own length, never the line's or the file's.
line_column arg_position(std::string_view content, const directive& d, const argument& a) {
  const char* p = a.raw().data();
  if (p < content.data() + d.offset || p > content.data() + content.size()) return {d.line, 0};
  const auto offset = static_cast<std::size_t>(p - content.data());
  std::uint32_t line = d.line;
  std::size_t line_start = std::string_view::npos;  // unknown: still the name's line
  for (std::size_t i = d.offset; i < offset; ++i) {
    if (content[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  if (line_start == std::string_view::npos)
    return {line, static_cast<std::uint32_t>(d.column + (offset - d.offset))};
  return {line, static_cast<std::uint32_t>(offset - line_start + 1)};
}

}  // namespace

source_location config::where(const directive& d) const {
  if (d.file >= files.size()) return {"?", d.line, 0};
  return {files[d.file].path, d.line, d.column};
}

std::vector<line_column> config::argument_positions(const directive& d) const {
  std::vector<line_column> out;
  out.reserve(d.args.size());
  if (d.file >= files.size()) {
    out.assign(d.args.size(), {d.line, 0});
    return out;
  }
  const std::string_view content = files[d.file].content;
  std::uint32_t line = d.line;
  std::size_t at = d.offset;
  std::size_t line_start = std::string_view::npos;  // still the name's line
  for (const argument& a : d.args) {
    const char* p = a.raw().data();
    if (p < content.data() + at || p > content.data() + content.size()) {
      out.push_back({d.line, 0});
      continue;
    }
    const auto offset = static_cast<std::size_t>(p - content.data());
    for (; at < offset; ++at) {
      if (content[at] == '\n') {
        ++line;
        line_start = at + 1;
      }
    }
    out.push_back({line, static_cast<std::uint32_t>(line_start == std::string_view::npos
                                                        ? d.column + (offset - d.offset)
                                                        : offset - line_start + 1)});
  }
  return out;
}

source_location config::where(const directive& d, const argument& a) const {
  if (d.file >= files.size()) return {"?", d.line, 0};
  const auto lc = arg_position(files[d.file].content, d, a);
  return {files[d.file].path, lc.line, lc.column};
}

std::vector<include_frame> config::chain_frames(std::uint32_t chain) const {
  std::vector<include_frame> out;
  // Parents are made before their children, so every step goes to a smaller index.
  while (chain != 0 && chain < chains.size()) {
    out.push_back(chains[chain].site);
    chain = chains[chain].parent;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<source_location> config::chain_of(const directive& d) const {
  std::vector<source_location> out;
  for (const auto& f : chain_frames(d.chain)) {
    out.push_back({f.file < files.size() ? files[f.file].path : file_path("?"), f.line, f.column});
  }
  return out;
}

line_column parsed_buffer::position(const directive& d, const argument& a) const {
  return arg_position(content, d, a);
}

}  // namespace ngxtls::config
