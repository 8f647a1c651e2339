// Watches of single locks (LockEngine::watch), grouped by name: one inspection of the nodes
// serves every watcher of a name, whatever their number. The inspection marks the holder's value
// for this engine (kInspectScript), so the holder's release — through any engine — is announced
// and makes the group look again; a revoke of a marked value is announced too; the lease's expiry
// is found by a timer at the time the inspection said it ends. While nothing changes, a group
// costs one inspection per lease period (at its expiry, which an extend moves), none per watcher.
// Everything runs on the engine's strand except watch() and a ticket's cancel.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "fencelock/storage/lease.h"
#include "fencelock/storage/lock_engine.h"
#include "fencelock/storage/result.h"

namespace fencelock::storage {

class EngineCore;
struct Inspection;

class LockWatches {
 public:
  using Handler = std::function<void(Result<LockStatus>)>;
  // The most watches one engine keeps at once; more are refused (kUnavailable).
  static constexpr std::size_t kMaxWatches = 100000;

  explicit LockWatches(EngineCore& core);
  LockWatches(const LockWatches&) = delete;
  LockWatches& operator=(const LockWatches&) = delete;
  ~LockWatches();

  // LockEngine::watch, its arguments checked. Safe from any thread.
  AcquireTicket watch(std::string name, std::uint64_t after_token, std::chrono::milliseconds wait,
                      Handler done);
  // Whether `name` has watchers here (its release must then wake them: release_tag_for).
  bool watched(const std::string& name) const { return groups_.count(name) != 0; }
  // A release or revoke of `name` may have changed it: its watchers look again, once for all.
  void changed(const std::string& name);
  // Ends every watch with kUnavailable: the engine stops.
  void stop();

 private:
  struct Watcher;
  struct Group;
  void add(const std::shared_ptr<Watcher>& watcher, std::chrono::milliseconds wait);
  void time_out(const std::shared_ptr<Watcher>& watcher);
  void cancel(const std::shared_ptr<Watcher>& watcher);
  void inspect(const std::string& name, Group& group);
  void on_inspected(const std::string& name, Result<Inspection> inspection);
  // Takes `watcher` out of `group` and answers it (the caller then calls drop_if_idle).
  void answer(Group& group, Watcher& watcher, Result<LockStatus> result);
  // Drops `name`'s group once it has no watcher and no inspection out.
  void drop_if_idle(const std::string& name);

  EngineCore& core_;
  std::unordered_map<std::string, std::unique_ptr<Group>> groups_;
  std::size_t count_ = 0;  // watches waiting, all groups
};

}  // namespace fencelock::storage
