// A granted lease as the SDK holds it: a single lock, a lock set (several names under one lease)
// or a permit of a counting semaphore — its names, fencing tokens, and a conservative deadline.
//
// The deadline is the client's own send time of the granting (or last extending) request plus the
// waited_ms (acquire only) and validity_ms the service answered, on std::chrono::steady_clock —
// never later than the truth, however long a waiting acquire waited.
// The lease string (lease_string()) proves ownership for extend and release: treat it as a secret,
// do not log it.
//
// What to fence with (send with every write to the protected resource):
//   - a lock (kind() == kLock): token(), the name's token;
//   - a lock set (kSet): one token per name — a write to the resource of name N carries
//     token_of(N). token() is 0 for a set: no single token fences several resources;
//   - a permit (kPermit): token(), drawn from the semaphore's counter (shared with the lock of
//     the same name), higher with every grant of the semaphore. Up to permits() holders write at
//     once, so a resource guarded by a semaphore keeps its current token per (name, slot()).
//   - a read/write lock's grant (kRead, kWrite): token(), from the name's counter; a write grant's
//     token is above every earlier grant's, so a store that fences on it refuses stale readers.
//
// Move-only. Releasing on destruction is LockGuard's job, not Lease's. Not thread-safe; the
// deadline of a lease kept alive by a LeaseKeeper is read through the keeper instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/result.h"

namespace fencelock {

enum class LeaseKind {
  kLock,    // one name (Client::acquire)
  kSet,     // several names at once (Client::acquire_set)
  kPermit,  // one permit of a counting semaphore (Client::acquire_permit)
  kRead,    // a read grant of a read/write lock (Client::acquire_read)
  kWrite,   // a write grant of a read/write lock (Client::acquire_write)
};

class Lease {
 public:
  using Clock = std::chrono::steady_clock;

  // A single lock's lease (kind() == kLock).
  Lease(const std::string& name, std::string lease_string, std::uint64_t token,
        std::chrono::milliseconds ttl, Clock::time_point deadline);
  // A lock set's lease: `names` in canonical (sorted) order, tokens[i] the token of names[i]
  // (same size, 1..16 names).
  static Lease lock_set(std::vector<std::string> names, std::vector<std::uint64_t> tokens,
                        std::string lease_string, std::chrono::milliseconds ttl,
                        Clock::time_point deadline);
  // A permit: slot `slot` (0..permits-1) of semaphore `name`, which has `permits` permits.
  static Lease permit(const std::string& name, std::uint32_t permits, std::uint32_t slot,
                      std::string lease_string, std::uint64_t token, std::chrono::milliseconds ttl,
                      Clock::time_point deadline);

  // A read/write lock's grant: `kind` is kRead or kWrite.
  static Lease rw_grant(LeaseKind kind, const std::string& name, std::string lease_string,
                        std::uint64_t token, std::chrono::milliseconds ttl,
                        Clock::time_point deadline);

  Lease(Lease&&) noexcept = default;
  Lease& operator=(Lease&&) noexcept = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  LeaseKind kind() const noexcept { return kind_; }
  // A lock's name, a semaphore's name; for a set, its names joined by ',' ("a,b": a label for
  // messages, not a lock name).
  const std::string& name() const noexcept { return name_; }
  // The names the lease holds, in canonical order: {name()} for a lock and a permit.
  const std::vector<std::string>& names() const noexcept { return names_; }
  // tokens()[i] is names()[i]'s fencing token.
  const std::vector<std::uint64_t>& tokens() const noexcept { return tokens_; }
  // A lock's or a permit's token; 0 for a lock set (use token_of).
  std::uint64_t token() const noexcept { return kind_ == LeaseKind::kSet ? 0 : tokens_.front(); }
  // The token of `name` among names(); 0 when the lease does not hold that name.
  std::uint64_t token_of(std::string_view name) const noexcept;
  // A permit's slot and its semaphore's permit count; 0 for a lock and a set.
  std::uint32_t slot() const noexcept { return slot_; }
  std::uint32_t permits() const noexcept { return permits_; }

  std::chrono::milliseconds ttl() const noexcept { return ttl_; }
  Clock::time_point deadline() const noexcept { return deadline_; }
  const std::string& lease_string() const noexcept { return lease_string_; }

  // True until the deadline. A valid() lease may still have been taken over by a newer holder if
  // this process was paused; that is what the token is for.
  bool valid() const noexcept { return Clock::now() < deadline_; }
  // Time left until the deadline, zero once it passed.
  std::chrono::milliseconds remaining() const noexcept;

  // Used by Client::extend: a successful extend moves the deadline.
  void renew(std::chrono::milliseconds ttl, Clock::time_point deadline) noexcept {
    ttl_ = ttl;
    deadline_ = deadline;
  }

 private:
  friend class LeaseKeeper;  // renews a copy, so that its lease stays readable meanwhile
  Lease(LeaseKind kind, std::string name, std::vector<std::string> names,
        std::vector<std::uint64_t> tokens, std::uint32_t permits, std::uint32_t slot,
        std::string lease_string, std::chrono::milliseconds ttl, Clock::time_point deadline);
  Lease copy() const;

  LeaseKind kind_ = LeaseKind::kLock;
  std::string name_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> tokens_;
  std::uint32_t permits_ = 0;
  std::uint32_t slot_ = 0;
  std::string lease_string_;
  std::chrono::milliseconds ttl_;
  Clock::time_point deadline_;
};

// Rebuilds a lease from its lease string, as printed by `fencelock acquire` or kept by another
// process, so that it can be extended or released (its deadline is unknown: now, until an extend
// moves it; its ttl is `ttl`). The string's shape is checked, not its proof (the service does):
//   - kLock:   `names` = {NAME}, "<token>.<proof>";
//   - kSet:    `names` in any order (sorted here; 1..16, distinct, valid names),
//              "<t1>,<t2>,....<proof>" with one token per name, in sorted-name order;
//   - kPermit: `names` = {NAME}, "<token>.<proof>.<permits>.<slot>", slot < permits <= 64;
//   - kRead, kWrite: `names` = {NAME}, "<token>.<proof>.r" or "<token>.<proof>.w" (as the kind).
// Errors: kInvalidArgument (a bad name, a duplicate, a token count that does not match the names,
// a malformed string). Pure; thread-safe.
Result<Lease> lease_from_string(LeaseKind kind, std::vector<std::string> names,
                                std::string lease_string, std::chrono::milliseconds ttl);

}  // namespace fencelock
