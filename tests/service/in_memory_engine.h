// A LockEngine and a TokenSource in memory, for unit tests of the API's behaviour without Redis.
// Completions are queued and run by run_pending() on the test's thread, so a handler never runs
// inside the call that started it (the LockEngine contract). Not thread-safe; one test thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "fencelock/storage/lock_engine.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::testing {

class InMemoryTokens final : public storage::TokenSource {
 public:
  void next(std::string_view name, Callback done) override { done(++counters_[std::string(name)]); }
  void current(std::string_view name, Callback done) override {
    done(counters_[std::string(name)]);
  }

 private:
  std::map<std::string, std::uint64_t> counters_;
};

class InMemoryEngine final : public storage::LockEngine {
 public:
  using Clock = std::chrono::steady_clock;

  explicit InMemoryEngine(std::shared_ptr<storage::TokenSource> tokens)
      : tokens_(std::move(tokens)) {
    options_.nodes.push_back({"127.0.0.1", 1});
  }

  // Runs every queued completion (and any they queue).
  void run_pending() {
    while (!pending_.empty()) {
      auto next = std::move(pending_.front());
      pending_.pop_front();
      next();
    }
  }
  std::size_t calls() const { return calls_; }
  std::size_t held() const { return locks_.size(); }
  // A call about this name throws, as a bug in a handler would.
  std::string throwing_name = "boom";
  std::optional<std::string> refusal;

  storage::AcquireTicket acquire(storage::AcquireRequest request, AcquireHandler done) override {
    ++calls_;
    if (request.name == throwing_name) throw std::runtime_error("in-memory engine: boom");
    later([this, request, done = std::move(done)] {
      if (refusal) return done(storage::make_error(storage::ErrorCode::kUnavailable, *refusal));
      if (locks_.count(request.name) != 0) {
        return done(
            storage::make_error(storage::ErrorCode::kLocked, "the lock is held by another lease"));
      }
      tokens_->next(request.name, [&](storage::Result<std::uint64_t> token) {
        const std::string proof = std::string(16, 'a') + std::to_string(next_proof_++);
        storage::Lease lease;
        lease.name = request.name;
        lease.proof = proof + std::string(48 - proof.size(), '0');
        lease.token = token.value();
        lease.ttl = request.ttl;
        lease.validity = request.ttl - std::chrono::milliseconds(1);
        lease.started = Clock::now();
        locks_[request.name] = {lease.token, lease.proof};
        done(std::move(lease));
      });
    });
    return {};
  }
  void extend(std::string name, storage::LeaseClaim claim, std::chrono::milliseconds ttl,
              ExtendHandler done) override {
    ++calls_;
    later([this, name, claim, ttl, done = std::move(done)] {
      const auto it = locks_.find(name);
      if (it == locks_.end() || it->second.proof != claim.proof) {
        return done(storage::make_error(storage::ErrorCode::kLeaseLost,
                                        "the lease no longer holds the lock"));
      }
      if (it->second.token != claim.token) {
        return done(storage::make_error(storage::ErrorCode::kInvalidArgument,
                                        "the lease's token is not its own"));
      }
      done(storage::Extension{claim.token, ttl, ttl - std::chrono::milliseconds(1), Clock::now()});
    });
  }
  void release(std::string name, storage::LeaseClaim claim, ReleaseHandler done) override {
    ++calls_;
    later([this, name, claim, done = std::move(done)] {
      const auto it = locks_.find(name);
      if (it == locks_.end() || it->second.proof != claim.proof) return done(false);
      if (it->second.token != claim.token) {
        return done(storage::make_error(storage::ErrorCode::kInvalidArgument,
                                        "the lease's token is not its own"));
      }
      locks_.erase(it);
      done(true);
    });
  }
  void inspect(std::string name, InspectHandler done) override {
    ++calls_;
    later([this, name, done = std::move(done)] {
      storage::LockStatus status;
      status.held = locks_.count(name) != 0;
      if (status.held) status.remaining = std::chrono::milliseconds(5000);
      done(status);
    });
  }
  // TODO(#19 service): in-memory lock sets and semaphores.
  storage::AcquireTicket acquire_set(storage::LockSetRequest, LockSetHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
    return {};
  }
  void extend_set(std::vector<std::string>, storage::LockSetClaim, std::chrono::milliseconds,
                  LockSetExtendHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
  }
  void release_set(std::vector<std::string>, storage::LockSetClaim, ReleaseHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
  }
  storage::AcquireTicket acquire_permit(storage::PermitRequest, PermitHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
    return {};
  }
  void extend_permit(std::string, std::uint32_t, std::uint32_t, storage::LeaseClaim,
                     std::chrono::milliseconds, ExtendHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
  }
  void release_permit(std::string, std::uint32_t, std::uint32_t, storage::LeaseClaim,
                      ReleaseHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
  }
  void inspect_semaphore(std::string, SemaphoreStatusHandler done) override {
    later([done = std::move(done)] { done(not_built()); });
  }
  static storage::Error not_built() {
    return storage::make_error(storage::ErrorCode::kInternal, "not in the in-memory engine");
  }
  std::size_t node_count() const noexcept override { return 1; }
  std::size_t quorum() const noexcept override { return 1; }
  std::size_t voting_nodes() const noexcept override { return 1; }
  std::optional<std::string> grant_refusal() const override { return refusal; }
  std::function<std::optional<std::string>(std::uint64_t)> refusal_check() const override {
    return [this](std::uint64_t) { return refusal; };  // tests keep the engine alive
  }
  std::function<std::optional<std::string>(std::uint64_t)> current_check() const override {
    return refusal_check();
  }
  const storage::EngineOptions& options() const noexcept override { return options_; }

 private:
  struct Held {
    std::uint64_t token;
    std::string proof;
  };
  void later(std::function<void()> work) { pending_.push_back(std::move(work)); }

  std::shared_ptr<storage::TokenSource> tokens_;
  storage::EngineOptions options_;
  std::map<std::string, Held> locks_;
  std::deque<std::function<void()>> pending_;
  std::size_t calls_ = 0;
  std::uint64_t next_proof_ = 1;
};

}  // namespace fencelock::testing
