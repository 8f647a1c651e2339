// Listing steps yield to grants (docs/architecture.md, "Listings yield to grants"): one listing
// step of an engine runs at a time, and a step during which a grant, extend or release started is
// followed by a rest of kListRestFactor times its length (at most kMaxListRest) before the next
// listing step, of any listing, starts. So while grants run, listings take at most a quarter of
// the engine's time; an idle engine lists at full speed. On the strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>

namespace fencelock::storage {

inline constexpr int kListRestFactor = 7;
inline constexpr std::chrono::milliseconds kMaxListRest{1000};

class ListPacer {
 public:
  explicit ListPacer(const boost::asio::any_io_executor& strand) : timer_(strand) {}

  // A grant, extend or release started: a listing step running now is followed by a rest.
  void note_foreground() noexcept { ++foreground_; }
  // Runs `step` once no other listing step runs or rests: at once if none does (inside this
  // call), otherwise later, in the order asked. The step must call leave() exactly once.
  void enter(std::function<void()> step);
  // The step that entered last has ended.
  void leave();
  // Runs every queued step now and never rests again (the engine is stopping).
  void stop();

 private:
  void run(const std::function<void()>& step);
  void next();  // the rest is over: the next queued step, if any

  boost::asio::steady_timer timer_;
  std::deque<std::function<void()>> queued_;
  bool busy_ = false;  // a step runs or rests
  bool stopped_ = false;
  std::uint64_t foreground_ = 0;
  std::uint64_t foreground_at_step_ = 0;
  std::chrono::steady_clock::time_point step_started_;
};

}  // namespace fencelock::storage
