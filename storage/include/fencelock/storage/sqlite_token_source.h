// The embedded fencing-token source: one counter per name, made durable by a local SQLite file.
//
// Durability without an fsync per token, or per new name: the file records one *reserved* mark
// R, and no token above R is ever handed out. Each name's counter lives in memory; a draw that
// would pass R waits while the worker thread assigns every waiting draw its value, then durably
// raises R past the highest of them plus a block (WAL, synchronous=FULL, committed before any
// token above the old R leaves the process), all waiting draws sharing that one commit (group
// commit), and only then answers them. If that write fails, none of them gets a token
// (kUnavailable); their values become a gap. After a crash or restart every name continues above
// the recorded R — above every token handed out before — so a token is never repeated or
// reordered; the jump is a gap, which fencing tolerates. The same holds for a name evicted from
// the bounded in-memory cache: evicted names continue above an in-memory floor (the largest
// evicted counter).
//
// That is valid only while exactly one process owns the file, so open() takes an exclusive lock
// (exclusive_file_lock.h) and fails clearly if another fencelockd holds it.
//
// current(name) is the greatest token handed out for `name` — or, for a name not in memory
// (never drawn since start, or evicted), the floor: R as recorded at start, raised by evictions —
// capped at R (a draw being reserved, or whose reservation failed, is not reported).
// So it is 0 for a name never drawn until the first restart; afterwards the counter is taken to
// have jumped to the floor, and a later next() is still greater than anything current() returned.
//
// Threading: thread-safe. next()/current() never block on disk: a draw within R is answered at
// once on the calling thread; a draw that needs a new reservation is answered from the worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

struct SqliteTokenOptions {
  // The counter file; created if missing (its directory must exist). Beside it: "<path>.lock",
  // and SQLite's "-wal" and "-shm" files.
  std::filesystem::path path;
  // Tokens reserved per durable write. Default 1000; 1 .. 1,000,000. Larger: fewer fsyncs; a
  // restart moves every name's counter above the mark (a gap of up to this many plus the spread
  // between names).
  std::uint64_t reserve_block = 1000;
  // Names kept in memory. Default 100,000; 1 .. 10,000,000. An evicted name continues above the
  // floor when drawn again.
  std::size_t max_cached_names = 100'000;
};

struct TokenSourceStats {
  std::uint64_t draws = 0;         // next() answered
  std::uint64_t commits = 0;       // durable transactions
  std::uint64_t reservations = 0;  // ranges reserved (a commit may hold many)
};

class SqliteTokenSource final : public TokenSource {
 public:
  // Opens (creating) the file and takes ownership of it. Errors: kUnavailable (another process
  // owns the file; it cannot be opened, created or written), kInvalidArgument (an option out of
  // bounds), kInternal (the schema cannot be set up, the file's store id is malformed, or the OS
  // has no randomness for a new store id).
  static Result<std::shared_ptr<SqliteTokenSource>> open(SqliteTokenOptions options);

  // Finishes the batch in progress, answers every queued request with kUnavailable, closes the
  // file and releases the lock.
  ~SqliteTokenSource() override;

  void next(std::string_view name, Callback done) override;
  void current(std::string_view name, Callback done) override;
  // The name's counter jumps to `seen` if below (the next draw is `seen` + 1, reserved durably);
  // values of 2^53 and above are ignored (a fence that large is not a token this source made; and
  // tokens stay exact in JavaScript).
  void skip_past(std::string_view name, std::uint64_t seen) override;
  // True when the file had reserved a token before this open.
  bool has_history() const override;
  // kAboveRestart, "sqlite", exclusive_id "sqlite:" + store_id().
  TokenTraits traits() const override;
  bool ready() const override { return true; }
  // Nothing to stop: the file closes with the source.
  void stop() override {}

  TokenSourceStats stats() const;

  // The identity of the token file: 32 lower-case hex digits (128 bits from getrandom(2)),
  // written into the file the first time it is opened (a file from before this id existed gets
  // one then) and the same on every later open, across restarts. Two sources reporting the same
  // id use one file — or copies of it, which would hand out the same tokens just as unsafely;
  // two files created separately do not (128 random bits). Not a secret.
  // Thread safety: immutable after open(); safe from any thread.
  const std::string& store_id() const noexcept;

  class Impl;
  explicit SqliteTokenSource(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock::storage
