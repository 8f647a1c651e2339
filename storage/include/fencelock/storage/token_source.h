// Fencing-token sources: a linearizable counter per name.
//
// next(name) returns a positive 64-bit value strictly greater than every value ever returned for
// `name` by any next() of this source (or of any process sharing its store), and greater than
// every value returned by a next() that *completed* before this one started — across process
// restarts and counter crashes too. A value is returned only once it is durable. Gaps are allowed.
// current(name) returns the greatest value handed out for `name` so far, 0 if none.
//
// Callbacks run exactly once, on any thread; they must not block.
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "fencelock/storage/result.h"

namespace fencelock::storage {

class TokenSource {
 public:
  using Callback = std::function<void(Result<std::uint64_t>)>;

  virtual ~TokenSource() = default;

  // Errors: kUnavailable (the counter store cannot be reached or did not answer in time),
  // kInvalidArgument (empty name), kInternal.
  virtual void next(std::string_view name, Callback done) = 0;
  virtual void current(std::string_view name, Callback done) = 0;
};

}  // namespace fencelock::storage
