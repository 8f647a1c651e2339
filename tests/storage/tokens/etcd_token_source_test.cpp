// The etcd token source against a real 3-member etcd cluster (Debian's etcd-server): order across
// instances, a killed leader, a lost majority, batching, another cluster behind an endpoint.
#include "fencelock/storage/etcd_token_source.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "etcd_cluster.h"
#include "http_client.h"
#include "io_thread.h"
#include "tcp_proxy.h"
#include "token_checks.h"
#include "tokens/etcd_wire.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

EtcdTokenOptions options_for(const EtcdCluster& cluster) {
  EtcdTokenOptions options;
  for (const auto& endpoint : cluster.endpoints()) {
    options.endpoints.push_back(parse_node_address(endpoint).value());
  }
  options.timeout = 1s;  // generous: the suite runs beside builds
  return options;
}

std::shared_ptr<EtcdTokenSource> create(IoThread& io, EtcdTokenOptions options) {
  auto created = EtcdTokenSource::create(io.executor(), std::move(options));
  if (!created.ok()) FAIL(created.error().message);
  return created.value();
}

}  // namespace

TEST_CASE("etcd wire: answers are read as the gateway writes them", "[storage]") {
  CHECK(etcd::base64("fencelock/token/a") == "ZmVuY2Vsb2NrL3Rva2VuL2E=");
  auto header = etcd::read_header(
      200, R"({"header":{"cluster_id":"14841639068965178418","revision":"17"},"succeeded":true})");
  REQUIRE(header.ok());
  CHECK(header->cluster_id == "14841639068965178418");
  CHECK(header->revision == 17);
  CHECK(etcd::read_header(503, R"({"error":"etcdserver: no leader","code":14})").error().message ==
        "etcd: etcdserver: no leader");
  CHECK(etcd::read_header(200, "not json").error().code == ErrorCode::kInternal);
  CHECK(etcd::read_header(200, R"({"header":{"revision":"x"}})").error().code ==
        ErrorCode::kInternal);
  CHECK(header->succeeded);
  CHECK_FALSE(etcd::read_header(200, R"({"header":{}})")->succeeded);
  CHECK(etcd::read_header(200, R"({"header":{},"succeeded":true})")->succeeded);
  CHECK(etcd::read_header(200, R"({"header":{},"succeeded":"yes"})").error().code ==
        ErrorCode::kInternal);
  const auto range = [](std::string_view inner) {
    return R"({"header":{},"succeeded":true,"responses":[{"response_range":)" + std::string(inner) +
           "}]}";
  };
  CHECK(etcd::read_first_range(range(R"({"header":{}})"))->mod_revision == 0);
  const auto read = etcd::read_first_range(
      range(R"({"kvs":[{"mod_revision":"7","value":"aGVsbG8="}],"count":"1"})"));
  REQUIRE(read.ok());
  CHECK(read->mod_revision == 7);
  CHECK(read->value == "hello");
  CHECK(
      etcd::read_first_range(range(R"({"kvs":[{"mod_revision":"7","value":"a"}]})")).error().code ==
      ErrorCode::kInternal);
  CHECK(etcd::read_first_range(R"({"header":{}})").error().code == ErrorCode::kInternal);
  for (const std::string text : {"", "a", "ab", "abc", "abcd", "fencelock/token/#history"}) {
    CHECK(etcd::unbase64(etcd::base64(text)).value() == text);
  }
}

TEST_CASE("etcd tokens: two instances, eight threads each, unique and in real-time order",
          "[storage][etcd]") {
  EtcdCluster cluster(3);
  IoThread io;
  auto first = create(io, options_for(cluster));
  auto second = create(io, options_for(cluster));
  CHECK(first->identity() == second->identity());
  CHECK(first->identity().rfind("etcd:", 0) == 0);

  std::vector<Draw> all;
  std::mutex mutex;
  std::vector<std::thread> instances;
  for (auto* source : {first.get(), second.get()}) {
    instances.emplace_back([&, source] {
      auto draws = draw_concurrently(*source, "doc", 8, 250);
      std::lock_guard<std::mutex> lock(mutex);
      all.insert(all.end(), draws.begin(), draws.end());
    });
  }
  for (auto& t : instances) t.join();
  CHECK(draws_problem(all) == "");
  const auto now = current_of(*first, "doc");
  REQUIRE(now.ok());
  CHECK(now.value() == std::max_element(all.begin(), all.end(), [](const Draw& a, const Draw& b) {
                         return a.token < b.token;
                       })->token);
  // etcd keeps no key per name: any name's current token is a bound above every token so far
  // and below the next draw.
  const auto never = current_of(*first, "never-drawn");
  REQUIRE(never.ok());
  CHECK(never.value() >= now.value());
  CHECK(draw_one(*second, "never-drawn").value() > never.value());
}

