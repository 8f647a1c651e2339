// The waiter queues of one engine (docs/architecture.md, "Hand-off"): acquires that wait for a
// held name queue in arrival order, one queue per name (a lock set's waiter and a semaphore's join
// several); a release of the name — through this engine, or announced by another — wakes the first
// live waiter that can use it, so it does not sleep out its retry delay (expiry is still found by
// its retry timer). A release is heard up to once per node: later copies of one announcement go
// only to the waiter its first copy woke. On the strand.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fencelock::storage {

// An acquire waiting for a held lock, woken when a name of its queues is released.
class Waiter {
 public:
  enum class Wake : std::uint8_t {
    kTaken,         // it was sleeping between attempts and tries again at once
    kAlreadyAwake,  // an attempt is out or about to go: if it fails, it tries once more at once
    kPassed,        // it has no use for this release now: the waiters behind it get it
    kFinished,      // done: the wake-up is not for it
  };
  virtual ~Waiter() = default;
  // A release of `name` (one of its queues). A waiter of several queues (a lock set's names, a
  // semaphore's slots) passes a release it cannot use on: while an attempt of its own is out (it
  // may not even want that slot), or — a set — while another name its last refusal found held
  // stays held.
  virtual Wake wake_now(std::string_view name) = 0;
  // It is now the first waiter of a queue — the one that watches the nodes — because the one before
  // it was granted, which frees in about `frees_in` unless released: a sleeping waiter wakes then
  // at the latest (or at the 2 s cap, or its budget's end).
  virtual void become_first(std::chrono::steady_clock::duration frees_in) = 0;
};

class WaiterQueues {
 public:
  bool has_waiters(const std::string& name) const;
  void add(const std::string& name, std::weak_ptr<Waiter> waiter);
  void remove(const std::string& name, const Waiter* waiter);
  // become_first() on the first live waiter behind `after` in `name`'s queue.
  void promote_after(const std::string& name, const Waiter* after,
                     std::chrono::steady_clock::duration frees_in);
  // True if `waiter` is the first live waiter of `name`'s queue.
  bool is_first(const std::string& name, const Waiter* waiter) const;
  // A release of `name` (`release_tag`: the release that freed it) wakes its first waiter that
  // can use it.
  void wake_first(const std::string& name, std::string_view release_tag);
  // Hands a wake-up of `name` on to the waiters queued behind `after` (a lock set's waiter whose
  // attempt failed on another of its names while `name` stayed free), as wake_first does.
  void wake_after(const std::string& name, const Waiter* after);
  // Another engine's release of `name`, announced by one node: the first copy of `release_tag`
  // wakes the first waiter; a later copy (another node has now deleted the key too) makes the
  // waiter the first one woke try once more at once, should its attempt be out.
  void release_heard(const std::string& name, std::string_view release_tag);

 private:
  struct NameWaiters {
    std::list<std::weak_ptr<Waiter>> queue;  // FIFO
    std::string last_release;                // tag of the last release that woke a waiter
    std::weak_ptr<Waiter> woken;             // the waiter that release woke
  };
  // Offers a wake-up of `name` to the waiters from `first` on.
  static void wake_from(NameWaiters& waiters, const std::string& name,
                        std::list<std::weak_ptr<Waiter>>::iterator first);

  std::unordered_map<std::string, NameWaiters> queues_;
};

}  // namespace fencelock::storage
