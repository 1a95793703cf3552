#include "cli/interrupt.hpp"

#include <signal.h>

namespace ngxtls::cli {
namespace {

std::atomic<bool> interrupted{false};
struct sigaction previous {};

void on_sigint(int) {
  if (interrupted.exchange(true)) {
    // A second Ctrl-C: whatever is still running is not stopping, end as SIGINT would.
    ::signal(SIGINT, SIG_DFL);
    ::raise(SIGINT);
  }
}

}  // namespace

interrupt_guard::interrupt_guard() {
  interrupted.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &previous);
}

interrupt_guard::~interrupt_guard() {
  ::sigaction(SIGINT, &previous, nullptr);
}

const std::atomic<bool>& interrupt_guard::flag() {
  return interrupted;
}

}  // namespace ngxtls::cli
