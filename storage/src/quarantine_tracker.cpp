#include "quarantine_tracker.h"

namespace fencelock::storage {

QuarantineTracker::QuarantineTracker(std::size_t node_count, std::chrono::steady_clock::duration window,
                                     bool enabled)
    : run_ids_(node_count), until_(node_count, TimePoint::min()), window_(window), enabled_(enabled) {}

bool QuarantineTracker::observe(std::size_t node, std::string_view run_id, TimePoint now) {
  std::string& known = run_ids_.at(node);
  const bool restarted = !known.empty() && known != run_id;
  known = run_id;
  if (!restarted || !enabled_) return false;
  until_[node] = now + window_;
  return true;
}

bool QuarantineTracker::quarantined(std::size_t node, TimePoint now) const {
  return enabled_ && now < until_.at(node);
}

}  // namespace fencelock::storage
