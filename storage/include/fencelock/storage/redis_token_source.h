// Fencing tokens from INCR on one dedicated Redis master, shared by many fencelockd instances —
// how the HTTP tier scales out. Not one of the lock nodes, and no Sentinel/replica failover: a
// failover loses acknowledged writes.
//
// Contract. Token = epoch · 2^40 + INCR(<prefix><name>). Every connection starts with an epoch
// script: a master whose epoch record names another run_id (it restarted) or lost the record gets
// an epoch above every epoch this source used (kept durably in `epoch_file` before the first token
// of a new epoch); otherwise the source adopts the recorded one. Every draw (and current()) checks
// the record's epoch in the same script as its INCR (GET) and, on a mismatch, renegotiates on the
// same connection and retries once; no token is handed out under an epoch the record does not
// hold. So every token is above every token of earlier incarnations, even if the counters went
// back. A second mismatch or a failed renegotiation is kUnavailable; a counter reaching 2^40 in
// one epoch is kInternal. current(name) in a later epoch reports epoch · 2^40 for a name not drawn
// since. Why, and the limits (an instance idle across two losses of the record):
// docs/architecture.md, "Single-master Redis INCR".
//
// Threading: thread-safe; callbacks run on the source's strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "fencelock/storage/node_address.h"
#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

inline constexpr unsigned kTokenEpochShift = 40;

struct RedisTokenOptions {
  NodeAddress master;
  // Local file holding the highest epoch this source used. Required when the guard is on.
  std::filesystem::path epoch_file;
  // Deadline of one draw. Default 100 ms; 1 ms .. 10 s.
  std::chrono::milliseconds timeout{100};
  std::chrono::milliseconds connect_timeout{250};
  // Start even when the master is not `appendonly yes` + `appendfsync always` (log loudly).
  bool allow_unsafe_persistence = false;
  // The regression guard above. Turning it off is for tests that show what it prevents.
  bool regression_guard = true;
  std::string key_prefix = "fencelock:token:";
  RedisCredentials credentials;  // AUTH on every connection to the master when not empty
};

class RedisTokenSource final : public TokenSource {
 public:
  // Checks the master's persistence with a blocking round trip (this runs at startup, before
  // anything is served), then connects in the background on a strand of `executor`.
  // Errors: kUnavailable (master unreachable, or persistence unsafe without the unsafe flag —
  // the message says what it found and what to change), kInvalidArgument (options).
  static Result<std::shared_ptr<RedisTokenSource>> create(
      const boost::asio::any_io_executor& executor, RedisTokenOptions options);
  ~RedisTokenSource() override;

  // Empty, or a warning about the master's persistence when it was accepted only because of
  // allow_unsafe_persistence. The service logs it.
  const std::string& persistence_warning() const noexcept;

  // Ends the connection; draws fail with kUnavailable afterwards. Called by the destructor.
  void stop() override;

  // Errors: kUnavailable (master down, reconnecting, slower than the timeout, or its epoch record
  // changed and could not be agreed on again — see above), kInternal (counter exhausted within
  // an epoch), kInvalidArgument.
  void next(std::string_view name, Callback done) override;
  void current(std::string_view name, Callback done) override;
  // Raises the master's epoch record to `seen`'s epoch if it is below (every source then adopts
  // it, as after any change of the record) and the name's counter to `seen`'s counter if below, so
  // the next draw of `name` is above `seen` — a store wiped, or started over with a fresh epoch
  // file, skips past the lock nodes' fence. One script, sent before any later draw; best effort
  // (see skip_past in token_source.h). Values of 2^53 and above are ignored.
  void skip_past(std::string_view name, std::uint64_t seen) override;
  // True when the master held a counter at create() (a SCAN of the prefix that ran past 2 s
  // counts as one found), or the epoch file held an epoch while the master had no epoch record
  // (it was wiped).
  bool has_history() const override;
  // kPerName, "redis", the shared INCR store.
  TokenTraits traits() const override;
  // Connected with an epoch agreed.
  bool ready() const override { return epoch() >= 0; }

  // The epoch in use, or -1 while (re)connecting. For tests and metrics.
  long long epoch() const noexcept;

  class Impl;

 private:
  explicit RedisTokenSource(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace fencelock::storage
