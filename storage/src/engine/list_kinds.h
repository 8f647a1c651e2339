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

// A kind whose names are inspected one by one (at most kInspectionsInFlight at once). `Traits`
// says the rest: `Page`, `Inspection` (with `answered`, `held_on`, `maybe_held`), `kKeySuffix`,
// `start(core, name, answer)` (inspects one name) and `entries(page)` (the page's list, whose
// elements are made of a name and the inspection's `status`).
template <class Traits>
class EachNameListKind final : public ListKind {
 public:
  using Page = typename Traits::Page;
  using Inspection = typename Traits::Inspection;
  std::string_view key_suffix() const override { return Traits::kKeySuffix; }
  void inspect(const std::shared_ptr<EngineCore>& core, std::vector<std::string> names,
               std::function<void(Result<StepInspection>)> done) override;
  void keep(std::size_t i) override {
    Traits::entries(page_).push_back({std::move(names_[i]), std::move(step_[i].status)});
  }
  std::size_t kept() const override { return Traits::entries(page_).size(); }
  Page take_page(const std::string& next) {
    page_.next = next;
    return std::move(page_);
  }

 private:
  std::vector<std::string> names_;
  std::vector<Inspection> step_;
  Page page_;
};

struct SemaphoreListTraits {
  using Page = SemaphorePage;
  using Inspection = SemaphoreInspection;
  static constexpr std::string_view kKeySuffix = "#permits";  // the config key
  static void start(const std::shared_ptr<EngineCore>& core, const std::string& name,
                    std::function<void(Result<Inspection>)> answer);
  static auto& entries(Page& page) { return page.semaphores; }
  static const auto& entries(const Page& page) { return page.semaphores; }
};

struct RwLockListTraits {
  using Page = RwLockPage;
  using Inspection = RwInspection;
  static constexpr std::string_view kKeySuffix = "#rw";  // the state key
  static void start(const std::shared_ptr<EngineCore>& core, const std::string& name,
                    std::function<void(Result<Inspection>)> answer);
  static auto& entries(Page& page) { return page.rwlocks; }
  static const auto& entries(const Page& page) { return page.rwlocks; }
};

extern template class EachNameListKind<SemaphoreListTraits>;  // list_kinds.cpp
extern template class EachNameListKind<RwLockListTraits>;
using SemaphoreListKind = EachNameListKind<SemaphoreListTraits>;
using RwLockListKind = EachNameListKind<RwLockListTraits>;

}  // namespace fencelock::storage
