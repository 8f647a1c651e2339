// The embedded fencing-token source: one counter per name, made durable by a local SQLite file.
//
// Contract: a token is handed out only once the file durably records a reserved mark R at or
// above it (WAL, synchronous=FULL; one commit serves every draw waiting for it); after a crash or
// restart every name continues above R, so no token repeats or goes back — a jump is a gap, which
// fencing tolerates. A name evicted from the bounded in-memory cache continues above the floor
// (the largest evicted counter). A failed reservation answers every waiting draw kUnavailable.
// open() takes an exclusive lock on the file (exclusive_file_lock.h) and fails clearly if another
// fencelockd holds it: the guarantee needs exactly one owner.
//
// current(name) is the greatest token handed out for `name`, or, for a name not in memory, the
// floor (R at start, raised by evictions), capped at R; a later next() is always above it.
//
// Threading: thread-safe. next()/current() never block on disk: a draw within R is answered at
// once on the calling thread; one that needs a new reservation is answered from the worker.
// Why and how: docs/architecture.md, "SQLite sequence".
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
