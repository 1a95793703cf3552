#include "cli/interrupt.hpp"

#include <signal.h>
#include <time.h>

namespace ngxtls::cli {
namespace {

std::atomic<bool> interrupted{false};
std::atomic<long long> first_ms{0};
struct sigaction previous {};

// Milliseconds on the monotonic clock (clock_gettime is async-signal-safe).
long long monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// A second SIGINT this soon after the first is the same interrupt delivered twice: GNU timeout
// signals its child and then the child's process group.
constexpr long long same_interrupt_ms = 500;

void on_sigint(int) {
  const long long now = monotonic_ms();
  if (!interrupted.exchange(true)) {
    first_ms.store(now);
    return;
  }
  if (now - first_ms.load() < same_interrupt_ms) return;
  // A second Ctrl-C: whatever is still running is not stopping, end as SIGINT would.
  ::signal(SIGINT, SIG_DFL);
  ::raise(SIGINT);
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
