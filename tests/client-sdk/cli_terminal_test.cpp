// `fencelock run` started from an interactive terminal: the command it runs may read the
// terminal, and Ctrl-C and signals reach it, as with the command run on its own.
#include <catch2/catch.hpp>
#include <csignal>

#include "build_paths.h"
#include "pty_process.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

PtyProcess run_on_terminal(ServiceUnderTest& s, const std::string& name,
                           const std::string& script) {
  return PtyProcess({cli_binary(), "run", "--ttl", "5s", name, "--", "sh", "-c", script},
                    {"FENCELOCK_ENDPOINT=" + s.endpoint()});
}

bool held(ServiceUnderTest& s, const std::string& name) {
  return s.client().get("/v1/locks/" + name).json()["held"] == true;
}

}  // namespace

TEST_CASE("cli: run gives the terminal to a command that reads it, instead of leaving it stopped",
          "[client][redis]") {
  ServiceUnderTest s;
  PtyProcess fencelock =
      run_on_terminal(s, "tty-read", "echo ready; read line; echo \"got:$line\"");
  REQUIRE(fencelock.wait_for_output("ready", 10s));
  fencelock.type("hello\n");
  CHECK(fencelock.wait_for_output("got:hello", 10s));  // was: stopped by SIGTTIN for ever
  CHECK(fencelock.wait_exit(10s) == 0);
  CHECK_FALSE(held(s, "tty-read"));
}

TEST_CASE("cli: SIGTERM to fencelock ends a command waiting on the terminal and releases the lock",
          "[client][redis]") {
  ServiceUnderTest s;
  PtyProcess fencelock = run_on_terminal(s, "tty-term", "echo ready; read line");
  REQUIRE(fencelock.wait_for_output("ready", 10s));
  CHECK(held(s, "tty-term"));
  fencelock.signal(SIGTERM);
  CHECK(fencelock.wait_exit(10s) == 128 + SIGTERM);  // was: no exit, SIGTERM had no effect
  CHECK_FALSE(held(s, "tty-term"));
}

TEST_CASE("cli: Ctrl-C on the terminal interrupts the command, and fencelock releases the lock",
          "[client][redis]") {
  ServiceUnderTest s;
  PtyProcess fencelock = run_on_terminal(s, "tty-int", "echo ready; read line");
  REQUIRE(fencelock.wait_for_output("ready", 10s));
  fencelock.type("\x03");
  CHECK(fencelock.wait_exit(10s) == 128 + SIGINT);
  CHECK_FALSE(held(s, "tty-int"));
}