TEST_CASE("etcd tokens: draws of many names share transactions, one name never twice in one",
          "[storage][etcd]") {
  EtcdCluster cluster(3);
  IoThread io;
  auto source = create(io, options_for(cluster));
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back(i % 3 == 0 ? "same" : "n" + std::to_string(i));
  const auto tokens = draw_burst(*source, names);
  std::set<std::uint64_t> revisions, same;
  for (std::size_t i = 0; i < names.size(); ++i) {
    REQUIRE(tokens[i].ok());
    revisions.insert(tokens[i].value());
    if (names[i] == "same") CHECK(same.insert(tokens[i].value()).second);  // never repeated
  }
  CHECK(revisions.size() < names.size() / 2);  // batched: far fewer revisions than draws
  CHECK(same.size() == 100);

  // The source's keys in etcd are two, however many names were drawn.
  HttpClient client(cluster.client_port(0), 2s);
  const auto keys =
      client.post("/v3/kv/range", nlohmann::json{{"key", etcd::base64("fencelock/")},
                                                 {"range_end", etcd::base64("fencelock0")},
                                                 {"count_only", true}});
  REQUIRE(keys.status == 200);
  CHECK(keys.json().value("count", "") == "2");
}

TEST_CASE("etcd tokens: reads share a transaction and stay between the draws around them",
          "[storage][etcd]") {
  EtcdCluster cluster(1);
  IoThread io;
  auto source = create(io, options_for(cluster));
  const auto before = draw_one(*source, "doc");
  REQUIRE(before.ok());
  std::vector<std::promise<Result<std::uint64_t>>> reads(50);
  for (std::size_t i = 0; i < reads.size(); ++i) {
    source->current("n" + std::to_string(i % 5),
                    [&reads, i](Result<std::uint64_t> token) { reads[i].set_value(token); });
  }
  std::set<std::uint64_t> values;
  for (auto& read : reads) {
    auto token = read.get_future().get();
    REQUIRE(token.ok());
    CHECK(token.value() >= before.value());
    values.insert(token.value());
  }
  CHECK(values.size() < reads.size() / 2);  // batched
  const auto after = draw_one(*source, "doc");
  REQUIRE(after.ok());
  CHECK(after.value() > *values.rbegin());
}

TEST_CASE("etcd tokens: a read through a follower is never below a draw answered before it",
          "[storage][etcd]") {
  // Review of the one-key draws (F1): a transaction with no operation is answered from the
  // member's own state, and a follower's may lag the leader's.
  EtcdCluster cluster(3);
  IoThread io;
  const auto leader = cluster.leader();
  REQUIRE(leader.has_value());
  const auto only = [&](std::size_t member) {
    auto options = options_for(cluster);
    options.endpoints = {parse_node_address(cluster.endpoints().at(member)).value()};
    return create(io, options);
  };
  auto drawer = only(*leader);
  auto reader = only((*leader + 1) % 3);
  int below = 0;
  for (int i = 0; i < 300; ++i) {
    const auto drawn = draw_one(*drawer, "doc");
    REQUIRE(drawn.ok());
    const auto read = current_of(*reader, "doc");
    REQUIRE(read.ok());
    if (read.value() < drawn.value()) ++below;
  }
  CHECK(below == 0);
  CHECK_FALSE(reader->broken());
}

