#include "fencelock/storage/sqlite_token_source.h"

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

#include "exclusive_file_lock.h"
#include "fencelock/storage/engine_options.h"
#include "sqlite_handle.h"

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
    ");";

// Monotonic in SQL too: a reservation can only raise the mark.
constexpr const char* kUpsert =
    "INSERT INTO token_mark(id, reserved) VALUES(1, ?1) "
    "ON CONFLICT(id) DO UPDATE SET reserved = excluded.reserved "
    "WHERE excluded.reserved > token_mark.reserved";

constexpr const char* kSelect = "SELECT reserved FROM token_mark WHERE id = 1";

Error invalid_name() {
  return make_error(ErrorCode::kInvalidArgument,
                    "token name must be 1 to " + std::to_string(kMaxLockNameBytes) + " bytes");
}

}  // namespace

class SqliteTokenSource::Impl {
 public:
  Impl(SqliteTokenOptions options, ExclusiveFileLock lock, SqliteDatabase db, SqliteStatement upsert,
       std::uint64_t mark)
      : options_(std::move(options)),
        lock_(std::move(lock)),
        db_(std::move(db)),
        upsert_(std::move(upsert)),
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

  void submit(bool is_next, std::string_view name, Callback done) {
    if (name.empty() || name.size() > kMaxLockNameBytes) {
      done(invalid_name());
      return;
    }
    std::unique_lock<std::mutex> guard(mutex_);
    if (stopping_) {
      guard.unlock();
      done(make_error(ErrorCode::kUnavailable, "the token source is closed"));
      return;
    }
    auto it = cache_.find(std::string(name));
    const std::uint64_t last = it != cache_.end() ? it->second.last : floor_;
    if (!is_next) {
      guard.unlock();
      done(last);
      return;
    }
    // Fast path: the next value is inside the durable reservation, no reservation is being
    // committed, and nobody is queued ahead.
    if (!reserving_ && queue_.empty() && last < reserved_) {
      const std::uint64_t token = last + 1;
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

 private:
  struct Entry {
    std::uint64_t last = 0;
    std::list<std::string>::iterator lru;
  };
  struct Request {
    std::string name;
    Callback done;
  };

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
      std::uint64_t needed = 0;
      {
        std::unique_lock<std::mutex> guard(mutex_);
        wake_.wait(guard, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping with nothing left
        batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
        queue_.clear();
        reserving_ = true;  // until the batch is answered, every draw queues behind it
        // The highest value this batch will hand out, if served in order from the cache.
        std::unordered_map<std::string, std::uint64_t> last_by_name;
        for (const auto& request : batch) {
          auto [it, fresh] = last_by_name.try_emplace(request.name, 0);
          if (fresh) {
            const auto cached = cache_.find(request.name);
            it->second = cached != cache_.end() ? cached->second.last : floor_;
          }
          needed = std::max(needed, ++it->second);
        }
      }
      serve(std::move(batch), needed);
    }
  }

  // Raises the durable mark past `needed` (one transaction, one fsync for the whole batch), then
  // hands out the batch in arrival order.
  void serve(std::vector<Request> batch, std::uint64_t needed) {
    std::uint64_t reserved = 0;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      reserved = reserved_;
    }
    if (needed > reserved) {
      const std::uint64_t target = needed + options_.reserve_block;
      Status committed = target > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                             ? Status(make_error(ErrorCode::kInternal, "the token counter is exhausted"))
                             : commit(target);
      if (!committed.ok()) {
        {
          std::lock_guard<std::mutex> guard(mutex_);
          reserving_ = false;
        }
        return fail(batch, committed.error());
      }
      reserved = target;
    }
    std::vector<std::pair<Callback, std::uint64_t>> answers;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (reserved > reserved_) {
        reserved_ = reserved;
        ++stats_.commits;
        ++stats_.reservations;
      }
      for (auto& request : batch) {
        const auto cached = cache_.find(request.name);
        const std::uint64_t token = (cached != cache_.end() ? cached->second.last : floor_) + 1;
        remember(request.name, token);
        ++stats_.draws;
        answers.emplace_back(std::move(request.done), token);
      }
      reserving_ = false;
    }
    for (auto& [done, value] : answers) done(value);
  }

  Status commit(std::uint64_t reserved) {
    upsert_.reset();
    upsert_.bind(1, static_cast<std::int64_t>(reserved));
    const int rc = upsert_.step();  // one statement: its own transaction, fsynced (synchronous=FULL)
    const std::string why = rc == SQLITE_DONE ? std::string() : db_.last_error();
    upsert_.reset();
    if (rc != SQLITE_DONE) return make_error(ErrorCode::kUnavailable, "token store write failed: " + why);
    return Done{};
  }

  void fail(std::vector<Request>& batch, const Error& error) {
    for (auto& request : batch) request.done(error);
  }

  const SqliteTokenOptions options_;
  ExclusiveFileLock lock_;  // held until the file is closed
  SqliteDatabase db_;
  SqliteStatement upsert_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Request> queue_;
  std::unordered_map<std::string, Entry> cache_;
  std::list<std::string> lru_;  // most recently used first
  std::uint64_t reserved_;      // durable: no token above it has been handed out
  std::uint64_t floor_;         // every name not in the cache continues above this
  TokenSourceStats stats_;
  bool stopping_ = false;
  bool reserving_ = false;  // a batch is being reserved and answered
  std::thread worker_;  // last: starts after everything above exists
};

Result<std::shared_ptr<SqliteTokenSource>> SqliteTokenSource::open(SqliteTokenOptions options) {
  if (options.reserve_block < 1 || options.reserve_block > 1'000'000) {
    return make_error(ErrorCode::kInvalidArgument, "reserve_block must be between 1 and 1000000");
  }
  if (options.max_cached_names < 1 || options.max_cached_names > 10'000'000) {
    return make_error(ErrorCode::kInvalidArgument, "max_cached_names must be between 1 and 10000000");
  }
  auto lock = ExclusiveFileLock::acquire(options.path);
  if (!lock.ok()) return std::move(lock).error();
  auto db = SqliteDatabase::open(options.path);
  if (!db.ok()) return std::move(db).error();
  if (Status schema = db->exec(kSchema); !schema.ok()) {
    return make_error(ErrorCode::kInternal, "token store " + options.path.string() + ": " + schema.error().message);
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
    return make_error(ErrorCode::kUnavailable, "token store " + options.path.string() + ": " + db->last_error());
  }
  select->reset();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(lock).value(), std::move(db).value(),
                                     std::move(upsert).value(), mark);
  return std::make_shared<SqliteTokenSource>(std::move(impl));
}

SqliteTokenSource::SqliteTokenSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteTokenSource::~SqliteTokenSource() = default;

void SqliteTokenSource::next(std::string_view name, Callback done) { impl_->submit(true, name, std::move(done)); }
void SqliteTokenSource::current(std::string_view name, Callback done) { impl_->submit(false, name, std::move(done)); }
TokenSourceStats SqliteTokenSource::stats() const { return impl_->stats(); }

}  // namespace fencelock::storage
