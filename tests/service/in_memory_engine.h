// A LockEngine and a TokenSource in memory, for unit tests of the API's behaviour without Redis.
// Completions are queued and run by run_pending() on the test's thread, so a handler never runs
// inside the call that started it (the LockEngine contract). Not thread-safe; one test thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fencelock/storage/lock_engine.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::testing {

class InMemoryTokens final : public storage::TokenSource {
 public:
  void next(std::string_view name, Callback done) override { done(++counters_[std::string(name)]); }
  void current(std::string_view name, Callback done) override {
    done(counters_[std::string(name)]);
  }
  void skip_past(std::string_view name, std::uint64_t seen) override {
    auto& counter = counters_[std::string(name)];
    counter = std::max(counter, seen);
  }
  bool has_history() const override { return false; }
  storage::TokenTraits traits() const override {
    return {storage::TokenTraits::Order::kPerName, "memory", "", ""};
  }
  bool ready() const override { return true; }
  void stop() override {}

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
  bool has_pending() const { return !pending_.empty(); }
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
      const std::string asked =
          request.request_id.empty() ? std::string() : request.owner + "\n" + request.request_id;
      if (const auto held = locks_.find(request.name); held != locks_.end()) {
        if (asked.empty() || held->second.request != asked)
          return done(locked("the lock is held by another lease"));
        storage::Lease lease;  // the same grant, answered again
        lease.name = request.name;
        lease.proof = held->second.proof;
        lease.token = held->second.token;
        lease.ttl = request.ttl;
        lease.validity = request.ttl - std::chrono::milliseconds(1);
        lease.started = Clock::now();
        lease.repeated = true;
        return done(std::move(lease));
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
        locks_[request.name] = {lease.token, lease.proof, request.holder, asked};
        done(std::move(lease));
      });
    });
    return {};
  }
  // As acquire, over whatever lease holds the name.
  storage::AcquireTicket revoke(storage::AcquireRequest request, AcquireHandler done) override {
    later([this, name = request.name] { locks_.erase(name); });
    return acquire(std::move(request), std::move(done));
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
      if (status.held) {
        status.remaining = std::chrono::milliseconds(5000);
        status.token = locks_[name].token;
        status.holder = locks_[name].holder;
      }
      done(status);
    });
  }
  // Answers at once with the status, as inspect: a watch here never waits.
  storage::AcquireTicket watch(std::string name, std::uint64_t, std::chrono::milliseconds,
                               InspectHandler done) override {
    ++watches_;
    inspect(std::move(name), std::move(done));
    return {};
  }
  int watches() const { return watches_; }
  // By name; the cursor is the last name of the previous page.
  void list(storage::ListRequest request, ListHandler done) override {
    ++calls_;
    later([this, request, done = std::move(done)] {
      storage::LockPage page;
      for (auto it = locks_.upper_bound(request.cursor); it != locks_.end(); ++it) {
        if (it->first.rfind(request.prefix, 0) != 0) continue;
        if (page.locks.size() == request.limit) {
          page.next = page.locks.back().name;
          break;
        }
        page.locks.push_back(
            {it->first, it->second.token, it->second.holder, std::chrono::milliseconds(5000)});
      }
      done(std::move(page));
    });
  }
  // Lock sets share the single locks' table (a set and a lock of one name exclude each other);
  // every name of a set holds the set's proof and its own token.
  storage::AcquireTicket acquire_set(storage::LockSetRequest request,
                                     LockSetHandler done) override {
    ++calls_;
    later([this, request, done = std::move(done)]() mutable {
      if (refusal) return done(storage::make_error(storage::ErrorCode::kUnavailable, *refusal));
      std::sort(request.names.begin(), request.names.end());
      if (std::adjacent_find(request.names.begin(), request.names.end()) != request.names.end())
        return done(storage::make_error(storage::ErrorCode::kInvalidArgument, "duplicate name"));
      for (const std::string& name : request.names) {
        if (locks_.count(name) != 0) return done(locked("'" + name + "' is held by another lease"));
      }
      storage::LockSetLease lease;
      lease.proof = next_proof();
      for (const std::string& name : request.names) {
        const std::uint64_t token = draw(name);
        lease.tokens.push_back(token);
        locks_[name] = {token, lease.proof};
      }
      lease.names = request.names;
      lease.ttl = request.ttl;
      lease.validity = request.ttl - std::chrono::milliseconds(1);
      lease.started = Clock::now();
      done(std::move(lease));
    });
    return {};
  }
  void extend_set(std::vector<std::string> names, storage::LockSetClaim claim,
                  std::chrono::milliseconds ttl, LockSetExtendHandler done) override {
    ++calls_;
    later([this, names, claim, ttl, done = std::move(done)] {
      if (const auto error = check_set(names, claim)) return done(*error);
      done(storage::LockSetExtension{claim.tokens, ttl, ttl - std::chrono::milliseconds(1),
                                     Clock::now()});
    });
  }
  void release_set(std::vector<std::string> names, storage::LockSetClaim claim,
                   ReleaseHandler done) override {
    ++calls_;
    later([this, names, claim, done = std::move(done)] {
      if (const auto error = check_set(names, claim)) {
        if (error->code == storage::ErrorCode::kLeaseLost) return done(false);
        return done(*error);
      }
      for (const std::string& name : names) locks_.erase(name);
      done(true);
    });
  }

  // A semaphore: its permit count and its held slots. It lives while a slot is held.
  storage::AcquireTicket acquire_permit(storage::PermitRequest request,
                                        PermitHandler done) override {
    ++calls_;
    later([this, request, done = std::move(done)] {
      if (refusal) return done(storage::make_error(storage::ErrorCode::kUnavailable, *refusal));
      Semaphore& semaphore = semaphores_[request.name];
      if (!semaphore.slots.empty() && semaphore.permits != request.permits) {
        return done(storage::make_error(storage::ErrorCode::kPermitsMismatch,
                                        "semaphore '" + request.name + "' has " +
                                            std::to_string(semaphore.permits) + " permits, not " +
                                            std::to_string(request.permits)));
      }
      semaphore.permits = request.permits;
      std::uint32_t slot = 0;
      while (slot < request.permits && semaphore.slots.count(slot) != 0) ++slot;
      if (slot == request.permits) {
        return done(locked("every permit is held"));
      }
      storage::Permit permit;
      permit.name = request.name;
      permit.permits = request.permits;
      permit.slot = slot;
      permit.proof = next_proof();
      permit.token = draw(request.name);
      permit.ttl = request.ttl;
      permit.validity = request.ttl - std::chrono::milliseconds(1);
      permit.started = Clock::now();
      semaphore.slots[slot] = {permit.token, permit.proof};
      done(std::move(permit));
    });
    return {};
  }
  void extend_permit(std::string name, std::uint32_t permits, std::uint32_t slot,
                     storage::LeaseClaim claim, std::chrono::milliseconds ttl,
                     ExtendHandler done) override {
    ++calls_;
    later([this, name, permits, slot, claim, ttl, done = std::move(done)] {
      if (const auto error = check_permit(name, permits, slot, claim)) return done(*error);
      done(storage::Extension{claim.token, ttl, ttl - std::chrono::milliseconds(1), Clock::now()});
    });
  }
  void release_permit(std::string name, std::uint32_t permits, std::uint32_t slot,
                      storage::LeaseClaim claim, ReleaseHandler done) override {
    ++calls_;
    later([this, name, permits, slot, claim, done = std::move(done)] {
      if (const auto error = check_permit(name, permits, slot, claim)) {
        if (error->code == storage::ErrorCode::kLeaseLost) return done(false);
        return done(*error);
      }
      semaphores_[name].slots.erase(slot);
      done(true);
    });
  }
  void inspect_semaphore(std::string name, SemaphoreStatusHandler done) override {
    ++calls_;
    later([this, name, done = std::move(done)] {
      storage::SemaphoreStatus status;
      const auto it = semaphores_.find(name);
      if (it != semaphores_.end() && !it->second.slots.empty()) {
        status.permits = it->second.permits;
        status.held = static_cast<std::uint32_t>(it->second.slots.size());
      }
      done(status);
    });
  }
  // A read/write lock: its grants by proof (reads, or one write). Nobody waits here.
  storage::AcquireTicket acquire_rw(storage::RwLockRequest request, AcquireHandler done) override {
    ++calls_;
    later([this, request, done = std::move(done)] {
      if (refusal) return done(storage::make_error(storage::ErrorCode::kUnavailable, *refusal));
      auto& grants = rw_[request.name];
      const bool written = std::any_of(grants.begin(), grants.end(), [](const auto& grant) {
        return grant.second.mode == storage::RwMode::kWrite;
      });
      if (written || (request.mode == storage::RwMode::kWrite && !grants.empty()))
        return done(locked("the read/write lock is held"));
      storage::Lease lease;
      lease.name = request.name;
      lease.proof = next_proof();
      lease.token = draw(request.name);
      lease.ttl = request.ttl;
      lease.validity = request.ttl - std::chrono::milliseconds(1);
      lease.started = Clock::now();
      grants[lease.proof] = {lease.token, request.mode, request.holder};
      done(std::move(lease));
    });
    return {};
  }
  void extend_rw(std::string name, storage::RwMode mode, storage::LeaseClaim claim,
                 std::chrono::milliseconds ttl, ExtendHandler done) override {
    ++calls_;
    later([this, name, mode, claim, ttl, done = std::move(done)] {
      if (const auto error = check_rw(name, mode, claim)) return done(*error);
      done(storage::Extension{claim.token, ttl, ttl - std::chrono::milliseconds(1), Clock::now()});
    });
  }
  void release_rw(std::string name, storage::RwMode mode, storage::LeaseClaim claim,
                  ReleaseHandler done) override {
    ++calls_;
    later([this, name, mode, claim, done = std::move(done)] {
      if (const auto error = check_rw(name, mode, claim)) {
        if (error->code == storage::ErrorCode::kLeaseLost) return done(false);
        return done(*error);
      }
      rw_[name].erase(claim.proof);
      done(true);
    });
  }
  void inspect_rw(std::string name, RwStatusHandler done) override {
    ++calls_;
    later([this, name, done = std::move(done)] {
      storage::RwLockStatus status;
      for (const auto& [proof, grant] : rw_[name]) {
        status.grants.push_back(
            {grant.mode, grant.token, grant.holder, std::chrono::milliseconds(5000)});
      }
      done(status);
    });
  }
  // Listings in name order; the cursor is the last name answered.
  void list_semaphores(storage::ListRequest request, SemaphoreListHandler done) override {
    ++calls_;
    later([this, request, done = std::move(done)] {
      storage::SemaphorePage page;
      for (auto it = semaphores_.upper_bound(request.cursor); it != semaphores_.end(); ++it) {
        if (it->first.rfind(request.prefix, 0) != 0 || it->second.slots.empty()) continue;
        if (request.visible && !request.visible(it->first)) continue;
        if (page.semaphores.size() == request.limit) {
          page.next = page.semaphores.back().name;
          break;
        }
        page.semaphores.push_back(
            {it->first, {it->second.permits, static_cast<std::uint32_t>(it->second.slots.size())}});
      }
      done(std::move(page));
    });
  }
  void list_rwlocks(storage::ListRequest request, RwLockListHandler done) override {
    ++calls_;
    later([this, request, done = std::move(done)] {
      storage::RwLockPage page;
      for (auto it = rw_.upper_bound(request.cursor); it != rw_.end(); ++it) {
        if (it->first.rfind(request.prefix, 0) != 0 || it->second.empty()) continue;
        if (request.visible && !request.visible(it->first)) continue;
        if (page.rwlocks.size() == request.limit) {
          page.next = page.rwlocks.back().name;
          break;
        }
        storage::RwLockStatus status;
        for (const auto& [proof, grant] : it->second) {
          status.grants.push_back(
              {grant.mode, grant.token, grant.holder, std::chrono::milliseconds(5000)});
        }
        page.rwlocks.push_back({it->first, std::move(status)});
      }
      done(std::move(page));
    });
  }
  void draw_token(std::string name, TokenHandler done) override {
    ++calls_;
    tokens_->next(name, std::move(done));
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
  // A refusal as the engine makes it: kLocked, retry after the holder's remaining 5 s.
  static storage::Error locked(std::string message) {
    storage::Error error = storage::make_error(storage::ErrorCode::kLocked, std::move(message));
    error.retry_after = std::chrono::milliseconds(5000);
    return error;
  }
  struct Held {
    std::uint64_t token;
    std::string proof;
    std::string holder{};
    std::string request{};  // owner and request id of the acquire, "" for none
  };
  struct Semaphore {
    std::uint32_t permits = 0;
    std::map<std::uint32_t, Held> slots;
  };
  struct RwGrant {
    std::uint64_t token;
    storage::RwMode mode;
    std::string holder;
  };
  std::optional<storage::Error> check_rw(const std::string& name, storage::RwMode mode,
                                         const storage::LeaseClaim& claim) {
    const auto& grants = rw_[name];
    const auto it = grants.find(claim.proof);
    if (it == grants.end()) {
      return storage::make_error(storage::ErrorCode::kLeaseLost,
                                 "the lease no longer holds the read/write lock");
    }
    if (it->second.token != claim.token || it->second.mode != mode) {
      return storage::make_error(storage::ErrorCode::kInvalidArgument,
                                 "the lease's token or mode is not its own");
    }
    return std::nullopt;
  }
  void later(std::function<void()> work) { pending_.push_back(std::move(work)); }
  std::string next_proof() {
    const std::string proof = std::string(16, 'a') + std::to_string(next_proof_++);
    return proof + std::string(48 - proof.size(), '0');
  }
  std::uint64_t draw(const std::string& name) {
    std::uint64_t token = 0;
    tokens_->next(name, [&](storage::Result<std::uint64_t> drawn) { token = drawn.value(); });
    return token;
  }
  // Why a set claim does not hold `names` (sorted), or nullopt: kLeaseLost when a name is not held
  // with the claim's proof, kInvalidArgument when a token is not the one granted.
  std::optional<storage::Error> check_set(const std::vector<std::string>& names,
                                          const storage::LockSetClaim& claim) const {
    if (claim.tokens.size() != names.size())
      return storage::make_error(storage::ErrorCode::kInvalidArgument, "token count");
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto it = locks_.find(names[i]);
      if (it == locks_.end() || it->second.proof != claim.proof) {
        return storage::make_error(storage::ErrorCode::kLeaseLost,
                                   "the lease no longer holds the lock set");
      }
      if (it->second.token != claim.tokens[i]) {
        return storage::make_error(storage::ErrorCode::kInvalidArgument,
                                   "the lease's tokens are not its own");
      }
    }
    return std::nullopt;
  }
  std::optional<storage::Error> check_permit(const std::string& name, std::uint32_t permits,
                                             std::uint32_t slot,
                                             const storage::LeaseClaim& claim) const {
    const auto it = semaphores_.find(name);
    const Held* held = nullptr;
    if (it != semaphores_.end() && it->second.permits == permits) {
      const auto found = it->second.slots.find(slot);
      if (found != it->second.slots.end()) held = &found->second;
    }
    if (held == nullptr || held->proof != claim.proof) {
      return storage::make_error(storage::ErrorCode::kLeaseLost,
                                 "the lease no longer holds the permit");
    }
    if (held->token != claim.token) {
      return storage::make_error(storage::ErrorCode::kInvalidArgument,
                                 "the lease's token is not its own");
    }
    return std::nullopt;
  }

  std::shared_ptr<storage::TokenSource> tokens_;
  storage::EngineOptions options_;
  std::map<std::string, Held> locks_;
  std::map<std::string, Semaphore> semaphores_;
  std::map<std::string, std::map<std::string, RwGrant>> rw_;
  std::deque<std::function<void()>> pending_;
  std::size_t calls_ = 0;
  int watches_ = 0;
  std::uint64_t next_proof_ = 1;
};

}  // namespace fencelock::testing
