// The SQLite token source (design in sqlite_token_source.h).
//
// The one invariant everything rests on: no token is ever answered above the durable reserved
// mark R. Two paths hand out tokens, both under mutex_:
//   - the fast path, on the caller's thread: the name's next value is <= R, nothing is queued or
//     being reserved, so the value can be answered at once;
//   - a batch, on the worker: every queued draw is *assigned* its value first, in arrival order,
//     under the lock (so cache evictions that raise the floor mid-batch are accounted for: the
//     batch's highest value is known exactly, not predicted); then, if that highest value is
//     above R, R is raised past it by one durable write; only then are the values answered, each
//     checked against R once more. A failed write answers nothing: the assigned values are
//     skipped (a gap, which fencing allows), and since each counter stays advanced, a later draw
//     of the name gets a still larger value that the next batch must reserve before answering.
// current() never reports above R either: min(last assigned, R) is at least every value handed
// out, and below every value handed out later — also after a restart, which continues above R.
//
// The file also carries the store's identity: a random id written once, when the file is first
// opened by this code, and read back on every open.
#include "fencelock/storage/sqlite_token_source.h"

#include <cassert>
#include <condition_variable>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fencelock/names.h"
#include "fencelock/random_hex.h"
#include "tokens/exclusive_file_lock.h"
#include "tokens/sqlite_handle.h"

namespace fencelock::storage {

namespace {

// Why each PRAGMA: WAL lets a commit be one sequential append; synchronous=FULL fsyncs the WAL at
// every commit, so a committed reservation survives power loss, which is what makes handing out
// its tokens safe.
constexpr const char* kSchema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS token_mark ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  reserved INTEGER NOT NULL CHECK (reserved >= 0)"
    ");"
    "CREATE TABLE IF NOT EXISTS token_store ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  store_id TEXT NOT NULL"
    ");";

// Written once: the first open of a file (new, or older than the table) keeps its id for good.
constexpr const char* kInsertStoreId =
    "INSERT OR IGNORE INTO token_store(id, store_id) VALUES(1, ?1)";
constexpr const char* kSelectStoreId = "SELECT store_id FROM token_store WHERE id = 1";

// Monotonic in SQL too: a reservation can only raise the mark.
constexpr const char* kUpsert =
    "INSERT INTO token_mark(id, reserved) VALUES(1, ?1) "
    "ON CONFLICT(id) DO UPDATE SET reserved = excluded.reserved "
    "WHERE excluded.reserved > token_mark.reserved";

constexpr const char* kSelect = "SELECT reserved FROM token_mark WHERE id = 1";

// skip_past() ignores values from here up: a fence that large is not a token this source made, and
// tokens stay exact in JavaScript (docs/api.md).
constexpr std::uint64_t kHighestSkip = std::uint64_t{1} << 53;

Error invalid_name() {
  return make_error(ErrorCode::kInvalidArgument, std::string(kLockNameRule));
}

}  // namespace

class SqliteTokenSource::Impl {
 public:
  Impl(SqliteTokenOptions options, ExclusiveFileLock lock, SqliteDatabase db,
       SqliteStatement upsert, std::uint64_t mark, std::string store_id)
      : options_(std::move(options)),
        store_id_(std::move(store_id)),
        lock_(std::move(lock)),
        db_(std::move(db)),
        upsert_(std::move(upsert)),
        had_history_(mark > 0),
        reserved_(mark),
        floor_(mark),
        worker_([this] { run(); }) {}

  ~Impl() {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    worker_.join();
    for (auto& request : queue_) {
      request.done(make_error(ErrorCode::kUnavailable, "the token source is closed"));
    }
  }

  // Raises the name's counter to `seen` (never lowers it); the next draw is above it, reserved
  // durably like any other.
  void skip_past(std::string_view name, std::uint64_t seen) {
    if (!is_valid_lock_name(name) || seen >= kHighestSkip) return;
    const std::lock_guard<std::mutex> guard(mutex_);
    if (!stopping_ && last_of(std::string(name)) < seen) remember(std::string(name), seen);
  }

  void submit(bool is_next, std::string_view name, Callback done) {
    if (!is_valid_lock_name(name)) {
      done(invalid_name());
      return;
    }
    std::unique_lock<std::mutex> guard(mutex_);
    if (stopping_) {
      guard.unlock();
      done(make_error(ErrorCode::kUnavailable, "the token source is closed"));
      return;
    }
    const std::uint64_t last = last_of(std::string(name));
    if (!is_next) {
      // A counter can be ahead of R only by values never handed out (a batch being reserved, or
      // one whose write failed); R itself is above every value handed out.
      const std::uint64_t current = std::min(last, reserved_);
      guard.unlock();
      done(current);
      return;
    }
    // Fast path: the next value is inside the durable reservation, no reservation is being
    // committed, and nobody is queued ahead.
    if (!reserving_ && queue_.empty() && last < reserved_) {
      const std::uint64_t token = last + 1;
      assert(token <= reserved_);
      remember(std::string(name), token);
      ++stats_.draws;
      guard.unlock();
      done(token);
      return;
    }
    queue_.push_back(Request{std::string(name), std::move(done)});
    guard.unlock();
    wake_.notify_one();
  }

