// What the listings list (ListKind, list_operation.h): locks (LockEngine::list), semaphores
// (list_semaphores) and read/write locks (list_rwlocks). Each scans for one key per name — the lock
// key, a semaphore's config key "<name>#permits" (it lives at least as long as the longest permit
// on its node), a read/write lock's state key "<name>#rw" (its ttl covers every grant on its node),
// so every node holding a grant has it — and answers each name as that kind's status does: one
// InspectOperation over the step's lock keys; one InspectSemaphoreOperation / InspectRwOperation
// per name, at most kInspectionsInFlight of a step at once. A name with nothing held on a quorum is
// left out. Used on the strand only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/inspect_rw_operation.h"
#include "engine/list_operation.h"

namespace fencelock::storage {

// Per-name inspections of one step that run at once, at most.
inline constexpr std::size_t kInspectionsInFlight = 16;

class LockListKind final : public ListKind {
 public:
  using Page = LockPage;
  std::string_view key_suffix() const override { return ""; }
  void inspect(const std::shared_ptr<EngineCore>& core, std::vector<std::string> names,
               std::function<void(Result<StepInspection>)> done) override;
  void keep(std::size_t i) override;
  std::size_t kept() const override { return page_.locks.size(); }
  Page take_page(std::string next);

 private:
  std::vector<std::string> names_;
  std::vector<InspectedKey> step_;
  Page page_;
};

class SemaphoreListKind final : public ListKind {
 public:
  using Page = SemaphorePage;
  std::string_view key_suffix() const override { return "#permits"; }
  void inspect(const std::shared_ptr<EngineCore>& core, std::vector<std::string> names,
               std::function<void(Result<StepInspection>)> done) override;
  void keep(std::size_t i) override;
  std::size_t kept() const override { return page_.semaphores.size(); }
  Page take_page(std::string next);

 private:
  std::vector<std::string> names_;
  std::vector<SemaphoreInspection> step_;
  Page page_;
};

class RwLockListKind final : public ListKind {
 public:
  using Page = RwLockPage;
  std::string_view key_suffix() const override { return "#rw"; }
  void inspect(const std::shared_ptr<EngineCore>& core, std::vector<std::string> names,
               std::function<void(Result<StepInspection>)> done) override;
  void keep(std::size_t i) override;
  std::size_t kept() const override { return page_.rwlocks.size(); }
  Page take_page(std::string next);

 private:
  std::vector<std::string> names_;
  std::vector<RwInspection> step_;
  Page page_;
};

}  // namespace fencelock::storage
