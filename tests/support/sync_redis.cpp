#include "sync_redis.h"

#include <hiredis.h>
#include <sys/time.h>

#include <algorithm>

namespace fencelock::testing {

namespace {

timeval to_timeval(std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  return tv;
}

}  // namespace

SyncRedis::SyncRedis(std::uint16_t port, std::chrono::milliseconds timeout)
    : SyncRedis("127.0.0.1", port, timeout) {}

SyncRedis::SyncRedis(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout)
    : context_(redisConnectWithTimeout(host.c_str(), port, to_timeval(timeout)), &redisFree) {
  if (context_ && context_->err == 0) redisSetTimeout(context_.get(), to_timeval(timeout));
}

SyncRedis::~SyncRedis() = default;

SyncReply SyncRedis::run(std::vector<const char*>& argv, const std::vector<std::size_t>& lengths) {
  SyncReply failed = SyncReply::failure(SyncReply::Kind::kDisconnected);
  if (!context_ || context_->err != 0) {
    failed.text = context_ ? context_->errstr : "out of memory";
    return failed;
  }
  auto* raw = static_cast<redisReply*>(
      redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (raw == nullptr) {
    failed.text = context_->errstr;
    return failed;
  }
  SyncReply out = SyncReply::from_hiredis(raw);
  freeReplyObject(raw);
  return out;
}

SyncReply SyncRedis::receive() {
  SyncReply failed = SyncReply::failure(SyncReply::Kind::kDisconnected);
  if (!context_ || context_->err != 0) {
    failed.text = context_ ? context_->errstr : "out of memory";
    return failed;
  }
  void* raw = nullptr;
  if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
    failed.text = context_->errstr;
    return failed;
  }
  SyncReply out = SyncReply::from_hiredis(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

SyncReply SyncRedis::command(std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  return run(argv, lengths);
}

SyncReply SyncRedis::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  return run(argv, lengths);
}

bool SyncRedis::ping() {
  const SyncReply r = command({"PING"});
  return r.kind == SyncReply::Kind::kStatus && r.text == "PONG";
}

std::optional<std::string> SyncRedis::get(std::string_view key) {
  const SyncReply r = command({"GET", key});
  if (r.kind != SyncReply::Kind::kString) return std::nullopt;
  return r.text;
}

std::int64_t SyncRedis::dbsize() {
  const SyncReply r = command({"DBSIZE"});
  return r.kind == SyncReply::Kind::kInteger ? r.integer : -1;
}

std::int64_t SyncRedis::count_keys(std::string_view pattern) {
  const SyncReply r = command({"KEYS", pattern});
  if (r.kind != SyncReply::Kind::kArray) return -1;
  return std::count_if(r.elements.begin(), r.elements.end(),
                       [](const SyncReply& key) { return !key.text.ends_with("#fence"); });
}

std::optional<std::uint64_t> SyncRedis::fence(std::string_view name, std::string_view prefix) {
  const auto value = get(std::string(prefix) + std::string(name) + "#fence");
  if (!value) return std::nullopt;
  return std::stoull(*value);
}

std::string SyncRedis::info_field(std::string_view section, std::string_view field) {
  const SyncReply r = command({"INFO", section});
  if (r.kind != SyncReply::Kind::kString) return {};
  const std::string needle = std::string(field) + ":";
  std::size_t at = r.text.find(needle);
  while (at != std::string::npos && at != 0 && r.text[at - 1] != '\n')
    at = r.text.find(needle, at + 1);
  if (at == std::string::npos) return {};
  const std::size_t begin = at + needle.size();
  const std::size_t end = r.text.find_first_of("\r\n", begin);
  return r.text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace fencelock::testing
