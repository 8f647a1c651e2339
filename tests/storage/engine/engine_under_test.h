// A RedlockEngine over a RedisCluster, driven from the test thread with blocking calls.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "engine/instance_registry.h"
#include "fencelock/storage/redlock_engine.h"
#include "io_thread.h"
#include "redis_cluster.h"

namespace fencelock::testing {

using namespace std::chrono_literals;

// Blocks until an asynchronous call with a Result<T> handler completes.
template <class T, class Start>
storage::Result<T> await(Start start) {
  auto promise = std::make_shared<std::promise<storage::Result<T>>>();
  auto future = promise->get_future();
  start([promise](storage::Result<T> result) { promise->set_value(std::move(result)); });
  return future.get();
}

// What the holder of `lease` presents to extend or release it.
inline storage::LeaseClaim claim(const storage::Lease& lease) {
  return {lease.token, lease.proof, {}};
}
inline storage::LeaseClaim claim(const storage::Result<storage::Lease>& lease) {
  return claim(lease.value());
}

inline storage::EngineOptions engine_options_for(RedisCluster& cluster) {
  storage::EngineOptions options;
  for (const auto& address : cluster.addresses()) {
    options.nodes.push_back(storage::parse_node_address(address).value());
  }
  return options;
}

class EngineUnderTest {
 public:
  // Waits until every node votes and the engine's first registry round found its token store on
  // a majority (a fresh engine refuses to grant before), unless `wait_for_nodes` is false.
  explicit EngineUnderTest(storage::EngineOptions options,
                           std::shared_ptr<storage::TokenSource> tokens = nullptr,
                           storage::EngineObserver* observer = nullptr, bool wait_for_nodes = true)
      : own_io_(std::in_place), executor_(own_io_->executor()) {
    start(std::move(options), std::move(tokens), observer, wait_for_nodes);
  }
  // The same on `io`, the thread a token source of the test answers on: declared before the
  // engine, it outlives it, so no draw is answered onto an engine context that is gone.
  EngineUnderTest(IoThread& io, storage::EngineOptions options,
                  std::shared_ptr<storage::TokenSource> tokens = nullptr,
                  storage::EngineObserver* observer = nullptr, bool wait_for_nodes = true)
      : executor_(io.executor()) {
    start(std::move(options), std::move(tokens), observer, wait_for_nodes);
  }

  // Waits until `engine` no longer refuses for want of a first registry round.
  static void wait_for_first_registry_round(const storage::LockEngine& engine,
                                            std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      const auto refusal = engine.grant_refusal();
      if (!refusal || !refusal->starts_with(storage::InstanceRegistry::kNotYetChecked)) return;
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("the engine's registry never reached a majority");
      }
      std::this_thread::sleep_for(5ms);
    }
  }
  // Waits until the registry lets the engine grant (after a majority of nodes lost their data,
  // that takes a round once every node votes again).
  void wait_until_granting(std::chrono::milliseconds limit = 10s) {
    wait_until([&] { return !engine_->grant_refusal(); }, limit);
  }
  ~EngineUnderTest() {
    engine_->stop();
    engine_.reset();
  }

  storage::RedlockEngine& engine() { return *engine_; }

  // Waits until `count` nodes are connected and voting; throws after `limit`.
  void wait_for_voting_nodes(std::size_t count, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (engine_->voting_nodes() != count) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("engine did not reach " + std::to_string(count) + " voting nodes");
      }
      std::this_thread::sleep_for(5ms);
    }
  }

  // Waits until `condition()` holds; throws after `limit`.
  template <class Condition>
  void wait_until(Condition condition, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("condition not reached in time");
      std::this_thread::sleep_for(5ms);
    }
  }
  bool node_up(std::size_t i) const { return engine_->node_statuses().at(i).up; }

  storage::Result<storage::Lease> acquire(const std::string& name, std::chrono::milliseconds ttl,
                                          std::chrono::milliseconds wait = 0ms,
                                          const std::string& owner = {}) {
    return await<storage::Lease>([&](auto done) {
      engine_->acquire(storage::AcquireRequest{name, ttl, wait, owner}, std::move(done));
    });
  }
  storage::Result<storage::Extension> extend(const std::string& name,
                                             const storage::LeaseClaim& claim,
                                             std::chrono::milliseconds ttl) {
    return await<storage::Extension>(
        [&](auto done) { engine_->extend(name, claim, ttl, std::move(done)); });
  }
  storage::Result<bool> release(const std::string& name, const storage::LeaseClaim& claim) {
    return await<bool>([&](auto done) { engine_->release(name, claim, std::move(done)); });
  }
  storage::Result<storage::LockStatus> inspect(const std::string& name) {
    return await<storage::LockStatus>([&](auto done) { engine_->inspect(name, std::move(done)); });
  }

 private:
  void start(storage::EngineOptions options, std::shared_ptr<storage::TokenSource> tokens,
             storage::EngineObserver* observer, bool wait_for_nodes) {
    auto created =
        storage::RedlockEngine::create(executor_, std::move(options), std::move(tokens), observer);
    if (!created.ok()) throw std::runtime_error(created.error().message);
    engine_ = std::move(created).value();
    engine_->start();
    if (wait_for_nodes) {
      wait_for_voting_nodes(engine_->node_count());
      wait_for_first_registry_round(*engine_);
    }
  }

  std::optional<IoThread> own_io_;  // declared first: outlives the engine (unless io is shared)
  boost::asio::any_io_executor executor_;
  std::unique_ptr<storage::RedlockEngine> engine_;
};

}  // namespace fencelock::testing
