#include "engine/waiter_queues.h"

#include <algorithm>
#include <iterator>

namespace fencelock::storage {

bool WaiterQueues::has_waiters(const std::string& name) const {
  const auto it = queues_.find(name);
  return it != queues_.end() && !it->second.queue.empty();
}

void WaiterQueues::add(const std::string& name, std::weak_ptr<Waiter> waiter) {
  queues_[name].queue.push_back(std::move(waiter));
}

void WaiterQueues::remove(const std::string& name, const Waiter* waiter) {
  const auto it = queues_.find(name);
  if (it == queues_.end()) return;
  it->second.queue.remove_if([waiter](const std::weak_ptr<Waiter>& w) {
    const auto locked = w.lock();
    return !locked || locked.get() == waiter;
  });
  if (it->second.queue.empty()) queues_.erase(it);
}

bool WaiterQueues::is_first(const std::string& name, const Waiter* waiter) const {
  const auto it = queues_.find(name);
  if (it == queues_.end()) return false;
  for (const auto& weak : it->second.queue) {
    if (const auto first = weak.lock()) return first.get() == waiter;
  }
  return false;
}

void WaiterQueues::wake_first(const std::string& name, std::string_view release_tag) {
  const auto it = queues_.find(name);
  if (it == queues_.end()) return;
  it->second.last_release.assign(release_tag);
  it->second.woken.reset();
  wake_from(it->second, name, it->second.queue.begin());
}

void WaiterQueues::wake_after(const std::string& name, const Waiter* after) {
  const auto it = queues_.find(name);
  if (it == queues_.end()) return;
  auto next =
      std::find_if(it->second.queue.begin(), it->second.queue.end(),
                   [after](const std::weak_ptr<Waiter>& w) { return w.lock().get() == after; });
  // Gone from the queue already (finished): the wake-up goes to the first waiter instead.
  next = next == it->second.queue.end() ? it->second.queue.begin() : std::next(next);
  wake_from(it->second, name, next);
}

void WaiterQueues::promote_after(const std::string& name, const Waiter* after,
                                 std::chrono::steady_clock::duration frees_in) {
  const auto it = queues_.find(name);
  if (it == queues_.end()) return;
  bool behind = false;
  for (const auto& weak : it->second.queue) {
    const auto waiter = weak.lock();
    if (!waiter) continue;
    if (behind) {
      waiter->become_first(frees_in);
      return;
    }
    behind = waiter.get() == after;
  }
}

void WaiterQueues::wake_from(NameWaiters& waiters, const std::string& name,
                             std::list<std::weak_ptr<Waiter>>::iterator first) {
  for (auto at = first; at != waiters.queue.end(); ++at) {
    const auto waiter = at->lock();
    if (!waiter) continue;
    const Waiter::Wake wake = waiter->wake_now(name);
    if (wake == Waiter::Wake::kFinished) continue;
    if (wake == Waiter::Wake::kPassed) continue;
    // Taken; or already awake: its attempt out (or about to go) tries again should it fail.
    if (waiters.woken.expired()) waiters.woken = waiter;
    return;
  }
}

void WaiterQueues::release_heard(const std::string& name, std::string_view release_tag) {
  const auto it = queues_.find(name);
  if (it == queues_.end()) return;
  if (it->second.last_release != release_tag) {
    wake_first(name, release_tag);
  } else if (const auto woken = it->second.woken.lock()) {
    // Another node's copy: that node has now deleted the key too. If the woken waiter's attempt
    // is still out, it may have been refused there; this makes it try once more at once.
    woken->wake_now(name);
  }
}

}  // namespace fencelock::storage