TEST_CASE("etcd tokens: the leader killed during a draw storm repeats nothing and draws resume",
          "[storage][etcd]") {
  EtcdCluster cluster(3);
  IoThread io;
  auto source = create(io, options_for(cluster));
  std::atomic<bool> stop{false};
  std::vector<Draw> all;
  std::mutex mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000 && !stop; ++i) {
        Draw d;
        d.thread = t;
        d.called = std::chrono::steady_clock::now();
        auto token = draw_one(*source, "storm");
        d.returned = std::chrono::steady_clock::now();
        if (!token.ok()) continue;
        d.token = token.value();
        std::lock_guard<std::mutex> lock(mutex);
        all.push_back(d);
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  const auto leader = cluster.leader();
  REQUIRE(leader.has_value());
  cluster.kill(*leader);
  const auto killed_at = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(200ms);
  cluster.wait_for_leader();
  // Draws resume within a few seconds of the kill.
  std::optional<std::chrono::steady_clock::time_point> resumed;
  while (!resumed && std::chrono::steady_clock::now() < killed_at + 10s) {
    const auto token = draw_one(*source, "probe");
    if (token.ok()) resumed = std::chrono::steady_clock::now();
  }
  stop = true;
  for (auto& t : threads) t.join();
  REQUIRE(resumed.has_value());
  CHECK(*resumed - killed_at < 5s);
  CHECK(draws_problem(all) == "");
  cluster.start(*leader);
}

TEST_CASE("etcd tokens: with 2 of 3 members down nothing is drawn, and tokens go on above after",
          "[storage][etcd]") {
  EtcdCluster cluster(3);
  IoThread io;
  auto source = create(io, options_for(cluster));
  const auto before = draw_one(*source, "doc");
  REQUIRE(before.ok());
  cluster.kill(0);
  cluster.kill(1);
  for (int i = 0; i < 3; ++i) {
    const auto refused = draw_one(*source, "doc");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kUnavailable);
  }
  cluster.start(0);
  cluster.start(1);
  cluster.wait_for_leader();
  std::optional<std::uint64_t> after;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!after && std::chrono::steady_clock::now() < deadline) {
    const auto token = draw_one(*source, "doc");
    if (token.ok()) after = token.value();
  }
  REQUIRE(after.has_value());
  CHECK(*after > before.value());
}

TEST_CASE("etcd tokens: an endpoint that now leads to another etcd cluster is refused",
          "[storage][etcd]") {
  EtcdCluster cluster(1);
  EtcdCluster other(1);
  TcpProxy address(cluster.client_port(0));  // an address whose backend an operator swaps
  IoThread io;
  EtcdTokenOptions options;
  options.endpoints = {parse_node_address("127.0.0.1:" + std::to_string(address.port())).value()};
  auto source = create(io, options);
  const auto before = draw_one(*source, "doc");
  REQUIRE(before.ok());
  address.retarget(other.client_port(0));
  const auto refused = draw_one(*source, "doc");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(refused.error().message, Catch::Contains("belongs to another cluster"));
}

TEST_CASE("etcd tokens: no endpoint answering fails at start, bad options are refused",
          "[storage]") {
  IoThread io;
  EtcdTokenOptions options;
  CHECK(EtcdTokenSource::create(io.executor(), options).error().code ==
        ErrorCode::kInvalidArgument);
  options.endpoints = {parse_node_address("127.0.0.1:1").value()};
  options.timeout = 200ms;
  const auto created = EtcdTokenSource::create(io.executor(), options);
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(created.error().message, Catch::Contains("127.0.0.1:1"));
}

