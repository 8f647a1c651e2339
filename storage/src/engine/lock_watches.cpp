#include "engine/lock_watches.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <utility>

#include "engine/engine_core.h"
#include "engine/script_operation.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kLookAgainAfter{10};

// Whether `status` is no longer "held with token `after`".
bool differs(const LockStatus& status, std::uint64_t after) {
  return !status.held || !status.token || *status.token != after;
}

}  // namespace

struct LockWatches::Watcher final : detail::CancellableAcquire,
                                    std::enable_shared_from_this<Watcher> {
  Watcher(EngineCore& engine, std::string watched, std::uint64_t after_token, Handler handler)
      : core(engine.weak_from_this()),
        name(std::move(watched)),
        after(after_token),
        done(std::move(handler)),
        timer(engine.strand()) {}

  void cancel_from_any_thread() override {
    const auto engine = core.lock();
    if (!engine) return;
    asio::post(engine->strand(),
               [engine, self = shared_from_this()] { engine->watches().cancel(self); });
  }

  std::weak_ptr<EngineCore> core;
  std::string name;
  std::uint64_t after;
  Handler done;
  asio::steady_timer timer;                                // its wait
  std::list<std::shared_ptr<Watcher>>::iterator position;  // in its group, while waiting
  bool waiting = false;                                    // in a group, not answered
  bool due = false;  // its wait is over: answered by the inspection under way
};

struct LockWatches::Group {
  explicit Group(const asio::any_io_executor& strand) : expiry(strand) {}
  std::list<std::shared_ptr<Watcher>> watchers;
  std::optional<LockStatus> status;  // what the last inspection found
  Clock::time_point read_at{};       // when it ended
  bool inspecting = false;
  bool again = false;         // changed while inspecting: inspect once more after
  asio::steady_timer expiry;  // when the status's lease ends unless extended
};

LockWatches::LockWatches(EngineCore& core) : core_(core) {}

LockWatches::~LockWatches() = default;

AcquireTicket LockWatches::watch(std::string name, std::uint64_t after_token,
                                 std::chrono::milliseconds wait, Handler done) {
  auto watcher = std::make_shared<Watcher>(core_, std::move(name), after_token, std::move(done));
  asio::dispatch(core_.strand(), [core = core_.shared_from_this(), watcher, wait] {
    core->watches().add(watcher, wait);
  });
  return AcquireTicket(watcher);
}

void LockWatches::add(const std::shared_ptr<Watcher>& watcher, std::chrono::milliseconds wait) {
  if (core_.stopped() || count_ >= kMaxWatches) {
    const char* why = core_.stopped() ? "the lock engine is stopping"
                                      : "too many watches are waiting on this fencelockd";
    return core_.complete_later(std::move(watcher->done),
                                Result<LockStatus>(make_error(ErrorCode::kUnavailable, why)));
  }
  auto& slot = groups_[watcher->name];
  if (!slot) slot = std::make_unique<Group>(core_.strand());
  Group& group = *slot;
  watcher->position = group.watchers.insert(group.watchers.end(), watcher);
  watcher->waiting = true;
  ++count_;
  watcher->timer.expires_after(wait);
  watcher->timer.async_wait([weak = std::weak_ptr<Watcher>(watcher)](const auto& ec) {
    const auto self = weak.lock();
    const auto engine = self ? self->core.lock() : nullptr;
    if (!ec && engine) engine->watches().time_out(self);
  });
  if (group.inspecting) return;
  // A group's status is held with a token (else its watchers were all answered). Kept current by
  // announcements and the expiry timer, up to one in flight: a token below it has changed for
  // sure; one above it (the client saw a newer grant) says the status is stale.
  if (!group.status || !group.status->token || watcher->after > *group.status->token)
    return inspect(watcher->name, group);
  if (watcher->after < *group.status->token) {
    answer(group, *watcher, *group.status);
    drop_if_idle(watcher->name);
  }
}

