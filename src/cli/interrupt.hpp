#pragma once
// Ctrl-C and SIGTERM for the commands that load a server (probe --load, check --sandbox --load):
// SIGINT or SIGTERM sets a flag the prober and the load driver look at, so they stop at once
// and the partial report is still written (exit 130 after SIGINT, 143 after SIGTERM:
// commands.hpp). SIGTERM is what `timeout`, systemd, container stops and CI cancellation send.

#include <atomic>

namespace ngxtls::cli {

/// While alive, SIGINT and SIGTERM set flag() instead of ending the process, whatever
/// disposition was inherited (a script's background job starts with SIGINT ignored); a second
/// signal, 500 ms or more after the first, ends the process as its default action would (one
/// sooner is the same interrupt delivered twice, as GNU timeout does to its child and the
/// child's group). The previous dispositions come back on destruction.
class interrupt_guard {
 public:
  interrupt_guard();
  ~interrupt_guard();
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;
  /// Set once SIGINT or SIGTERM arrived while a guard lived (cleared when a guard is made).
  static const std::atomic<bool>& flag();
  /// The signal that set flag() (SIGINT or SIGTERM), 0 while it is not set.
  static int signal_number();
  /// The exit code of a command that signal_number() stopped: 128 + the signal's number, the
  /// shell's convention for a process ended by it (130 for SIGINT, 143 for SIGTERM).
  static int exit_code();
  /// How messages name what stopped the command: "Ctrl-C" or "SIGTERM".
  static const char* cause();
};

}  // namespace ngxtls::cli