namespace {

// Draws until etcd answers (after members restarted, the first requests may meet closed
// connections) and returns that answer, or the last failure after 10 s.
Result<std::uint64_t> draw_answered(EtcdTokenSource& source, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    auto token = draw_one(source, name);
    const bool answered =
        token.ok() ||
        token.error().message.find("etcd's revision went back") != std::string::npos ||
        token.error().message.find("no longer holds this token history") != std::string::npos;
    if (answered || std::chrono::steady_clock::now() > deadline) return token;
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace

// Review of the etcd source (E1): etcd keeps its cluster id when it is bootstrapped again with the
// same flags, while its revisions start again at 1.
TEST_CASE("etcd tokens: a cluster wiped and bootstrapped again keeps its id but is refused",
          "[storage][etcd]") {
  EtcdCluster cluster(3);
  IoThread io;
  auto before = create(io, options_for(cluster));
  for (int i = 0; i < 20; ++i) REQUIRE(draw_one(*before, "doc").ok());
  cluster.wipe();
  const auto refused = draw_answered(*before, "doc");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(refused.error().message, Catch::Contains("no longer holds this token history"));
  // For good: the history written after the wipe is another one.
  auto after = create(io, options_for(cluster));
  REQUIRE(draw_one(*after, "doc").ok());
  CHECK_THAT(draw_one(*before, "doc").error().message,
             Catch::Contains("no longer holds this token history"));
  // Same cluster id, another history: the lock nodes see another token store.
  const std::string cluster_part = before->identity().substr(0, before->identity().rfind(':'));
  CHECK(after->identity().rfind(cluster_part + ":", 0) == 0);
  CHECK(after->identity() != before->identity());
}

TEST_CASE("etcd tokens: a running source refuses a cluster restored from an older copy",
          "[storage][etcd]") {
  EtcdCluster cluster(3);
  IoThread io;
  auto source = create(io, options_for(cluster));
  REQUIRE(draw_one(*source, "doc").ok());
  cluster.back_up();
  std::uint64_t highest = 0;
  for (int i = 0; i < 30; ++i) highest = draw_answered(*source, "doc").value();
  cluster.restore();
  const auto refused = draw_answered(*source, "doc");
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("etcd's revision went back"));
  // Even once etcd's revisions pass the highest token again, for good.
  auto other = create(io, options_for(cluster));
  CHECK(other->identity() == source->identity());  // the restored history: the lock nodes' mark
  for (int i = 0; i < 40; ++i) REQUIRE(draw_answered(*other, "filler").ok());
  CHECK(draw_answered(*other, "doc").value() > highest);
  CHECK_FALSE(draw_one(*source, "doc").ok());
}

TEST_CASE("etcd tokens: a floor set when a prefix is first used raises every token",
          "[storage][etcd]") {
  EtcdCluster cluster(1);
  IoThread io;
  auto options = options_for(cluster);
  options.key_prefix = "moved/";
  options.floor = 1'000'000'000'000;
  auto first = create(io, options);
  const auto token = draw_one(*first, "doc");
  REQUIRE(token.ok());
  CHECK(token.value() > options.floor);
  CHECK(current_of(*first, "doc").value() == token.value());
  CHECK(current_of(*first, "never-drawn").value() == token.value());  // the bound: no key per name

  SECTION("a later instance with no floor or a lower one gets the prefix's") {
    options.floor = GENERATE(std::uint64_t{0}, std::uint64_t{5});
    auto later = create(io, options);
    CHECK(later->identity() == first->identity());
    CHECK(draw_one(*later, "doc").value() > token.value());
  }
  SECTION("a floor above what the prefix hands out refuses to start") {
    options.floor = 2'000'000'000'000;
    const auto refused = EtcdTokenSource::create(io.executor(), options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("take a new prefix"));
  }
  SECTION("a floor on a new prefix is the new prefix's") {
    options.floor = 2'000'000'000'000;
    options.key_prefix = "moved-again/";
    CHECK(draw_one(*create(io, options), "doc").value() > options.floor);
  }
  SECTION("a history key that fencelock did not write refuses to start") {
    options.key_prefix = "foreign/";
    HttpClient client(cluster.client_port(0), 2s);
    client.post("/v3/kv/put", nlohmann::json{{"key", etcd::base64(history_key("foreign/"))},
                                             {"value", etcd::base64("hello")}});
    const auto refused = EtcdTokenSource::create(io.executor(), options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kInternal);
    CHECK_THAT(refused.error().message, Catch::Contains("not a fencelock token history"));
  }
}

TEST_CASE("etcd tokens: a prefix has a history once a token was drawn under it",
          "[storage][etcd]") {
  EtcdCluster cluster(1);
  IoThread io;
  auto options = options_for(cluster);
  options.key_prefix = "history/";
  auto first = create(io, options);
  CHECK_FALSE(first->has_history());
  CHECK_FALSE(create(io, options)->has_history());  // started beside it: nothing drawn yet
  REQUIRE(draw_one(*first, "doc").ok());
  CHECK(create(io, options)->has_history());
}
