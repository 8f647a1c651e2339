// The resource store's data: objects (key → value) in SQLite or PostgreSQL (object_table.h), each
// row carrying the newest fencing token that wrote or fenced-read it, and an append-only log of
// every operation, accepted or not.
//
// Modes: kFenced applies a write only if its token is newer than the row's (the card's condition,
// `current_token < :token`) — or equals it when that token's holder fenced its read of the row
// and has not written since (read, then write: one write per lease); kSameToken also accepts the
// row's own token every time (one lease, many writes); kUnfenced applies every write — what a
// store without fencing does, for the demo.
//
// A fenced read of a key with no object records its token all the same (a placeholder row whose
// value is NULL, answered as "no object"), so an older holder cannot create the object afterwards.
// Thread-safe: one mutex around the database and the log; processes sharing the database
// serialize each check-and-write in one transaction (SQLite: BEGIN IMMEDIATE's write lock;
// PostgreSQL: an advisory lock on the key).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fencelock/result.h"
#include "object_table.h"

namespace resource_store {

enum class Mode { kFenced, kSameToken, kUnfenced };

struct PutOutcome {
  bool applied = false;
  std::uint64_t current_token = 0;  // the row's token afterwards (the newer one when refused)
};

class ObjectStore {
 public:
  // Opens (creating) the database and the log. `db` is a SQLite file's path, or a
  // postgresql://... (or postgres://...) URL. Errors: kUnavailable with the path or libpq's
  // message; kInvalidArgument for a SQLite database written by an older resource-store (its
  // objects cannot record fenced reads of missing keys).
  static fencelock::Result<std::unique_ptr<ObjectStore>> open(const std::string& db,
                                                              const std::filesystem::path& log,
                                                              Mode mode);
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // Writes `value` under `key` with `token` (0: no token; refused in fenced modes).
  fencelock::Result<PutOutcome> put(const std::string& key, const std::string& value,
                                    std::uint64_t token);
  // Reads `key`. With a token, a fenced read: the row's token is raised to it first (a missing key
  // gets a placeholder), so an older holder's later write is refused; a reader older than the row
  // is refused (fence.applied = false). nullopt: no object (never written, or only fenced).
  fencelock::Result<std::optional<Object>> get(const std::string& key,
                                               std::optional<std::uint64_t> token,
                                               PutOutcome& fence);
  std::string log_text() const;
  Mode mode() const noexcept { return mode_; }

 private:
  ObjectStore(std::unique_ptr<ObjectTable> table, std::filesystem::path log_path, Mode mode);
  fencelock::Result<PutOutcome> put_fenced(const std::string& key, const std::string& value,
                                           std::uint64_t token);
  fencelock::Result<PutOutcome> fence_read(const std::string& key, std::uint64_t token);
  void append_log(const std::string& op, const std::string& key, std::uint64_t token,
                  const std::string& outcome, std::uint64_t current_token,
                  const std::string& value);

  mutable std::mutex mutex_;
  std::unique_ptr<ObjectTable> table_;
  std::filesystem::path log_path_;
  std::ofstream log_;
  std::uint64_t seq_ = 0;
  Mode mode_;
};

}  // namespace resource_store
