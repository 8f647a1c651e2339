// Keeps a lease alive while work runs under it (Redisson's watchdog, node-redlock's `using`),
// and says when it is lost. Any lease: a lock, a lock set (all its names are extended together,
// one request) or a semaphore permit.
//
// A background thread extends the lease whenever `renew_when_left` of its ttl is left. The
// lost-lease signal — lost_token(), a std::stop_token — is raised
//   - at once when an extend is refused (kNotHeld: expired, released or taken over), and
//   - `lost_margin` before the deadline when renewal has not succeeded by then (the service or
//     its lock nodes are unreachable, or the renewal bound below was reached),
// so it always fires *before* the deadline passes whenever renewal failed. Work checks it (or
// registers a std::stop_callback) and stops touching the resource. Each extend's own deadline is
// cut to the time left before the lost signal, so a slow service cannot delay the signal.
//
// Destroying the keeper stops renewal and releases the lease (errors are ignored: the ttl frees
// the lock). Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fencelock/client.h"
#include "fencelock/lease.h"
#include "fencelock/result.h"

namespace fencelock {

struct RenewOptions {
  // Extend when this fraction of the ttl is left. Default 1/3; 0.05 .. 0.95.
  double renew_when_left = 1.0 / 3.0;
  // Extend at most this many times; then the lease runs out. Default: no bound.
  std::optional<std::uint32_t> max_renewals;
  // Stop extending once the lease has been held this long. Default: no bound.
  std::optional<std::chrono::milliseconds> max_hold;
  // How long before the deadline the lost signal fires if renewal has not succeeded.
  // Default: a tenth of the ttl, at least 20 ms (and at most half the ttl).
  std::optional<std::chrono::milliseconds> lost_margin;
};

class LeaseKeeper {
 public:
  // Starts renewing at once. `client` must outlive the keeper.
  LeaseKeeper(Client& client, Lease lease, RenewOptions options = {});
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  std::stop_token lost_token() const noexcept { return lost_.get_token(); }
  bool lost() const noexcept { return lost_.stop_requested(); }
  // Why the signal fired (nullopt while not lost).
  std::optional<Error> lost_reason() const;

  // The lease's identity, as Lease (lease.h) defines it: fixed for the keeper's life.
  LeaseKind kind() const noexcept { return kind_; }
  const std::string& name() const noexcept { return name_; }  // a set: "a,b" (a label)
  const std::vector<std::string>& names() const noexcept { return names_; }
  const std::vector<std::uint64_t>& tokens() const noexcept { return tokens_; }
  std::uint64_t token() const noexcept { return token_; }  // a set: 0 (use token_of)
  std::uint64_t token_of(std::string_view name) const noexcept;
  std::uint32_t slot() const noexcept { return slot_; }
  std::uint32_t permits() const noexcept { return permits_; }
  Lease::Clock::time_point deadline() const noexcept;
  std::uint32_t renewals() const noexcept { return renewals_.load(); }

  // Stops renewing and releases now: true iff the lease still held the lock. `within` bounds
  // the release, retries included (Client::release).
  Result<bool> release(std::optional<std::chrono::milliseconds> within = std::nullopt);

 private:
  void run(const std::stop_token& stop);
  void declare_lost(Error why);
  std::chrono::milliseconds margin() const noexcept;

  Client& client_;
  const LeaseKind kind_;
  const std::string name_;
  const std::vector<std::string> names_;
  const std::vector<std::uint64_t> tokens_;
  const std::uint64_t token_;
  const std::uint32_t slot_;
  const std::uint32_t permits_;
  const RenewOptions options_;
  const Lease::Clock::time_point acquired_;

  mutable std::mutex mutex_;  // guards lease_, lost_reason_
  std::condition_variable_any wake_;
  Lease lease_;
  std::optional<Error> lost_reason_;
  std::atomic<Lease::Clock::rep> deadline_ticks_;
  std::atomic<std::uint32_t> renewals_{0};
  std::stop_source lost_;
  std::atomic<bool> released_{false};
  std::jthread renewer_;  // last: starts after everything above exists
};

// Acquires `name`, runs `work` under a LeaseKeeper, releases when work returns. Returns the
// acquire's error if it failed, kNotHeld if the lease was lost while work ran, else ok.
Status with_lease(Client& client, std::string_view name, std::chrono::milliseconds ttl,
                  std::chrono::milliseconds wait, const std::function<void(LeaseKeeper&)>& work,
                  RenewOptions options = {});

// The same for a lease already acquired, of any kind — the result of acquire, acquire_set or
// acquire_permit, passed as it came: with_lease(client, client.acquire_set({"a", "b"}, 30s), work).
// Returns its error if the acquire failed, kNotHeld if the lease was lost while work ran, else ok.
Status with_lease(Client& client, Result<Lease> acquired,
                  const std::function<void(LeaseKeeper&)>& work, RenewOptions options = {});

}  // namespace fencelock
