// fencelock scaled out, with real processes: three fencelockd instances on the same lock nodes and
// one 3-member etcd cluster for the tokens. A release through one instance wakes the waiters on
// the others; eight threads spread over the instances get tokens that are unique and in real-time
// order; an instance restarted and one added while the draws go on keep that order, and so does
// the etcd leader killed while grants go on.
// (http_etcd_tokens_test.cpp covers one caller alternating between two instances, a lost etcd
// majority and a foreign token store.)
#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "etcd_cluster.h"
#include "fencelockd_process.h"
#include "http_client.h"
#include "redis_cluster.h"
#include "sync_redis.h"
#include "temp_dir.h"
#include "token_checks.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string joined(const std::vector<std::string>& addresses) {
  std::string out;
  for (const auto& a : addresses) out += (out.empty() ? "" : ",") + a;
  return out;
}

bool ready(const Fencelockd& daemon, std::chrono::milliseconds limit = 10s) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (HttpClient(daemon.port(), 1s).get("/readyz").status == 200) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Lock nodes, an etcd cluster and the arguments every fencelockd of the cluster gets.
struct Cluster {
  RedisCluster nodes{3};
  EtcdCluster etcd{3};
  TempDir dir;

  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> all = {"--redis",         joined(nodes.addresses()),
                                    "--tokens",        "etcd://" + joined(etcd.endpoints()),
                                    "--token-timeout", "1s"};
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  }
  std::unique_ptr<Fencelockd> start(std::vector<std::string> extra = {}) {
    auto daemon = std::make_unique<Fencelockd>(dir.path(), args(std::move(extra)));
    if (!ready(*daemon)) FAIL("fencelockd did not become ready:\n" + daemon->log());
    return daemon;
  }
};

// The ports the workers may use; the main thread swaps instances in and out while they run.
class Instances {
 public:
  void set(std::vector<std::uint16_t> ports) {
    std::lock_guard<std::mutex> lock(mutex_);
    ports_ = std::move(ports);
  }
  std::uint16_t pick(std::size_t i) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ports_[i % ports_.size()];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::uint16_t> ports_;
};

// One worker's successful operations, and the instances that served them.
struct WorkerLog {
  std::vector<Draw> draws;
  std::map<std::uint16_t, int> served_by;
  int failed = 0;
};

// Draws the next token of `name` through `port`: a Draw with token 0 when it failed.
Draw draw_through(std::map<std::uint16_t, HttpClient>& clients, std::uint16_t port,
                  const std::string& name) {
  auto& http = clients.try_emplace(port, port, 2s).first->second;
  Draw d;
  d.called = Clock::now();
  const HttpAnswer answer = http.post("/v1/tokens/" + name, json::object());
  d.returned = Clock::now();
  if (answer.status == 200) d.token = answer.json().value("token", std::uint64_t{0});
  return d;
}

// Acquires `name` through `port` (waiting up to 5 s), then releases it there: a Draw for the
// grant (called before the acquire, returned when the release answered), token 0 when refused.
Draw grant_through(std::map<std::uint16_t, HttpClient>& clients, std::uint16_t port,
                   const std::string& name) {
  auto& http = clients.try_emplace(port, port, 10s).first->second;
  Draw d;
  d.called = Clock::now();
  const HttpAnswer granted =
      http.post("/v1/locks/" + name, json{{"ttl_ms", 5000}, {"wait_ms", 5000}});
  if (granted.status == 200) {
    const json lease = granted.json();
    const HttpAnswer released = http.del("/v1/locks/" + name, json{{"lease", lease["lease"]}});
    if (released.status == 200 && released.json().value("released", false)) {
      d.token = lease["token"].get<std::uint64_t>();
    }
  }
  d.returned = Clock::now();
  return d;
}

// `threads` workers, each doing at most `per_thread` operations, round robin over `instances`,
// until `stop` is set or `limit` has passed.
template <typename Operation>
std::vector<WorkerLog> run_workers(int threads, int per_thread, std::chrono::milliseconds limit,
                                   const Instances& instances, const std::atomic<bool>& stop,
                                   Operation operation) {
  std::vector<WorkerLog> logs(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  const auto deadline = Clock::now() + limit;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      WorkerLog& log = logs[static_cast<std::size_t>(t)];
      std::map<std::uint16_t, HttpClient> clients;
      for (int i = 0; i < per_thread && !stop && Clock::now() < deadline; ++i) {
        const std::uint16_t port = instances.pick(static_cast<std::size_t>(t + i));
        Draw d = operation(clients, port);
        d.thread = t;
        if (d.token == 0) {
          ++log.failed;
          continue;
        }
        log.draws.push_back(d);
        ++log.served_by[port];
      }
    });
  }
  for (auto& w : workers) w.join();
  return logs;
}

