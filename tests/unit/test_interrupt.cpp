// The SIGINT and SIGTERM guard of probe --load: one interrupt delivered twice at once is one
// interrupt, and the exit code names the signal.
// src/cli is compiled into the binary only, so the guard's one source file is built in here.
#include <doctest/doctest.h>
#include <signal.h>

#include <string>

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

TEST_CASE("SIGTERM sets the flag as SIGINT does and the exit code is 128 + 15") {
  using ngxtls::cli::interrupt_guard;
  {
    interrupt_guard guard;
    CHECK(interrupt_guard::signal_number() == 0);
    // Twice at once, as GNU timeout signals its child and then the group: still running.
    ::raise(SIGTERM);
    ::raise(SIGTERM);
    CHECK(interrupt_guard::flag().load());
    CHECK(interrupt_guard::signal_number() == SIGTERM);
    CHECK(interrupt_guard::exit_code() == 143);
    CHECK(std::string(interrupt_guard::cause()) == "SIGTERM");
  }
  interrupt_guard again;
  CHECK_FALSE(interrupt_guard::flag().load());
  ::raise(SIGINT);
  CHECK(interrupt_guard::signal_number() == SIGINT);
  CHECK(interrupt_guard::exit_code() == 130);
  CHECK(std::string(interrupt_guard::cause()) == "Ctrl-C");
}
