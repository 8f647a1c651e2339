#include "object_store.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

namespace resource_store {

using fencelock::Commit;
using fencelock::Error;
using fencelock::Result;
using fencelock::TokenRule;
using fencelock::WriteOutcome;

namespace {

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

// A transaction on the table (ObjectTable::begin: no other writer of the key until it ends),
// rolled back at scope exit unless committed.
class Transaction {
 public:
  Transaction(ObjectTable& table, const std::string& key) : table_(table) {
    const auto begun = table_.begin(key);
    if (!begun.ok()) error_ = begun.error();
  }
  ~Transaction() {
    if (!committed_) table_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  const std::optional<Error>& error() const { return error_; }
  fencelock::Status commit() {
    auto committed = table_.commit();
    committed_ = committed.ok();
    return committed;
  }

 private:
  ObjectTable& table_;
  std::optional<Error> error_;
  bool committed_ = false;
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> ObjectStore::open(const std::string& db,
                                                       const std::filesystem::path& log,
                                                       Mode mode) {
  auto table = is_postgres_url(db) ? open_postgres_objects(db) : open_sqlite_objects(db);
  if (!table.ok()) return std::move(table).error();
  return std::unique_ptr<ObjectStore>(new ObjectStore(std::move(table).value(), log, mode));
}

ObjectStore::ObjectStore(std::unique_ptr<ObjectTable> table, std::filesystem::path log_path,
                         Mode mode)
    : table_(std::move(table)),
      log_path_(std::move(log_path)),
      log_(log_path_, std::ios::app),
      mode_(mode) {}

ObjectStore::~ObjectStore() = default;

void ObjectStore::append_log(const std::string& op, const std::string& key, std::uint64_t token,
                             const std::string& outcome, std::uint64_t current_token,
                             const std::string& value) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const nlohmann::json entry{{"seq", ++seq_},
                             {"time_us", micros},
                             {"op", op},
                             {"key", key},
                             {"token", token},
                             {"outcome", outcome},
                             {"current_token", current_token},
                             {"value", value}};
  // A value that is not UTF-8 is logged with U+FFFD; it must never stop the log (the write is
  // already committed).
  log_ << entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n'
       << std::flush;
}

Result<PutOutcome> ObjectStore::put(const std::string& key, const std::string& value,
                                    std::uint64_t token) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ != Mode::kUnfenced) return put_fenced(key, value, token);
  // What a store without fencing does: overwrite, whoever writes and whenever.
  const auto written = table_->write_unfenced(key, value);
  if (!written.ok()) return written.error();
  append_log("write", key, token, "applied_unfenced", 0, value);
  return PutOutcome{true, 0};
}

Result<PutOutcome> ObjectStore::put_fenced(const std::string& key, const std::string& value,
                                           std::uint64_t token) {
  Transaction transaction(*table_, key);
  if (transaction.error()) return *transaction.error();
  auto row = table_->row_state(key);
  if (!row.ok()) return std::move(row).error();

  PutOutcome outcome{true, token};
  if (!row.value()) {
    // No object and no fenced read yet: the first write creates it.
    const auto inserted = table_->insert(key, value, token);
    if (!inserted.ok()) return inserted.error();
  } else {
    // Same-token mode admits the row's own token always; fenced mode only right after that
    // token's own fenced read (read_fenced), so a lease still writes at most once.
    const bool own_read = row.value()->token == token && row.value()->read_fenced;
    const TokenRule rule =
        mode_ == Mode::kSameToken || own_read ? TokenRule::kNewerOrSame : TokenRule::kStrictlyNewer;
    // Inside our transaction, committed below before the outcome is reported.
    auto written =
        table_->fenced().update(key, table_->write_assignments(), {table_->value_parameter(value)},
                                token, rule, Commit::kByCaller);
    if (!written.ok()) return std::move(written).error();
    outcome = PutOutcome{written->outcome == WriteOutcome::kApplied, written->current_token};
  }
  const auto committed = transaction.commit();
  if (!committed.ok()) return committed.error();
  append_log("write", key, token, outcome.applied ? "applied" : "rejected_stale",
             outcome.current_token, value);
  return outcome;
}

Result<PutOutcome> ObjectStore::fence_read(const std::string& key, std::uint64_t token) {
  Transaction transaction(*table_, key);
  if (transaction.error()) return *transaction.error();
  auto before = table_->row_state(key);
  if (!before.ok()) return std::move(before).error();
  // A holder may read its row again; only an older token is refused. A missing key gets a
  // placeholder holding the token (the table's value column is nullable).
  auto fenced = table_->fenced().fence_read(key, token, TokenRule::kNewerOrSame, Commit::kByCaller);
  if (!fenced.ok()) return std::move(fenced).error();
  const PutOutcome outcome{fenced->outcome == WriteOutcome::kApplied, fenced->current_token};
  if (outcome.applied && (!before.value() || before.value()->token < token)) {
    // The token is on the row because of this read: its holder may write once with it. A read
    // after the holder's own write (token already equal) grants nothing more.
    const auto marked = table_->mark_read_fenced(key);
    if (!marked.ok()) return marked.error();
  }
  const auto committed = transaction.commit();
  if (!committed.ok()) return committed.error();
  append_log("fenced_read", key, token, outcome.applied ? "fenced" : "rejected_stale",
             outcome.current_token, "");
  return outcome;
}

Result<std::optional<Object>> ObjectStore::get(const std::string& key,
                                               std::optional<std::uint64_t> token,
                                               PutOutcome& fence) {
  const std::lock_guard<std::mutex> lock(mutex_);
  fence = PutOutcome{true, 0};
  if (token && mode_ != Mode::kUnfenced) {
    auto fenced = fence_read(key, *token);
    if (!fenced.ok()) return std::move(fenced).error();
    fence = fenced.value();
    if (!fence.applied) return std::optional<Object>();
  }
  return table_->read(key);
}

std::string ObjectStore::log_text() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace resource_store
