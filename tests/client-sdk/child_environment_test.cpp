// What `fencelock run` puts into the command's environment for each kind of lease.
#include "child_environment.h"

#include <catch2/catch.hpp>

using namespace fencelock;
using namespace fencelock::cli;
using namespace std::chrono_literals;

namespace {
const std::vector<std::string> kInherited = {"PATH=/bin",
                                             "FENCELOCK_NAME=old",
                                             "FENCELOCK_TOKENS=x=1",
                                             "FENCELOCK_LEASE=1.ab",
                                             "FENCELOCK_SLOT=9",
                                             "HOME=/root",
                                             "FENCELOCK_ENDPOINT=http://127.0.0.1:1"};
}  // namespace

TEST_CASE("cli environment: a lock gives FENCELOCK_NAME and FENCELOCK_TOKEN, never the lease",
          "[client]") {
  const Lease lease("jobs", "5.ab", 5, 1s, Lease::Clock::now());
  CHECK(child_environment(kInherited, lease) ==
        std::vector<std::string>{"PATH=/bin", "HOME=/root", "FENCELOCK_ENDPOINT=http://127.0.0.1:1",
                                 "FENCELOCK_NAME=jobs", "FENCELOCK_TOKEN=5"});
}

TEST_CASE("cli environment: a lock set gives FENCELOCK_NAMES and FENCELOCK_TOKENS, sorted",
          "[client]") {
  const auto lease = Lease::lock_set({"a", "b.2"}, {17, 4}, "17,4.ab", 1s, Lease::Clock::now());
  CHECK(tokens_text(lease) == "a=17,b.2=4");
  CHECK(child_environment(kInherited, lease) ==
        std::vector<std::string>{"PATH=/bin", "HOME=/root", "FENCELOCK_ENDPOINT=http://127.0.0.1:1",
                                 "FENCELOCK_NAMES=a,b.2", "FENCELOCK_TOKENS=a=17,b.2=4"});
}

TEST_CASE("cli environment: a permit adds its slot and the semaphore's permits", "[client]") {
  const auto lease = Lease::permit("pool", 3, 1, "9.ab.3.1", 9, 1s, Lease::Clock::now());
  CHECK(child_environment({}, lease) ==
        std::vector<std::string>{"FENCELOCK_NAME=pool", "FENCELOCK_TOKEN=9", "FENCELOCK_SLOT=1",
                                 "FENCELOCK_PERMITS=3"});
}
