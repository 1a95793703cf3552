// The SIGINT guard of probe --load: one interrupt delivered twice at once is one Ctrl-C.
// src/cli is compiled into the binary only, so the guard's one source file is built in here.
#include <doctest/doctest.h>
#include <signal.h>

#include "cli/interrupt.cpp"

TEST_CASE("two SIGINTs at once (GNU timeout signals its child and the group) set the flag only") {
  using ngxtls::cli::interrupt_guard;
  interrupt_guard guard;
  CHECK_FALSE(interrupt_guard::flag().load());
  // raise() runs the handler before it returns: with a guard that ends the process on any
  // second SIGINT, the second raise would end this test process.
  ::raise(SIGINT);
  ::raise(SIGINT);
  CHECK(interrupt_guard::flag().load());
}