std::vector<Draw> all_draws(const std::vector<WorkerLog>& logs) {
  std::vector<Draw> all;
  for (const auto& log : logs) all.insert(all.end(), log.draws.begin(), log.draws.end());
  return all;
}

int served_by(const std::vector<WorkerLog>& logs, std::uint16_t port) {
  int count = 0;
  for (const auto& log : logs) {
    const auto it = log.served_by.find(port);
    if (it != log.served_by.end()) count += it->second;
  }
  return count;
}

// Whether a majority of the nodes hold `key` with a value that ends in `mark` — "#*" once waiters
// of two instances were refused (architecture.md, "Hand-off between fencelockd instances").
bool marked_on_majority(RedisCluster& nodes, const std::string& key, const std::string& mark) {
  std::size_t marked = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const auto value = SyncRedis(nodes.node(n).port()).get(key);
    if (value && value->ends_with(mark)) ++marked;
  }
  return marked > nodes.size() / 2;
}

struct Waiter {
  HttpAnswer granted;
  Clock::time_point answered;
};

// Three instances on one cluster.
struct ThreeInstances {
  Cluster cluster;
  std::unique_ptr<Fencelockd> a = cluster.start(), b = cluster.start(), c = cluster.start();
  std::vector<std::uint16_t> ports() const { return {a->port(), b->port(), c->port()}; }
};

}  // namespace

