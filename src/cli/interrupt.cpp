#include "cli/interrupt.hpp"

#include <signal.h>
#include <time.h>

namespace ngxtls::cli {
namespace {

std::atomic<bool> interrupted{false};
std::atomic<int> first_signal{0};
std::atomic<long long> first_ms{0};
struct sigaction previous_int {};
struct sigaction previous_term {};

// Milliseconds on the monotonic clock (clock_gettime is async-signal-safe).
long long monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// A second signal this soon after the first is the same interrupt delivered twice: GNU timeout
// signals its child and then the child's process group.
constexpr long long same_interrupt_ms = 500;

void on_signal(int sig) {
  const long long now = monotonic_ms();
  // The signal is stored before the flag: whoever sees the flag sees which signal set it.
  int none = 0;
  if (first_signal.compare_exchange_strong(none, sig)) {
    first_ms.store(now);
    interrupted.store(true);
    return;
  }
  if (now - first_ms.load() < same_interrupt_ms) return;
  // A second signal: whatever is still running is not stopping, end as the signal would.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

interrupt_guard::interrupt_guard() {
  interrupted.store(false);
  first_signal.store(0);
  first_ms.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &previous_int);
  ::sigaction(SIGTERM, &sa, &previous_term);
}

interrupt_guard::~interrupt_guard() {
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
}

const std::atomic<bool>& interrupt_guard::flag() {
  return interrupted;
}

int interrupt_guard::signal_number() {
  return interrupted.load() ? first_signal.load() : 0;
}

int interrupt_guard::exit_code() {
  return 128 + (signal_number() == SIGTERM ? SIGTERM : SIGINT);
}

const char* interrupt_guard::cause() {
  return signal_number() == SIGTERM ? "SIGTERM" : "Ctrl-C";
}

}  // namespace ngxtls::cli
