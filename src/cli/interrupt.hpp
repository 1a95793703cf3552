#pragma once
// Ctrl-C for the commands that load a server (probe --load, check --sandbox --load): SIGINT
// sets a flag the prober and the load driver look at, so they stop at once and the partial
// report is still written (exit 130, commands.hpp).

#include <atomic>

namespace ngxtls::cli {

/// While alive, SIGINT sets flag() instead of ending the process, whatever disposition was
/// inherited (a script's background job starts with SIGINT ignored); a second SIGINT, 500 ms or
/// more after the first, ends the process as the default action would (one sooner is the same
/// interrupt delivered twice, as GNU timeout does to its child and the child's group). The previous
/// disposition comes back on destruction.
class interrupt_guard {
 public:
  interrupt_guard();
  ~interrupt_guard();
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;
  /// Set once SIGINT arrived while a guard lived (cleared when a guard is made).
  static const std::atomic<bool>& flag();
};

}  // namespace ngxtls::cli
