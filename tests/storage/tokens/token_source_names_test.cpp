// Token sources named by DNS name: the Redis token master and etcd members are resolved (localhost
// through the system resolver, other names through the resolver's test seam), and a name that
// does not resolve fails the start with a message naming it.
#include <catch2/catch.hpp>

#include "etcd_cluster.h"
#include "fencelock/storage/etcd_token_source.h"
#include "fencelock/storage/redis_token_source.h"
#include "io_thread.h"
#include "net/resolver_override.h"
#include "redis_cluster.h"
#include "temp_dir.h"
#include "token_checks.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

NodeAddress named(const std::string& host, std::uint16_t port) {
  return fencelock::parse_address(host + ":" + std::to_string(port)).value();
}

}  // namespace

TEST_CASE("redis tokens: a token master named localhost is resolved and draws",
          "[storage][redis]") {
  TempDir dir;
  RedisCluster master(1, Persistence::kAofAlways);
  IoThread io;
  RedisTokenOptions options;
  options.master = named("localhost", master.node(0).port());
  options.epoch_file = dir.path() / "epoch";
  auto created = RedisTokenSource::create(io.executor(), options);
  REQUIRE(created.ok());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Result<std::uint64_t> token = make_error(ErrorCode::kUnavailable, "not drawn");
  while (!token.ok() && std::chrono::steady_clock::now() < deadline) {
    token = draw_one(*created.value(), "doc");
    if (!token.ok()) std::this_thread::sleep_for(10ms);
  }
  CHECK(token.ok());
}

TEST_CASE("redis tokens: a token master whose name does not resolve fails the start, naming it",
          "[storage]") {
  TempDir dir;
  ScopedResolverOverride names;
  names.fail("tokens.test", "Name or service not known");
  IoThread io;
  RedisTokenOptions options;
  options.master = named("tokens.test", 6379);
  options.epoch_file = dir.path() / "epoch";
  const auto created = RedisTokenSource::create(io.executor(), options);
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().code == ErrorCode::kUnavailable);
  CHECK(created.error().message ==
        "token master tokens.test:6379: cannot resolve tokens.test: Name or service not known");
}

TEST_CASE("etcd tokens: members named by DNS name are resolved, every address tried",
          "[storage][etcd]") {
  EtcdCluster cluster(1);
  ScopedResolverOverride names;
  names.set("etcd-a.test", {"127.0.0.3", "127.0.0.1"});  // nothing listens on the first
  IoThread io;
  EtcdTokenOptions options;
  options.timeout = 2s;
  SECTION("localhost, through the system resolver") {
    options.endpoints = {named("localhost", cluster.client_port(0))};
  }
  SECTION("a name with two addresses") {
    options.endpoints = {named("etcd-a.test", cluster.client_port(0))};
  }
  auto created = EtcdTokenSource::create(io.executor(), options);
  REQUIRE(created.ok());
  CHECK(draw_one(*created.value(), "doc").ok());
}

TEST_CASE("etcd tokens: a member whose name does not resolve is skipped, naming it", "[storage]") {
  ScopedResolverOverride names;
  names.fail("etcd-gone.test", "Name or service not known");
  IoThread io;
  EtcdTokenOptions options;
  options.endpoints = {named("etcd-gone.test", 2379)};
  options.timeout = 200ms;
  const auto created = EtcdTokenSource::create(io.executor(), options);
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(created.error().message,
             Catch::Contains("etcd-gone.test:2379: cannot resolve etcd-gone.test"));
}