TEST_CASE("http cluster: waiters on two instances get the lock as soon as a third releases it",
          "[service][redis][etcd]") {
  Cluster cluster;
  // The waiters' instances would try again only after 10 s: only a wake-up serves them sooner.
  auto a = cluster.start({"--retry-delay", "10s", "--retry-jitter", "0s"});
  auto b = cluster.start({"--retry-delay", "10s", "--retry-jitter", "0s"});
  auto c = cluster.start();

  HttpClient holder(c->port());
  const HttpAnswer first = holder.post("/v1/locks/report", json{{"ttl_ms", 20000}});
  REQUIRE(first.status == 200);
  const std::uint64_t first_token = first.json()["token"].get<std::uint64_t>();

  // Each waiter releases through its own instance as soon as it has the lock.
  std::array<Waiter, 2> waiters;
  auto wait_on = [](std::uint16_t port, Waiter& w) {
    HttpClient http(port, 15s);
    w.granted = http.post("/v1/locks/report", json{{"ttl_ms", 5000}, {"wait_ms", 8000}});
    w.answered = Clock::now();
    if (w.granted.status == 200)
      http.del("/v1/locks/report", json{{"lease", w.granted.json()["lease"]}});
  };
  std::thread on_a(wait_on, a->port(), std::ref(waiters[0]));
  std::thread on_b(wait_on, b->port(), std::ref(waiters[1]));
  // Both were refused once and marked the holder's value: they now sleep out their retry delay.
  const auto deadline = Clock::now() + 5s;
  while (!marked_on_majority(cluster.nodes, "fencelock:lock:report", "#*") &&
         Clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  const bool both_waiting = marked_on_majority(cluster.nodes, "fencelock:lock:report", "#*");
  const auto released_at = Clock::now();
  const HttpAnswer released =
      holder.del("/v1/locks/report", json{{"lease", first.json()["lease"]}});
  on_a.join();
  on_b.join();

  REQUIRE(both_waiting);
  CHECK(released.json().value("released", false));
  std::set<std::uint64_t> tokens = {first_token};
  for (const Waiter& w : waiters) {
    REQUIRE(w.granted.status == 200);
    CHECK(w.answered - released_at < 2s);  // not a 10 s retry, nor an 8 s wait running out
    tokens.insert(w.granted.json()["token"].get<std::uint64_t>());
  }
  CHECK(tokens.size() == 3);
  CHECK(*tokens.begin() == first_token);
}

TEST_CASE(
    "http cluster: eight threads drawing through three instances get unique tokens in "
    "real-time order",
    "[service][redis][etcd]") {
  ThreeInstances three;
  Instances instances;
  instances.set(three.ports());
  const std::atomic<bool> stop{false};
  const auto logs =
      run_workers(8, 250, 8s, instances, stop,
                  [](std::map<std::uint16_t, HttpClient>& clients, std::uint16_t port) {
                    return draw_through(clients, port, "doc");
                  });
  const auto draws = all_draws(logs);
  INFO(draws.size() << " draws");
  CHECK(draws.size() >= 200);
  CHECK(draws_problem(draws).empty());
  for (const auto port : three.ports()) CHECK(served_by(logs, port) > 0);
  const std::uint64_t greatest =
      std::max_element(draws.begin(), draws.end(), [](const Draw& x, const Draw& y) {
        return x.token < y.token;
      })->token;
  for (const auto port : three.ports())
    CHECK(HttpClient(port).get("/v1/tokens/doc").json().value("token", std::uint64_t{0}) >=
          greatest);
}

TEST_CASE(
    "http cluster: eight threads taking one lock through three instances get tokens in "
    "real-time order",
    "[service][redis][etcd]") {
  ThreeInstances three;
  Instances instances;
  instances.set(three.ports());
  const std::atomic<bool> stop{false};
  // Each grant is released before the thread's next acquire; the others wait meanwhile.
  const auto logs =
      run_workers(8, 25, 8s, instances, stop,
                  [](std::map<std::uint16_t, HttpClient>& clients, std::uint16_t port) {
                    return grant_through(clients, port, "ledger");
                  });
  const auto grants = all_draws(logs);
  INFO(grants.size() << " grants");
  CHECK(grants.size() >= 40);
  CHECK(draws_problem(grants).empty());
  for (const auto port : three.ports()) CHECK(served_by(logs, port) > 0);
}

TEST_CASE("http cluster: tokens keep increasing while an instance restarts and another joins",
          "[service][redis][etcd]") {
  ThreeInstances three;
  Cluster& cluster = three.cluster;
  auto& a = three.a;
  Instances instances;
  instances.set(three.ports());
  std::atomic<bool> stop{false};

  std::vector<WorkerLog> logs;
  std::thread load([&] {
    logs = run_workers(8, 2000, 20s, instances, stop,
                       [](std::map<std::uint16_t, HttpClient>& clients, std::uint16_t port) {
                         return draw_through(clients, port, "doc");
                       });
  });
  // Started and stopped here, on the test's thread: a child dies with the thread that started it.
  std::this_thread::sleep_for(1s);
  a->stop(SIGKILL);
  instances.set({three.b->port(), three.c->port()});
  a = cluster.start();  // the same instance again, on a new port
  auto d = cluster.start();
  instances.set({a->port(), three.b->port(), three.c->port(), d->port()});
  std::this_thread::sleep_for(1500ms);
  stop = true;
  load.join();

  const auto draws = all_draws(logs);
  INFO(draws.size() << " draws");
  CHECK(draws_problem(draws).empty());
  CHECK(served_by(logs, a->port()) > 0);  // the restarted instance
  CHECK(served_by(logs, d->port()) > 0);  // the new one
  const std::uint64_t greatest =
      std::max_element(draws.begin(), draws.end(), [](const Draw& x, const Draw& y) {
        return x.token < y.token;
      })->token;
  HttpClient late(d->port());
  const HttpAnswer after = late.post("/v1/locks/doc", json{{"ttl_ms", 2000}});
  REQUIRE(after.status == 200);
  CHECK(after.json()["token"].get<std::uint64_t>() > greatest);
}

TEST_CASE("http cluster: grants through three instances stay in order when the etcd leader dies",
          "[service][redis][etcd]") {
  ThreeInstances three;
  Instances instances;
  instances.set(three.ports());
  std::atomic<bool> stop{false};

  std::vector<WorkerLog> logs;
  std::thread load([&] {
    logs = run_workers(8, 1000, 12s, instances, stop,
                       [](std::map<std::uint16_t, HttpClient>& clients, std::uint16_t port) {
                         return grant_through(clients, port, "ledger");
                       });
  });
  std::this_thread::sleep_for(1s);
  const auto leader = three.cluster.etcd.leader();
  const auto killed_at = Clock::now();
  if (leader) three.cluster.etcd.kill(*leader);
  std::this_thread::sleep_for(4s);
  stop = true;
  load.join();

  REQUIRE(leader);
  const auto grants = all_draws(logs);
  INFO(grants.size() << " grants");
  CHECK(draws_problem(grants).empty());
  // Grants resumed: some were asked for well after the kill, once a new leader was elected.
  const auto resumed = std::count_if(grants.begin(), grants.end(),
                                     [&](const Draw& d) { return d.called > killed_at + 2s; });
  CHECK(resumed > 0);
}
