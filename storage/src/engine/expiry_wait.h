// How long a refused waiter sleeps before its next attempt, from what the refusal told it — so a
// lock whose holder crashed (no release, no announcement) is taken over a few milliseconds after
// its keys expire instead of up to a retry delay later, and a waiter does not poll a lock that is
// held for a long time.
//
// Each node that refused a waiting attempt names the holder it found (its lease id) and that key's
// remaining ttl (the acquire scripts, lua_scripts.h). A lock can be granted once a quorum
// of nodes is free. Nodes that granted the attempt (released again at once), and nodes held by
// some *other* lease than the main holder (another waiter's half-won attempt, cleaned up at once)
// count as free now; nodes that did not answer count as never free. If the main holder holds a
// quorum of the answers (a waiter never does: its half-won keys are deleted at once) and its keys
// are what keeps a quorum out of reach, the lock frees when enough of them expire: the k-th
// smallest remaining ttl among them, plus 1 ms for the expiry itself (no drift allowance: why in
// docs/architecture.md, "Algorithm", step 5). Otherwise (a split vote between waiters, too few
// answers) the answer is "unknown", and the caller paces retries with its random retry delay as
// before.
//
// Releases are announced (pub/sub) and wake waiters at once; this covers what announcements
// cannot: expiry. Pure; safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace fencelock::storage {

// What one node answered a waiting attempt.
struct NodeAnswer {
  enum class Kind : std::uint8_t {
    kUnknown,  // no answer (yet), an error, or a key without an expiry
    kFree,     // the attempt's SET was granted here
    kHeld,     // refused: `holder` holds the key for `remaining` more
  };
  Kind kind = Kind::kUnknown;
  std::string holder;  // the holder's lease id (public: it is part of every lease string)
  std::chrono::milliseconds remaining{0};
};

// The time from now until the lock can first be granted again, or nullopt when the answers cannot
// tell (see above). Precondition: 1 <= quorum <= answers.size().
std::optional<std::chrono::milliseconds> time_until_grantable(std::span<const NodeAnswer> answers,
                                                              std::size_t quorum);

}  // namespace fencelock::storage
