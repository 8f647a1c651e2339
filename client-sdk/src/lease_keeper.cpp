#include "fencelock/lease_keeper.h"

#include <algorithm>

namespace fencelock {

namespace {

using Clock = Lease::Clock;
using std::chrono::milliseconds;

Clock::time_point from_ticks(Clock::rep ticks) {
  return Clock::time_point(Clock::duration(ticks));
}

}  // namespace

LeaseKeeper::LeaseKeeper(Client& client, Lease lease, RenewOptions options)
    : client_(client),
      kind_(lease.kind()),
      name_(lease.name()),
      names_(lease.names()),
      tokens_(lease.tokens()),
      token_(lease.token()),
      slot_(lease.slot()),
      permits_(lease.permits()),
      options_(options),
      acquired_(Clock::now()),
      lease_(std::move(lease)),
      deadline_ticks_(lease_.deadline().time_since_epoch().count()),
      renewer_([this](const std::stop_token& stop) { run(stop); }) {}

LeaseKeeper::~LeaseKeeper() {
  renewer_.request_stop();
  if (renewer_.joinable()) renewer_.join();
  if (!released_.exchange(true)) {
    (void)client_.release(lease_);  // best effort: the ttl frees the lock otherwise
  }
}

std::uint64_t LeaseKeeper::token_of(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < names_.size() && i < tokens_.size(); ++i) {
    if (names_[i] == name) return tokens_[i];
  }
  return 0;
}

Clock::time_point LeaseKeeper::deadline() const noexcept {
  return from_ticks(deadline_ticks_.load());
}

std::optional<Error> LeaseKeeper::lost_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_reason_;
}

Result<bool> LeaseKeeper::release(std::optional<milliseconds> within) {
  renewer_.request_stop();
  if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id()) renewer_.join();
  if (released_.exchange(true)) return false;
  return client_.release(lease_, within);
}

milliseconds LeaseKeeper::margin() const noexcept {
  const milliseconds ttl = lease_.ttl();
  if (options_.lost_margin) return *options_.lost_margin;
  return std::min(std::max(ttl / 10, milliseconds(20)), ttl / 2);
}

void LeaseKeeper::declare_lost(Error why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!lost_reason_) lost_reason_ = std::move(why);
  }
  lost_.request_stop();
}

void LeaseKeeper::run(const std::stop_token& stop) {
  std::optional<Error> last_failure;  // set while renewal keeps failing transiently
  Clock::time_point retry_at{};       // when to try again after such a failure
  for (;;) {
    const milliseconds ttl = lease_.ttl();
    const Clock::time_point deadline = this->deadline();
    const Clock::time_point lost_at = deadline - margin();
    const auto renew_at =
        deadline -
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(
            static_cast<double>(ttl.count()) * options_.renew_when_left));
    const bool bounded = (options_.max_renewals && renewals_.load() >= *options_.max_renewals) ||
                         (options_.max_hold && Clock::now() - acquired_ >= *options_.max_hold);
    const Clock::time_point next =
        bounded ? lost_at : std::min(last_failure ? retry_at : renew_at, lost_at);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_until(lock, stop, next, [] { return false; });
    }
    if (stop.stop_requested()) return;
    const auto now = Clock::now();
    if (now >= lost_at) {
      declare_lost(last_failure
                       ? *last_failure
                       : Error{ErrorCode::kNotHeld,
                               bounded
                                   ? "the renewal bound was reached; the lease is about to expire"
                                   : "the lease could not be renewed in time",
                               0, std::nullopt});
      return;
    }
    if (bounded) continue;

    // The extend may take at most until the lost signal is due, so the signal is never late.
    Lease attempt = [&] {
      std::lock_guard<std::mutex> lock(mutex_);
      return lease_.copy();
    }();
    auto extended = client_.extend(
        attempt, ttl,
        std::max(std::chrono::duration_cast<milliseconds>(lost_at - now), milliseconds(1)));
    if (extended.ok()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        lease_.renew(attempt.ttl(), attempt.deadline());
      }
      deadline_ticks_ = attempt.deadline().time_since_epoch().count();
      ++renewals_;
      last_failure.reset();
    } else if (extended.error().code == ErrorCode::kNotHeld) {
      declare_lost(std::move(extended).error());
      return;
    } else {  // transient (unavailable, transport): try again shortly, until the signal is due
      last_failure = std::move(extended).error();
      retry_at = Clock::now() + std::max(ttl / 20, milliseconds(5));
    }
  }
}

Status with_lease(Client& client, std::string_view name, milliseconds ttl, milliseconds wait,
                  const std::function<void(LeaseKeeper&)>& work, RenewOptions options) {
  return with_lease(client, client.acquire(name, ttl, wait), work, options);
}

Status with_lease(Client& client, Result<Lease> acquired,
                  const std::function<void(LeaseKeeper&)>& work, RenewOptions options) {
  if (!acquired.ok()) return std::move(acquired).error();
  LeaseKeeper keeper(client, std::move(acquired).value(), options);
  work(keeper);
  const auto reason = keeper.lost_reason();
  (void)keeper.release();
  if (reason)
    return Error{ErrorCode::kNotHeld, "the lease was lost while the work ran: " + reason->message,
                 0, std::nullopt};
  return Done{};
}

}  // namespace fencelock
