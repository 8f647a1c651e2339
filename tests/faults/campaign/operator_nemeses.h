// The campaign's operator family (issue #32 item 9): not network or process faults but what
// operators do — copy a volume, restore a backup, flip a runtime setting, start instances with
// other flags or fresh local state, lose a counter's disk. Each runs until the context's `until`;
// the scenario table (scenarios.cpp) says which cluster each needs and which control shows that
// the fault really puts a double grant or a repeated token within reach.
#pragma once

#include <chrono>

#include "nemesis_tools.h"

namespace fencelock::faults {

// Redis token source: the counter master's disk is lost and every instance starts again as a new
// pod, without its epoch file.
void counter_wiped_new_pods(NemesisContext& c);
// A majority's memory policy flipped to an evicting one at runtime, evicting every lease, while a
// lease is held; a probe asks at once.
void nodes_evict(NemesisContext& c);
// A majority of durable nodes backed up, and later restored from that backup while a lease is
// held; a probe asks at once.
void restore_from_backup(NemesisContext& c);
// A majority of durable nodes switched to `appendonly no` at runtime, and later killed and started
// from their files (which stopped at the switch) while the nemesis holds a lease on
// kNemesisLockName; a probe asks for that lock at once.
void persistence_off(NemesisContext& c);
// Instances with --max-ttl `long_ttl`+ and shorter: instance 0 grants the nemesis `long_ttl` on
// kNemesisLockName, a majority restarts empty, and the probe asks instance 1 for that lock.
void mixed_max_ttl(NemesisContext& c, std::chrono::milliseconds long_ttl);
// While a lease is held, instances 2 (--quarantine off, serving the workload and the probe) and 3
// (another deployment: --key-prefix) join, a majority restarts empty, a probe asks the serving
// instances, and both leave (a clean stop).
void flags_join_leave(NemesisContext& c);
// SQLite token source: instance 0's live file copied (SQLite's backup API: a cloned volume) onto
// spare instance 1's, which then serves beside it for a while and stops; a fresh copy each round.
void copied_token_file(NemesisContext& c);
// SQLite token source: instance 0's live file backed up, and 4 s later (then 0.3–4.3 s) instance 0
// killed and started on the backup; a probe asks it at once.
void restored_token_file(NemesisContext& c);
// etcd token source: the leader killed and started again, and 2 of 3 members, in turn; the whole
// cluster wiped and bootstrapped again; backed up and later restored.
void etcd_member_kills(NemesisContext& c);
void etcd_wiped(NemesisContext& c);
void etcd_restored(NemesisContext& c);

}  // namespace fencelock::faults
