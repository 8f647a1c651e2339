// Test hooks for the fault campaign (tests/faults), in the spirit of etcd's failpoints: a way to
// stop fencelockd at one exact step, which a signal sent at a random moment almost never hits.
// Off unless fencelockd runs with FENCELOCK_FAILPOINTS=pause-after-quorum (docs/operations.md says
// never to set it in production); the engine pays one relaxed atomic load per grant.
#pragma once

#include <chrono>

namespace fencelock::storage::failpoints {

// Async-signal-safe (called from a SIGUSR2 handler): the next grant decided within `window` from
// now stops the whole process with SIGSTOP after its quorum, its token and its validity check, and
// before its answer — fencelockd paused between deciding a grant and answering it.
void arm_pause_after_quorum(std::chrono::milliseconds window) noexcept;

// Called by the engine once a grant is decided, before it is answered.
void on_grant_decided() noexcept;

}  // namespace fencelock::storage::failpoints
