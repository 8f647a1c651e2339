// Fencing tokens from INCR on one dedicated Redis master, shared by many fencelockd instances —
// how the HTTP tier scales out. Not one of the lock nodes, and no Sentinel/replica failover: a
// failover loses acknowledged writes.
//
// Token = epoch · 2^40 + INCR(<prefix><name>).
//
// Regression guard. A counter master that restarts may come back without its last increments
// (appendfsync everysec, or no persistence), so INCR could repeat a value already handed out. The
// master's run_id changes on every restart, and every connection (re)starts with a handshake that
// reads it. Before drawing on a new connection, each source runs an epoch script: if the master's
// epoch record names a different run_id, it sets the epoch to max(recorded, the highest epoch this
// source has used) + 1, with the new run_id; if the record is missing and the source drew before,
// to that source's highest epoch + 1; otherwise it adopts the recorded epoch. All sources meeting
// the same incarnation therefore agree on one epoch, greater than every epoch any of them used
// before — so every new token is greater than every token of earlier incarnations, even if the
// counters themselves went back. Each source keeps the highest epoch it used durably in a local
// file (`epoch_file`), so the guard holds across a fencelockd restart too. A fresh deployment (no
// record anywhere) starts at epoch 0, so tokens stay small until the first master restart; tokens
// stay below 2^53 (safe in JavaScript) for the first 8191 restarts.
//
// Every draw checks the epoch too: INCR (and the GET of current()) runs in one script that first
// compares the record's epoch with the epoch this source draws under, and on a mismatch touches
// nothing and answers -1 (a mismatch) instead of a counter. The record can change without this
// source's connection dropping — a FLUSHALL, a proxy now pointing the same address at another
// master, or another source that renegotiated after either — and no token is ever handed out
// under an epoch the record does not hold, so two sources never interleave two epochs. On a
// mismatch the source re-reads the master's run_id (INFO server) and runs the epoch script again
// on the same connection, then retries the draw once; draws arriving meanwhile wait for it. A
// draw that mismatches twice, or whose renegotiation fails, fails with kUnavailable.
//
// Limits: if the master loses its epoch record, the guard relies on the first source to
// renegotiate having adopted the latest epoch — true of every source that drew, or connected,
// since the record last changed — or on a source that used it reconnecting with its epoch file.
// A source idle across two losses of the record could come back one epoch short.
// A counter reaching 2^40 within one epoch fails with kInternal.
//
// current(name) = epoch · 2^40 + GET(<prefix><name>), under the same check — in a later epoch a
// name that was never drawn reports epoch · 2^40, as if the counter had jumped there; a later
// next() is still greater.
//
// Threading: thread-safe; callbacks run on the source's strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "fencelock/storage/engine_options.h"
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
