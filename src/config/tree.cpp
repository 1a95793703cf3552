#include "config/tree.hpp"

#include <algorithm>
#include <cstring>

namespace ngxtls::config {

std::string_view argument::raw() const {
  if (unescaped_) {
    raw_header h;
    std::memcpy(&h, data_.get<char>() - sizeof(raw_header), sizeof h);
    return {h.raw, h.size};
  }
  if (quote() == quote_style::none) return value();
  return {data_.get<char>() - 1, std::size_t{size_} + 2};
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
    a.data_ = detail::split_pointer(raw.data() + inner);
    return a;
  }
  // The escapes changed the bytes: keep the value in storage after a header saying
  // where the raw bytes are (raw() reads it back).
  char* p = store.allocate<char>(sizeof(raw_header) + value.size());
  const raw_header h{raw.data(), static_cast<std::uint32_t>(raw.size())};
  std::memcpy(p, &h, sizeof h);
  if (!value.empty()) std::memcpy(p + sizeof h, value.data(), value.size());
  a.data_ = detail::split_pointer(p + sizeof h);
  a.unescaped_ = 1;
  return a;
}

std::string_view storage::adopt(std::string text) {
  texts_.push_back(std::make_unique<std::string>(std::move(text)));
  reserved_ += texts_.back()->capacity();
  return *texts_.back();
}

void storage::absorb(storage&& other) {
  for (auto& c : other.chunks_) chunks_.push_back(std::move(c));
  for (auto& t : other.texts_) texts_.push_back(std::move(t));
  reserved_ += other.reserved_;
  other.chunks_.clear();
  other.texts_.clear();
  other.next_ = nullptr;
  other.left_ = 0;
  other.reserved_ = 0;
}

void* storage::allocate_bytes(std::size_t n, std::size_t align) {
  constexpr std::size_t chunk = std::size_t{1} << 20;
  auto pad = [&] {
    const auto addr = reinterpret_cast<std::uintptr_t>(next_);
    return (align - addr % align) % align;
  };
  if (next_ == nullptr || pad() + n > left_) {
    if (n + align > chunk / 4) {
      // Large runs get their own block, so the current chunk's tail is not wasted.
      chunks_.push_back(std::make_unique_for_overwrite<std::byte[]>(n + align));
      reserved_ += n + align;
      std::byte* b = chunks_.back().get();
      const auto addr = reinterpret_cast<std::uintptr_t>(b);
      return b + (align - addr % align) % align;
    }
    chunks_.push_back(std::make_unique_for_overwrite<std::byte[]>(chunk));
    reserved_ += chunk;
    next_ = chunks_.back().get();
    left_ = chunk;
  }
  const std::size_t p = pad();
  std::byte* out = next_ + p;
  next_ += p + n;
  left_ -= p + n;
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

std::vector<source_location> config::chain_of(const directive& d) const {
  std::vector<source_location> out;
  if (d.chain >= chains.size()) return out;
  for (const auto& f : chains[d.chain]) {
    out.push_back(
        {f.file < files.size() ? files[f.file].path : std::string("?"), f.line, f.column});
  }
  return out;
}

line_column parsed_buffer::position(const directive& d, const argument& a) const {
  return arg_position(content, d, a);
}

}  // namespace ngxtls::config
