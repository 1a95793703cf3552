#include "config/read_ahead.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace ngxtls::config {

read_ahead::read_ahead(std::vector<std::string> paths, std::size_t max_bytes, std::size_t max_files,
                       std::size_t max_held_bytes)
    : paths_(std::move(paths)),
      max_bytes_(max_bytes),
      max_files_(max_files == 0 ? 1 : max_files),
      max_held_bytes_(max_held_bytes),
      slots_(paths_.size()) {
  position_.reserve(paths_.size());
  // A path named twice is served at its first place only.
  for (std::size_t i = 0; i < paths_.size(); ++i) position_.emplace(paths_[i], i);
  worker_ = std::thread([this] { run(); });
}

read_ahead::~read_ahead() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

std::optional<read_ahead_file> read_ahead::take(const std::string& path) {
  const auto at = position_.find(path);
  if (at == position_.end()) return std::nullopt;
  const std::size_t k = at->second;
  std::unique_lock lock(mu_);
  if (k < taken_) return std::nullopt;
  // Skipped paths are dropped: the consumer will not ask for them in this order.
  for (std::size_t i = taken_; i < k; ++i)
    if (slots_[i].st == state::ready) {
      held_bytes_ -= slots_[i].file.bytes.size();
      slots_[i].file = {};
    }
  taken_ = k + 1;
  changed_.notify_all();
  changed_.wait(lock, [&] { return stop_ || slots_[k].st != state::pending; });
  if (slots_[k].st != state::ready) return std::nullopt;
  held_bytes_ -= slots_[k].file.bytes.size();
  std::optional<read_ahead_file> out(std::move(slots_[k].file));
  slots_[k].file = {};
  return out;
}

void read_ahead::run() {
  std::unique_lock lock(mu_);
  for (std::size_t next = 0;;) {
    // The consumer may ask for path k before it is read: k is then read next.
    changed_.wait(lock, [&] {
      if (stop_) return true;
      if (next < taken_) next = taken_ == 0 ? 0 : taken_ - 1;
      if (next >= paths_.size()) return false;
      const bool asked = next < taken_;  // the consumer waits for it
      return asked || (next < taken_ + max_files_ && held_bytes_ < max_held_bytes_);
    });
    if (stop_) return;
    if (slots_[next].st != state::pending) {
      ++next;
      continue;
    }
    const std::string& path = paths_[next];
    lock.unlock();
    std::optional<read_ahead_file> got;
    try {
      got = read_one(path);
    } catch (...) {
      got.reset();  // out of memory: the consumer reads it itself
    }
    lock.lock();
    // Skipped while it was read (the consumer asked for a later path): not held.
    if (got && next + 1 >= taken_) {
      held_bytes_ += got->bytes.size();
      slots_[next].file = std::move(*got);
      slots_[next].st = state::ready;
    } else {
      slots_[next].st = state::failed;
    }
    changed_.notify_all();
    ++next;
    if (next >= paths_.size()) return;
  }
}

std::optional<read_ahead_file> read_ahead::read_one(const std::string& path) const {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_at_end{fd};
  struct stat fb {};
  if (::fstat(fd, &fb) != 0 || !S_ISREG(fb.st_mode)) return std::nullopt;
  const auto size = static_cast<std::size_t>(fb.st_size);
  if (size > max_bytes_) return std::nullopt;
  read_ahead_file out;
  out.device = static_cast<std::uint64_t>(fb.st_dev);
  out.inode = static_cast<std::uint64_t>(fb.st_ino);
  out.bytes.resize(size);
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, out.bytes.data() + got, size - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.bytes.resize(got);
  return out;
}

}  // namespace ngxtls::config
