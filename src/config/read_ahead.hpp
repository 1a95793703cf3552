#pragma once
// Reading a glob's files ahead of the loader, on a thread of its own: a folder of 14,000 site
// files costs four system calls each, and the loader parses one file while the next is read.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace ngxtls::config {

/// The bytes of a file read ahead, with what fstat() said of it.
struct read_ahead_file {
  std::string bytes;
  std::uint64_t device = 0, inode = 0;
};

/// Reads files, in a given order, ahead of the one consumer that take()s them (the loader gives
/// it only paths a directory walk saw as regular files: opening a device can act on it). It only
/// saves time: a file it could not read as a regular file of at most `max_bytes` (missing,
/// a FIFO, a device, too big, a read error) is not served, and the consumer reads it itself,
/// with its own checks and messages. It holds at most `max_files` files or about
/// `max_held_bytes` bytes not yet taken. Not copyable; the destructor stops and joins it.
class read_ahead {
 public:
  /// Default bounds on what is held: enough to keep one parser busy.
  static constexpr std::size_t default_max_files = 64;
  static constexpr std::size_t default_max_held_bytes = std::size_t{16} << 20;

  read_ahead(std::vector<std::string> paths, std::size_t max_bytes,
             std::size_t max_files = default_max_files,
             std::size_t max_held_bytes = default_max_held_bytes);
  read_ahead(const read_ahead&) = delete;
  read_ahead& operator=(const read_ahead&) = delete;
  ~read_ahead();

  /// The file at `path` when it is among the paths at or after the last one taken, read in
  /// full as a regular file; nullopt otherwise (the consumer reads it itself). Skips the
  /// paths before it, which are then not served.
  std::optional<read_ahead_file> take(const std::string& path);

 private:
  enum class state : std::uint8_t { pending, ready, failed };
  struct slot {
    state st = state::pending;
    read_ahead_file file;
  };
  void run();
  /// Reads one path as the loader's disk source would (O_NONBLOCK, fstat, st_size bytes).
  std::optional<read_ahead_file> read_one(const std::string& path) const;

  const std::vector<std::string> paths_;
  const std::size_t max_bytes_, max_files_, max_held_bytes_;
  std::unordered_map<std::string, std::size_t> position_;  ///< path -> index in paths_
  std::vector<slot> slots_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::size_t taken_ = 0;       ///< paths before this are the consumer's (or skipped)
  std::size_t held_bytes_ = 0;  ///< bytes read and not yet taken
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace ngxtls::config