  TokenSourceStats stats() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return stats_;
  }

  const std::string& store_id() const noexcept { return store_id_; }
  bool has_history() const noexcept { return had_history_; }

 private:
  struct Entry {
    std::uint64_t last = 0;
    std::list<std::string>::iterator lru;
  };
  struct Request {
    std::string name;
    Callback done;
  };

  // The name's last assigned value, or the floor for a name not in the cache. Caller holds mutex_.
  std::uint64_t last_of(const std::string& name) const {
    const auto it = cache_.find(name);
    return it != cache_.end() ? it->second.last : floor_;
  }

  // Records `token` as `name`'s last; keeps the cache bounded. An evicted name's last raises the
  // floor, so the name, if drawn again, continues above it. Caller holds mutex_.
  void remember(const std::string& name, std::uint64_t token) {
    auto it = cache_.find(name);
    if (it != cache_.end()) {
      it->second.last = token;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return;
    }
    lru_.push_front(name);
    cache_.emplace(name, Entry{token, lru_.begin()});
    while (cache_.size() > options_.max_cached_names) {
      auto victim = cache_.find(lru_.back());
      floor_ = std::max(floor_, victim->second.last);
      cache_.erase(victim);
      lru_.pop_back();
    }
  }

  void run() {
    for (;;) {
      std::vector<Request> batch;
      std::vector<std::uint64_t> tokens;
      std::uint64_t highest = 0;
      std::uint64_t reserved = 0;
      {
        std::unique_lock<std::mutex> guard(mutex_);
        wake_.wait(guard, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping with nothing left
        batch.assign(std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
        queue_.clear();
        reserving_ = true;  // until the batch is answered, every draw queues behind it
        // Assigned here, not predicted: remember() may evict a name of this very batch and raise
        // the floor, so a later draw of that name lands higher than a count of draws would say.
        tokens.reserve(batch.size());
        for (const auto& request : batch) {
          const std::uint64_t token = last_of(request.name) + 1;
          remember(request.name, token);
          tokens.push_back(token);
          highest = std::max(highest, token);
        }
        reserved = reserved_;
      }
      answer(std::move(batch), tokens, highest > reserved ? reserve_past(highest) : Status(Done{}));
    }
  }

  // Durably raises the mark to `highest` plus a block, so that the draws after this batch can take
  // the fast path. One statement: one transaction, one fsync for the whole batch (group commit).
  Status reserve_past(std::uint64_t highest) {
    constexpr auto kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (highest > kLimit - options_.reserve_block) {
      return make_error(ErrorCode::kInternal, "the token counter is exhausted");
    }
    const std::uint64_t target = highest + options_.reserve_block;
    Status committed = commit(target);
    if (committed.ok()) {
      std::lock_guard<std::mutex> guard(mutex_);
      reserved_ = std::max(reserved_, target);
      ++stats_.commits;
      ++stats_.reservations;
    }
    return committed;
  }

  // Hands out the batch's assigned tokens — none if the reservation failed, and never one above
  // the durable mark.
  void answer(std::vector<Request> batch, const std::vector<std::uint64_t>& tokens,
              const Status& reserved) {
    std::vector<std::pair<Callback, Result<std::uint64_t>>> answers;
    answers.reserve(batch.size());
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!reserved.ok()) {
          answers.emplace_back(std::move(batch[i].done), reserved.error());
        } else if (tokens[i] > reserved_) {
          assert(false && "a token above the durable mark");
          answers.emplace_back(
              std::move(batch[i].done),
              make_error(ErrorCode::kInternal, "token " + std::to_string(tokens[i]) +
                                                   " is above the durable mark " +
                                                   std::to_string(reserved_)));
        } else {
          ++stats_.draws;
          answers.emplace_back(std::move(batch[i].done), tokens[i]);
        }
      }
      reserving_ = false;
    }
    for (auto& [done, token] : answers) done(std::move(token));
  }

  Status commit(std::uint64_t reserved) {
    upsert_.reset();
    upsert_.bind(1, static_cast<std::int64_t>(reserved));
    const int rc =
        upsert_.step();  // one statement: its own transaction, fsynced (synchronous=FULL)
    const std::string why = rc == SQLITE_DONE ? std::string() : db_.last_error();
    upsert_.reset();
    if (rc != SQLITE_DONE)
      return make_error(ErrorCode::kUnavailable, "token store write failed: " + why);
    return Done{};
  }

  const SqliteTokenOptions options_;
  const std::string store_id_;
  ExclusiveFileLock lock_;  // held until the file is closed
  SqliteDatabase db_;
  SqliteStatement upsert_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Request> queue_;
  std::unordered_map<std::string, Entry> cache_;
  std::list<std::string> lru_;  // most recently used first
  const bool had_history_;      // a token was reserved before this open
  std::uint64_t reserved_;      // durable: no token above it has been handed out, ever
  std::uint64_t floor_;         // every name not in the cache continues above this (may pass
                                // reserved_ only by values that were never handed out)
  TokenSourceStats stats_;
  bool stopping_ = false;
  bool reserving_ = false;  // a batch is being reserved and answered
  std::thread worker_;      // last: starts after everything above exists
};

