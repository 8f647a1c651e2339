// ObjectTable: the resource store's own SQL, for one database (SQLite or PostgreSQL).
//
// ObjectStore (object_store.cpp) holds the store's logic once; an ObjectTable runs its few plain
// statements and owns the connection and the FencedTable over it that guards every write. Each
// method is one statement; begin() opens a transaction that keeps every other writer of `key` out
// until commit() or rollback() — SQLite's BEGIN IMMEDIATE (one writer per file), PostgreSQL's
// BEGIN plus a transaction-scoped advisory lock on the key (one writer per key, across processes).
// Not thread-safe: ObjectStore serializes calls with its mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fencelock/fenced_table.h"
#include "fencelock/result.h"

namespace resource_store {

struct Object {
  std::string value;
  std::uint64_t token = 0;
};

struct RowState {
  std::uint64_t token = 0;
  // The token was put there by a fenced read its holder has not followed by a write.
  bool read_fenced = false;
};

class ObjectTable {
 public:
  virtual ~ObjectTable() = default;

  virtual fencelock::FencedTable& fenced() = 0;
  // The SET list of a fenced write: the value is parameter 1 (?1 or $1) and read_fenced is reset.
  virtual const char* write_assignments() const = 0;
  // The value parameter of write_assignments() in this database's type.
  virtual fencelock::SqlValue value_parameter(const std::string& value) const = 0;

  virtual fencelock::Status begin(const std::string& key) = 0;
  virtual fencelock::Status commit() = 0;
  virtual void rollback() noexcept = 0;

  // The row's token state, nullopt when there is no row.
  virtual fencelock::Result<std::optional<RowState>> row_state(const std::string& key) = 0;
  virtual fencelock::Status insert(const std::string& key, const std::string& value,
                                   std::uint64_t token) = 0;
  virtual fencelock::Status mark_read_fenced(const std::string& key) = 0;
  // The object, nullopt when there is none (no row, or only a placeholder: value NULL).
  virtual fencelock::Result<std::optional<Object>> read(const std::string& key) = 0;
  // What a store without fencing does: insert or overwrite the value, whatever the token.
  virtual fencelock::Status write_unfenced(const std::string& key, const std::string& value) = 0;
};

// Opens (creating) the SQLite database file. Errors: kUnavailable with the path;
// kInvalidArgument for a database written by an older resource-store.
fencelock::Result<std::unique_ptr<ObjectTable>> open_sqlite_objects(const std::string& path);
// Connects to `url` (postgresql://...) and creates the objects table if it is missing.
// Errors: kUnavailable (cannot connect), and FencedTable::open's.
fencelock::Result<std::unique_ptr<ObjectTable>> open_postgres_objects(const std::string& url);

}  // namespace resource_store