void LockWatches::time_out(const std::shared_ptr<Watcher>& watcher) {
  if (!watcher->waiting) return;
  Group& group = *groups_.at(watcher->name);
  if (!group.status) {
    watcher->due = true;  // the first inspection is still out
    return;
  }
  LockStatus status = *group.status;
  if (status.remaining) {
    const auto since = std::chrono::ceil<std::chrono::milliseconds>(Clock::now() - group.read_at);
    status.remaining = std::max(std::chrono::milliseconds(0), *status.remaining - since);
  }
  answer(group, *watcher, std::move(status));
  drop_if_idle(watcher->name);
}

void LockWatches::cancel(const std::shared_ptr<Watcher>& watcher) {
  if (!watcher->waiting) return;
  answer(*groups_.at(watcher->name), *watcher,
         make_error(ErrorCode::kCancelled, "the watch was cancelled"));
  drop_if_idle(watcher->name);
}

void LockWatches::changed(const std::string& name) {
  const auto it = groups_.find(name);
  if (it == groups_.end()) return;
  if (it->second->inspecting) {
    it->second->again = true;
  } else {
    inspect(name, *it->second);
  }
}

void LockWatches::inspect(const std::string& name, Group& group) {
  group.inspecting = true;
  group.again = false;
  group.expiry.cancel();
  std::make_shared<InspectOperation>(
      core_.shared_from_this(), std::vector<std::string>{core_.key_of(name)},
      [core = core_.shared_from_this(), name](Result<Inspection> inspection) {
        core->watches().on_inspected(name, std::move(inspection));
      },
      core_.engine_id())
      ->start();
}

void LockWatches::on_inspected(const std::string& name, Result<Inspection> inspection) {
  const auto it = groups_.find(name);
  if (it == groups_.end()) return;  // stopped meanwhile
  Group& group = *it->second;
  group.inspecting = false;
  Result<LockStatus> status = inspection.ok()
                                  ? known_status(std::move(inspection->keys.front()), name)
                                  : Result<LockStatus>(std::move(inspection).error());
  if (!status.ok()) {
    group.status.reset();
    while (!group.watchers.empty()) answer(group, *group.watchers.front(), status.error());
    return drop_if_idle(name);
  }
  group.status = std::move(*status);
  group.read_at = Clock::now();
  for (auto at = group.watchers.begin(); at != group.watchers.end();) {
    Watcher& watcher = **at++;  // answer() erases it
    if (watcher.due || differs(*group.status, watcher.after)) answer(group, watcher, *group.status);
  }
  if (group.watchers.empty()) return drop_if_idle(name);
  if (group.again) return inspect(name, group);
  // Every watcher left waits on this lease: look again when it ends (unless extended) — not
  // sooner than kLookAgainAfter, so a lease whose nodes disagree on its last milliseconds (or a
  // key someone wrote without a ttl) cannot make the group inspect in a tight loop.
  group.expiry.expires_after(
      std::max(kLookAgainAfter, group.status->remaining.value_or(std::chrono::milliseconds(0)) +
                                    std::chrono::milliseconds(1)));
  group.expiry.async_wait([core = core_.shared_from_this(), name](const auto& ec) {
    if (!ec) core->watches().changed(name);
  });
}

void LockWatches::answer(Group& group, Watcher& watcher, Result<LockStatus> result) {
  const std::shared_ptr<Watcher> keep = *watcher.position;  // the group's may be the last one
  group.watchers.erase(watcher.position);
  watcher.waiting = false;
  --count_;
  watcher.timer.cancel();
  core_.complete_later(std::move(watcher.done), std::move(result));
}

void LockWatches::drop_if_idle(const std::string& name) {
  const auto it = groups_.find(name);
  if (it == groups_.end() || !it->second->watchers.empty() || it->second->inspecting) return;
  it->second->expiry.cancel();
  groups_.erase(it);
}

void LockWatches::stop() {
  auto groups = std::move(groups_);
  groups_.clear();
  for (auto& [name, group] : groups) {
    group->expiry.cancel();
    for (auto& watcher : group->watchers) {
      watcher->waiting = false;
      watcher->timer.cancel();
      core_.complete_later(
          std::move(watcher->done),
          Result<LockStatus>(make_error(ErrorCode::kUnavailable, "the lock engine is stopping")));
    }
  }
  count_ = 0;
}

}  // namespace fencelock::storage