namespace {

constexpr std::size_t kStoreIdLength = 32;  // 128 bits, hex

// The file's id: written with a fresh random value the first time (one statement, durable like
// every commit here, so a crash leaves either no id or the final one), then only ever read.
Result<std::string> read_store_id(SqliteDatabase& db, const std::filesystem::path& path) {
  auto fresh = random_hex(kStoreIdLength / 2);
  if (!fresh.ok()) return make_error(ErrorCode::kInternal, std::move(fresh).error().message);
  auto insert = db.prepare(kInsertStoreId);
  if (!insert.ok()) return std::move(insert).error();
  if (insert->bind(1, std::string_view(fresh.value())).step() != SQLITE_DONE) {
    return make_error(ErrorCode::kUnavailable,
                      "token store " + path.string() + ": " + db.last_error());
  }
  auto select = db.prepare(kSelectStoreId);
  if (!select.ok()) return std::move(select).error();
  if (select->step() != SQLITE_ROW) {
    return make_error(ErrorCode::kUnavailable,
                      "token store " + path.string() + ": " + db.last_error());
  }
  std::string id = select->column_text(0);
  if (id.size() != kStoreIdLength ||
      id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return make_error(ErrorCode::kInternal,
                      "token store " + path.string() + " has a malformed store id");
  }
  return id;
}

}  // namespace

Result<std::shared_ptr<SqliteTokenSource>> SqliteTokenSource::open(SqliteTokenOptions options) {
  if (options.reserve_block < 1 || options.reserve_block > 1'000'000) {
    return make_error(ErrorCode::kInvalidArgument, "reserve_block must be between 1 and 1000000");
  }
  if (options.max_cached_names < 1 || options.max_cached_names > 10'000'000) {
    return make_error(ErrorCode::kInvalidArgument,
                      "max_cached_names must be between 1 and 10000000");
  }
  auto lock = ExclusiveFileLock::acquire(options.path);
  if (!lock.ok()) return std::move(lock).error();
  auto db = SqliteDatabase::open(options.path);
  if (!db.ok()) return std::move(db).error();
  if (Status schema = db->exec(kSchema); !schema.ok()) {
    return make_error(ErrorCode::kInternal,
                      "token store " + options.path.string() + ": " + schema.error().message);
  }
  auto upsert = db->prepare(kUpsert);
  if (!upsert.ok()) return std::move(upsert).error();
  auto select = db->prepare(kSelect);
  if (!select.ok()) return std::move(select).error();
  std::uint64_t mark = 0;
  const int rc = select->step();
  if (rc == SQLITE_ROW) {
    mark = static_cast<std::uint64_t>(select->column_int64(0));
  } else if (rc != SQLITE_DONE) {
    return make_error(ErrorCode::kUnavailable,
                      "token store " + options.path.string() + ": " + db->last_error());
  }
  select->reset();
  auto store_id = read_store_id(db.value(), options.path);
  if (!store_id.ok()) return std::move(store_id).error();
  auto impl =
      std::make_unique<Impl>(std::move(options), std::move(lock).value(), std::move(db).value(),
                             std::move(upsert).value(), mark, std::move(store_id).value());
  return std::make_shared<SqliteTokenSource>(std::move(impl));
}

SqliteTokenSource::SqliteTokenSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteTokenSource::~SqliteTokenSource() = default;

void SqliteTokenSource::next(std::string_view name, Callback done) {
  impl_->submit(true, name, std::move(done));
}
void SqliteTokenSource::current(std::string_view name, Callback done) {
  impl_->submit(false, name, std::move(done));
}
void SqliteTokenSource::skip_past(std::string_view name, std::uint64_t seen) {
  impl_->skip_past(name, seen);
}
bool SqliteTokenSource::has_history() const {
  return impl_->has_history();
}
TokenTraits SqliteTokenSource::traits() const {
  return {TokenTraits::Order::kAboveRestart, "sqlite", "sqlite:" + store_id(), ""};
}
TokenSourceStats SqliteTokenSource::stats() const {
  return impl_->stats();
}
const std::string& SqliteTokenSource::store_id() const noexcept {
  return impl_->store_id();
}

}  // namespace fencelock::storage
