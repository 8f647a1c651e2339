// What every nemesis of the campaign shares: its context (the cluster, the history, a seeded random
// source, the end of the fault phase), and the probe — a client of the nemesis's own that asks for
// a held lock right after a fault made a second grant possible.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cluster.h"
#include "history.h"

namespace fencelock::faults {

// What a nemesis gets: the cluster, the history (to note its steps), a seeded random source and
// the end of the fault phase. It returns when the phase is over; the runner heals afterwards.
struct NemesisContext {
  Cluster& cluster;
  History& history;
  std::mt19937_64& random;
  std::chrono::steady_clock::time_point until;

  // Sleeps `d` but never past `until`; false once `until` has come.
  bool pause_for(std::chrono::milliseconds d) const;
  // `count` distinct node indexes, at random.
  std::vector<std::size_t> pick_nodes(std::size_t count) const;
};

// "0,2,4".
std::string list(const std::vector<std::size_t>& nodes);

// How long the client-side window of a lease on `name` that is held now (granted by an acquire or
// a revoke, not released, and not answered before a revoke was invoked: that one may have taken
// it over) still runs; 0 when none is. `mid_write`: only a lease whose holder has read the set and
// not yet written it back (its lock-set step is half done).
std::chrono::milliseconds held_lease_left(const History& history, const std::string& name,
                                          bool mid_write);

// Waits (up to `limit`) for a lease as held_lease_left() finds, with at least `min_left` of its
// window left; returns when that window ends (now, if none was found in time).
std::chrono::steady_clock::time_point wait_for_held_lease(
    NemesisContext& c, const std::string& name, bool mid_write, std::chrono::milliseconds limit,
    std::chrono::milliseconds min_left = std::chrono::milliseconds(600));

// The probe's process number in the history.
constexpr int kProbeProcess = 100;
// The nemesis's own lease's process number in the history (hold_lease).
constexpr int kLongLeaseProcess = 101;

// A lock no workload client asks for, releases or revokes: a lease the nemesis holds there stays
// held until its window ends, so a probe granted on it in that window is always an overlap.
constexpr const char* kNemesisLockName = "campaign-nemesis-lock";
// The nemesis's leases there: the campaign's --max-ttl, room for restarts and the reconnects under
// load.
constexpr std::chrono::milliseconds kNemesisLease{3000};

// The nemesis takes a lease on `name` for `ttl` (waiting up to 1 s) from `instance`, or a serving
// one at random, as process kLongLeaseProcess, and never releases it. Returns when its client-side
// window ends; nullopt when it was not granted.
std::optional<std::chrono::steady_clock::time_point> hold_lease(
    NemesisContext& c, const std::string& name, std::chrono::milliseconds ttl,
    std::optional<std::size_t> instance = std::nullopt);

// The probe asks a serving instance (`instance`, or one at random) for lock `name` without
// waiting, again and again until granted or `until`: right after a majority lost a held lease's
// keys, a grant is an overlap unless the service keeps it from happening. A grant is held briefly
// and released; with `write_set` it first does the lock-set step itself (a fenced read and write
// of the set, one element added) — an acknowledged element that the old holder's pending write
// will overwrite, unless the store fences it.
void probe_acquire(NemesisContext& c, const std::string& name,
                   std::chrono::steady_clock::time_point until, bool write_set,
                   std::optional<std::size_t> instance = std::nullopt);

}  // namespace fencelock::faults
