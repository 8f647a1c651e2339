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
    "CREATE TABLE IF NOT EXISTS token_counters ("
    "  name TEXT PRIMARY KEY,"
    "  reserved INTEGER NOT NULL CHECK (reserved >= 0)"
    ") WITHOUT ROWID;";

// Monotonic in SQL too: a reservation can only raise the mark.
constexpr const char* kUpsert =
    "INSERT INTO token_counters(name, reserved) VALUES(?1, ?2) "
    "ON CONFLICT(name) DO UPDATE SET reserved = excluded.reserved "
    "WHERE excluded.reserved > token_counters.reserved";

constexpr const char* kSelect = "SELECT reserved FROM token_counters WHERE name = ?1";

Error invalid_name() {
  return make_error(ErrorCode::kInvalidArgument,
                    "token name must be 1 to " + std::to_string(kMaxLockNameBytes) + " bytes");
}

}  // namespace

class SqliteTokenSource::Impl {
 public:
  Impl(SqliteTokenOptions options, ExclusiveFileLock lock, SqliteDatabase db, SqliteStatement upsert,
       SqliteStatement select)
      : options_(std::move(options)),
        lock_(std::move(lock)),
        db_(std::move(db)),
        upsert_(std::move(upsert)),
        select_(std::move(select)),
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
    if (!stopping_) {
      // Fast path: the name is in memory and, for next(), has tokens left in its durable range.
      const auto found = cache_.find(std::string(name));
      if (found != cache_.end()) {
        Entry& entry = found->second;
        if (!is_next || entry.last < entry.reserved) {
          const std::uint64_t value = is_next ? ++entry.last : entry.last;
          if (is_next) ++stats_.draws;
          touch(found);
          guard.unlock();
          done(value);
          return;
        }
      }
      queue_.push_back(Request{is_next, std::string(name), std::move(done)});
      guard.unlock();
      wake_.notify_one();
      return;
    }
    guard.unlock();
    done(make_error(ErrorCode::kUnavailable, "the token source is closed"));
  }

  TokenSourceStats stats() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return stats_;
  }

 private:
  struct Entry {
    std::uint64_t last = 0;      // greatest value handed out (or the mark, when loaded)
    std::uint64_t reserved = 0;  // durable high-water mark
    std::list<std::string>::iterator lru;
  };
  struct Request {
    bool is_next;
    std::string name;
    Callback done;
  };
  using Cache = std::unordered_map<std::string, Entry>;

  void touch(Cache::iterator it) { lru_.splice(lru_.begin(), lru_, it->second.lru); }

  void run() {
    for (;;) {
      std::vector<Request> batch;
      {
        std::unique_lock<std::mutex> guard(mutex_);
        wake_.wait(guard, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping with nothing left
        batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
        queue_.clear();
      }
      serve(std::move(batch));
    }
  }

  // Loads unknown names, durably reserves what the batch needs in one transaction, then answers
  // the batch in arrival order.
  void serve(std::vector<Request> batch) {
    std::unordered_map<std::string, std::uint64_t> marks;  // names not in memory → recorded mark
    std::unordered_map<std::string, std::uint64_t> wanted;  // name → next() calls in the batch
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (const auto& request : batch) {
        if (!cache_.contains(request.name)) marks.emplace(request.name, 0);
        if (request.is_next) ++wanted[request.name];
      }
    }
    Status loaded = load_marks(marks);
    if (!loaded.ok()) return fail(batch, loaded.error());

    // New marks: queued next() calls found their range exhausted, and only this thread extends
    // ranges, so each name needs `wanted` more tokens above its current mark.
    std::vector<std::pair<std::string, std::uint64_t>> raises;
    std::optional<Error> exhausted;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (const auto& [name, count] : wanted) {
        const auto cached = cache_.find(name);
        const std::uint64_t reserved = cached != cache_.end() ? cached->second.reserved : marks.at(name);
        const std::uint64_t last = cached != cache_.end() ? cached->second.last : marks.at(name);
        const std::uint64_t left = reserved - last;
        if (left >= count) continue;
        const std::uint64_t grow = std::max<std::uint64_t>(options_.reserve_block, count - left);
        if (reserved > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - grow) {
          exhausted = make_error(ErrorCode::kInternal, "token counter for '" + name + "' is exhausted");
          break;
        }
        raises.emplace_back(name, reserved + grow);
      }
    }
    if (exhausted) return fail(batch, *exhausted);  // callbacks never run under the mutex
    Status committed = commit(raises);
    if (!committed.ok()) return fail(batch, committed.error());

    std::vector<std::pair<Callback, std::uint64_t>> answers;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (const auto& [name, mark] : marks) insert_loaded(name, mark);
      for (const auto& [name, reserved] : raises) cache_.at(name).reserved = reserved;
      if (!raises.empty()) {
        ++stats_.commits;
        stats_.reservations += raises.size();
      }
      for (auto& request : batch) {
        const auto it = cache_.find(request.name);
        Entry& entry = it->second;
        touch(it);
        if (request.is_next) {
          ++entry.last;
          ++stats_.draws;
        }
        answers.emplace_back(std::move(request.done), entry.last);
      }
      evict_beyond_limit();
    }
    for (auto& [done, value] : answers) done(value);
  }

  Status load_marks(std::unordered_map<std::string, std::uint64_t>& marks) {
    for (auto& [name, mark] : marks) {
      select_.reset();
      select_.bind(1, name);
      const int rc = select_.step();
      if (rc == SQLITE_ROW) {
        mark = static_cast<std::uint64_t>(select_.column_int64(0));
      } else if (rc != SQLITE_DONE) {
        select_.reset();
        return make_error(ErrorCode::kUnavailable, "token store read failed: " + db_.last_error());
      }
    }
    select_.reset();
    return Done{};
  }

  Status commit(const std::vector<std::pair<std::string, std::uint64_t>>& raises) {
    if (raises.empty()) return Done{};
    if (Status begun = db_.exec("BEGIN IMMEDIATE"); !begun.ok()) {
      return make_error(ErrorCode::kUnavailable, "token store: " + begun.error().message);
    }
    for (const auto& [name, reserved] : raises) {
      upsert_.reset();
      upsert_.bind(1, name).bind(2, static_cast<std::int64_t>(reserved));
      if (upsert_.step() != SQLITE_DONE) {
        const std::string why = db_.last_error();
        upsert_.reset();
        (void)db_.exec("ROLLBACK");
        return make_error(ErrorCode::kUnavailable, "token store write failed: " + why);
      }
    }
    upsert_.reset();
    if (Status done = db_.exec("COMMIT"); !done.ok()) {
      (void)db_.exec("ROLLBACK");
      return make_error(ErrorCode::kUnavailable, "token store commit failed: " + done.error().message);
    }
    return Done{};
  }

  void insert_loaded(const std::string& name, std::uint64_t mark) {
    if (cache_.contains(name)) return;
    lru_.push_front(name);
    cache_.emplace(name, Entry{mark, mark, lru_.begin()});
  }

  void evict_beyond_limit() {
    while (cache_.size() > options_.max_cached_names) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
  }

  void fail(std::vector<Request>& batch, const Error& error) {
    for (auto& request : batch) request.done(error);
  }

  const SqliteTokenOptions options_;
  ExclusiveFileLock lock_;  // held until the file is closed
  SqliteDatabase db_;
  SqliteStatement upsert_;
  SqliteStatement select_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Request> queue_;
  Cache cache_;
  std::list<std::string> lru_;  // most recently used first
  TokenSourceStats stats_;
  bool stopping_ = false;
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
  auto impl = std::make_unique<Impl>(std::move(options), std::move(lock).value(), std::move(db).value(),
                                     std::move(upsert).value(), std::move(select).value());
  return std::make_shared<SqliteTokenSource>(std::move(impl));
}

SqliteTokenSource::SqliteTokenSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteTokenSource::~SqliteTokenSource() = default;

void SqliteTokenSource::next(std::string_view name, Callback done) { impl_->submit(true, name, std::move(done)); }
void SqliteTokenSource::current(std::string_view name, Callback done) { impl_->submit(false, name, std::move(done)); }
TokenSourceStats SqliteTokenSource::stats() const { return impl_->stats(); }

}  // namespace fencelock::storage
