// A value or an error, as every fallible call in fencelock returns it: errors are values, "not
// found" or "locked" are ordinary outcomes, and no exception crosses a public API. Each layer names
// its own error type (fencelock::Result in the SDK, fencelock::storage::Result in the engine);
// this template is what they share. A plain value: copyable when T and E are, movable, not
// thread-safe (like any value).
#pragma once

#include <utility>
#include <variant>

namespace fencelock {

template <class T, class E>
class [[nodiscard]] BasicResult {
 public:
  BasicResult(T value)
      : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  BasicResult(E error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Precondition: ok(). Reading the value of an error is a programming error
  // (std::bad_variant_access).
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Precondition: !ok().
  const E& error() const& { return std::get<1>(state_); }
  E&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, E> state_;
};

// The value of a call that returns nothing on success: BasicResult<Done, E>.
struct Done {};

}  // namespace fencelock
