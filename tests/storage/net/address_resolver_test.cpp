#include "net/address_resolver.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <thread>

#include "net/resolver_override.h"

using namespace std::chrono_literals;
using namespace fencelock::storage;
namespace asio = boost::asio;

namespace {

struct Lookup {
  int answers = 0;
  std::optional<Result<AddressResolver::Endpoints>> result;
  AddressResolver::Handler handler() {
    return [this](Result<AddressResolver::Endpoints> answer) {
      ++answers;
      result.emplace(std::move(answer));
    };
  }
};

std::vector<std::string> texts(const AddressResolver::Endpoints& endpoints) {
  std::vector<std::string> out;
  for (const auto& endpoint : endpoints)
    out.push_back(endpoint.address().to_string() + "#" + std::to_string(endpoint.port()));
  return out;
}

NodeAddress address(const std::string& text) {
  return fencelock::parse_address(text).value();
}

}  // namespace

TEST_CASE("resolver: an IP literal is answered without a lookup, never inline", "[storage]") {
  asio::io_context io;
  AddressResolver resolver(io.get_executor());
  Lookup lookup;
  resolver.resolve(address("[::1]:7000"), 1s, lookup.handler());
  CHECK(lookup.answers == 0);
  io.run_for(1s);
  REQUIRE(lookup.answers == 1);
  CHECK(texts(lookup.result->value()) == std::vector<std::string>{"::1#7000"});
}

TEST_CASE("resolver: localhost goes through the system resolver", "[storage]") {
  asio::io_context io;
  AddressResolver resolver(io.get_executor());
  Lookup lookup;
  resolver.resolve(address("localhost:6379"), 5s, lookup.handler());
  io.run_for(6s);
  REQUIRE(lookup.answers == 1);
  REQUIRE(lookup.result->ok());
  CHECK_THAT(texts(lookup.result->value()), Catch::VectorContains(std::string("127.0.0.1#6379")));
}

TEST_CASE("resolver: a name's addresses come in the lookup's order, failures say which name",
          "[storage]") {
  ScopedResolverOverride names;
  names.set("node-a", {"127.0.0.3", "::1", "127.0.0.2"});
  names.set("node-b", std::vector<std::string>{});
  names.fail("node-c", "Name or service not known");
  asio::io_context io;
  AddressResolver resolver(io.get_executor());
  Lookup a;
  resolver.resolve(address("Node-A:7000"), 1s, a.handler());
  io.run_for(1s);
  REQUIRE(a.answers == 1);
  CHECK(texts(a.result->value()) ==
        std::vector<std::string>{"127.0.0.3#7000", "::1#7000", "127.0.0.2#7000"});

  const auto [name, message] = GENERATE(table<std::string, std::string>({
      {"node-b:1", "node-b has no address"},
      {"node-c:1", "cannot resolve node-c: Name or service not known"},
  }));
  Lookup failed;
  io.restart();
  resolver.resolve(address(name), 1s, failed.handler());
  io.run_for(1s);
  REQUIRE(failed.answers == 1);
  REQUIRE_FALSE(failed.result->ok());
  CHECK(failed.result->error().code == ErrorCode::kUnavailable);
  CHECK(failed.result->error().message == message);
}

TEST_CASE("resolver: past our deadline the lookup fails, and its late answer is dropped",
          "[storage]") {
  ScopedResolverOverride names;
  names.set("slow-node", ResolverAnswer{{"127.0.0.2"}, {}, 300ms});
  asio::io_context io;
  AddressResolver resolver(io.get_executor());
  Lookup lookup;
  resolver.resolve(address("slow-node:7000"), 20ms, lookup.handler());
  io.run_for(600ms);
  REQUIRE(lookup.answers == 1);
  REQUIRE_FALSE(lookup.result->ok());
  CHECK(lookup.result->error().message == "resolving slow-node took longer than 20 ms");
}

TEST_CASE("resolver: a cancelled or replaced lookup never answers", "[storage]") {
  ScopedResolverOverride names;
  names.set("node-a", ResolverAnswer{{"127.0.0.2"}, {}, 50ms});
  names.set("node-b", {"127.0.0.3"});
  asio::io_context io;
  AddressResolver resolver(io.get_executor());
  Lookup cancelled;
  resolver.resolve(address("node-a:1"), 1s, cancelled.handler());
  resolver.cancel();
  Lookup replaced;
  Lookup current;
  resolver.resolve(address("node-a:1"), 1s, replaced.handler());
  resolver.resolve(address("node-b:1"), 1s, current.handler());
  io.run_for(300ms);
  CHECK(cancelled.answers == 0);
  CHECK(replaced.answers == 0);
  REQUIRE(current.answers == 1);
  CHECK(texts(current.result->value()) == std::vector<std::string>{"127.0.0.3#1"});
}

TEST_CASE("resolver: a resolver destroyed while its lookup runs is never answered", "[storage]") {
  // The lookup's thread outlives the resolver (and here its io_context too): it must touch
  // neither. ASan/UBSan would show a use after free.
  Lookup lookup;
  for (int round = 0; round < 20; ++round) {
    asio::io_context io;
    {
      AddressResolver resolver(io.get_executor());
      resolver.resolve(address("localhost:6379"), 5s, lookup.handler());
    }
    io.run_for(50ms);
  }
  std::this_thread::sleep_for(200ms);  // let the last lookups end while nothing waits for them
  CHECK(lookup.answers == 0);
}

TEST_CASE("resolver: lookups of several names run side by side, each with its own answer",
          "[storage]") {
  asio::io_context io;
  std::vector<std::unique_ptr<AddressResolver>> resolvers;
  std::vector<Lookup> lookups(8);
  for (Lookup& lookup : lookups) {
    resolvers.push_back(std::make_unique<AddressResolver>(io.get_executor()));
    resolvers.back()->resolve(address("localhost:7001"), 5s, lookup.handler());
  }
  io.run_for(6s);
  for (const Lookup& lookup : lookups) {
    REQUIRE(lookup.answers == 1);
    REQUIRE(lookup.result->ok());
    CHECK_THAT(texts(lookup.result->value()), Catch::VectorContains(std::string("127.0.0.1#7001")));
  }
}
