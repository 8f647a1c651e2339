#include "fencelock/storage/lease_timing.h"

#include <cmath>

namespace fencelock::storage {

namespace {
constexpr std::chrono::microseconds kExpiryGranularity{2000};  // Redis expires in whole ms
}

std::chrono::microseconds drift_allowance(std::chrono::milliseconds ttl, double drift_factor) {
  const double micros = static_cast<double>(ttl.count()) * 1000.0 * drift_factor;
  return std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(std::ceil(micros))) +
         kExpiryGranularity;
}

std::chrono::microseconds remaining_validity(std::chrono::milliseconds ttl,
                                             std::chrono::steady_clock::duration elapsed,
                                             double drift_factor) {
  // Round elapsed up: overstating the time spent can only shorten the validity.
  const auto spent = std::chrono::ceil<std::chrono::microseconds>(elapsed);
  return std::chrono::duration_cast<std::chrono::microseconds>(ttl) - spent -
         drift_allowance(ttl, drift_factor);
}

std::chrono::milliseconds reportable_validity(std::chrono::microseconds validity) {
  return std::chrono::floor<std::chrono::milliseconds>(validity);
}

}  // namespace fencelock::storage
