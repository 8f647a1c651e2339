// Fencing-token sources: a linearizable counter per name.
//
// next(name) returns a positive 64-bit value strictly greater than every value ever returned for
// `name` by any next() of this source (or of any process sharing its store), and greater than
// every value returned by a next() that *completed* before this one started — across process
// restarts and counter crashes too. A value is returned only once it is durable. Gaps are allowed.
// current(name) returns a value at least every value handed out for `name` before it was called
// and below every value a next(name) that starts after it returns: the greatest one handed out
// (0 if none) where the source knows it; a bound above it where it does not (after a restart the
// SQLite and Redis sources report their floor; the etcd source always reports etcd's revision).
//
// Callbacks run exactly once, on any thread; they must not block.
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "fencelock/storage/result.h"

namespace fencelock::storage {

// What a source says about its own tokens: how they are ordered, which store they come from and
// whether other processes draw from it. The service fills EngineOptions' token_order,
// exclusive_tokens and shared_tokens from it (instance_registry.h says what the engine does with
// them), so neither it nor the engine asks which backend a source is.
struct TokenTraits {
  // How tokens compare across names and restarts (EngineOptions::token_order says what the lock
  // nodes' mark checks for each): only per name (Redis); every token drawn after the source opened
  // above every earlier one (SQLite); every token above every one handed out before its draw
  // started (etcd's revision).
  enum class Order { kPerName, kAboveRestart, kGlobal };
  Order order = Order::kPerName;
  std::string backend;       // "sqlite", "redis", "etcd": for logs and /readyz
  std::string exclusive_id;  // the id of a store only this process draws from; "" when shared
  std::string shared_id;     // a shared store's own id; "" for the Redis INCR store (or none)
};

class TokenSource {
 public:
  using Callback = std::function<void(Result<std::uint64_t>)>;

  virtual ~TokenSource() = default;

  // Errors: kUnavailable (the counter store cannot be reached or did not answer in time),
  // kInvalidArgument (empty name), kInternal.
  virtual void next(std::string_view name, Callback done) = 0;
  virtual void current(std::string_view name, Callback done) = 0;
  // The lock nodes have seen `seen` granted for `name` (a fence refused a token at or below it): a
  // source that can makes its later draws of `name` above `seen` (a gap); one that cannot does
  // nothing, and says why where it overrides this. Never lowers anything. Safe from any thread;
  // never blocks. Pure: a wrapper that forgot to forward it would drop it silently.
  virtual void skip_past(std::string_view name, std::uint64_t seen) = 0;
  // Whether the store handed out (or reserved) a token before this source opened it, or may have.
  // No lease was ever granted with a store that never handed out a token, so lock nodes that all
  // answer without any history are a new cluster only if this is false (node_trust.h, rule 4) —
  // several instances starting together on one new shared store all see it false. Fixed at
  // open; safe from any thread.
  virtual bool has_history() const = 0;
  // Fixed at open; safe from any thread.
  virtual TokenTraits traits() const = 0;
  // Whether draws can succeed now as far as the source knows (readiness; a draw may still fail).
  // Safe from any thread.
  virtual bool ready() const = 0;
  // Fails waiting and later draws with kUnavailable and ends background work. Idempotent.
  virtual void stop() = 0;
};

}  // namespace fencelock::storage
