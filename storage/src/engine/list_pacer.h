// Listing steps yield to grants (docs/architecture.md, "Listings yield to grants"): one listing
// step of an engine runs at a time, in the order asked, and a step during which an acquire attempt,
// extend or release started is followed by a rest of kListRestFactor times its length (at most
// kMaxListRest) before the next listing step, of any listing, starts. So while grants run, listing
// steps of up to kMaxListRest / kListRestFactor take at most an eighth of the engine's time; an
// idle engine lists at full speed. At most kMaxQueuedListSteps wait. On the strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

namespace fencelock::storage {

inline constexpr int kListRestFactor = 7;
inline constexpr std::chrono::milliseconds kMaxListRest{1000};
inline constexpr std::size_t kMaxQueuedListSteps = 64;

class ListPacer {
 public:
  explicit ListPacer(const boost::asio::any_io_executor& strand) : timer_(strand) {}

  // An acquire attempt, extend or release started: a listing step running now is followed by a
  // rest.
  void note_foreground() noexcept { ++foreground_; }
  // Runs `step` once no other listing step runs or rests: at once if none does (inside this
  // call), otherwise later, in the order asked. The step must call leave() exactly once. False
  // (and `step` never runs) when kMaxQueuedListSteps already wait.
  [[nodiscard]] bool enter(std::function<void()> step);
  // The step that entered last has ended.
  void leave();
  // Runs every queued step now, one after another, and never rests again (the engine is stopping).
  void stop();

 private:
  void run(const std::function<void()>& step);
  void next();  // the rest is over: the next queued step, if any

  boost::asio::steady_timer timer_;
  // Lives as long as the pacer: a rest's handler that was already queued when the engine went
  // away finds it gone.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
  std::deque<std::function<void()>> queued_;
  bool busy_ = false;  // a step runs or rests
  bool stopped_ = false;
  bool draining_ = false;  // next() runs queued steps: one that ends at once does not nest
  std::uint64_t foreground_ = 0;
  std::uint64_t foreground_at_step_ = 0;
  std::chrono::steady_clock::time_point step_started_;
};

}  // namespace fencelock::storage
