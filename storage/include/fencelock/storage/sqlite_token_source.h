// The embedded fencing-token source: one counter per name in a local SQLite file.
//
// Durability without an fsync per token: the file records, per name, a *reserved* high-water
// mark. Tokens up to it are handed out from memory; when a name's range runs out, the worker
// thread durably raises the mark by a block (WAL, synchronous=FULL, committed before any token of
// the new range is handed out), batching every name that needs it into one transaction (group
// commit). After a crash or restart a name continues above its recorded mark — the unused rest of
// a range becomes a gap, which fencing tolerates; a token is never repeated or reordered.
//
// That is valid only while exactly one process owns the file, so open() takes an exclusive lock
// (exclusive_file_lock.h) and fails clearly if another fencelockd holds it.
//
// current(name) is the greatest token handed out — or, for a name not in memory (never drawn by
// this process, or evicted), its recorded mark: the counter is taken to have jumped to the mark,
// so a later next() is still greater than anything current() returned.
//
// Threading: thread-safe. next()/current() never block on disk: a name with tokens left in memory
// is answered at once on the calling thread; anything else is answered from the worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

struct SqliteTokenOptions {
  // The counter file; created if missing (its directory must exist). Beside it: "<path>.lock",
  // and SQLite's "-wal" and "-shm" files.
  std::filesystem::path path;
  // Tokens reserved per durable write and name. Default 1000; 1 .. 1,000,000. Larger: fewer
  // fsyncs; a restart skips at most this many tokens per name.
  std::uint64_t reserve_block = 1000;
  // Names kept in memory. Default 100,000; 1 .. 10,000,000. Evicting a name skips the rest of its
  // range.
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
  // owns the file; it cannot be opened or created), kInvalidArgument (an option out of bounds),
  // kInternal (the schema cannot be set up).
  static Result<std::shared_ptr<SqliteTokenSource>> open(SqliteTokenOptions options);

  // Finishes the batch in progress, answers every queued request with kUnavailable, closes the
  // file and releases the lock.
  ~SqliteTokenSource() override;

  void next(std::string_view name, Callback done) override;
  void current(std::string_view name, Callback done) override;

  TokenSourceStats stats() const;

  class Impl;
  explicit SqliteTokenSource(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock::storage
