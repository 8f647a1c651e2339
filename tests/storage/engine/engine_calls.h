// Blocking calls to a RedlockEngine's lock sets and semaphores for the engine tests (the single
// lock's are members of EngineUnderTest), and what the tests read off the nodes about them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/lua_scripts.h"
#include "engine_under_test.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"

namespace fencelock::testing {

// A SQLite token source in `dir` (tokens.db).
inline std::shared_ptr<storage::SqliteTokenSource> tokens_in(const TempDir& dir) {
  storage::SqliteTokenOptions options;
  options.path = dir.path() / "tokens.db";
  return storage::SqliteTokenSource::open(options).value();
}

inline storage::Result<storage::LockSetLease> acquire_set(EngineUnderTest& t,
                                                          std::vector<std::string> names,
                                                          std::chrono::milliseconds ttl,
                                                          std::chrono::milliseconds wait = 0ms,
                                                          std::string owner = {}) {
  return await<storage::LockSetLease>([&](auto done) {
    t.engine().acquire_set(storage::LockSetRequest{std::move(names), ttl, wait, std::move(owner)},
                           std::move(done));
  });
}

inline storage::LockSetClaim set_claim(const storage::LockSetLease& lease) {
  return {lease.tokens, lease.proof, {}};
}

inline storage::Result<bool> release_set(EngineUnderTest& t, std::vector<std::string> names,
                                         const storage::LockSetClaim& claim) {
  return await<bool>(
      [&](auto done) { t.engine().release_set(std::move(names), claim, std::move(done)); });
}

inline storage::Result<storage::LockSetExtension> extend_set(EngineUnderTest& t,
                                                             std::vector<std::string> names,
                                                             const storage::LockSetClaim& claim,
                                                             std::chrono::milliseconds ttl) {
  return await<storage::LockSetExtension>(
      [&](auto done) { t.engine().extend_set(std::move(names), claim, ttl, std::move(done)); });
}

inline storage::Result<storage::Permit> acquire_permit(EngineUnderTest& t, const std::string& name,
                                                       std::uint32_t permits,
                                                       std::chrono::milliseconds ttl,
                                                       std::chrono::milliseconds wait = 0ms) {
  return await<storage::Permit>([&](auto done) {
    t.engine().acquire_permit(storage::PermitRequest{name, permits, ttl, wait, {}},
                              std::move(done));
  });
}

inline storage::LeaseClaim permit_claim(const storage::Permit& permit) {
  return {permit.token, permit.proof, {}};
}

inline storage::Result<bool> release_permit(EngineUnderTest& t, const storage::Permit& permit) {
  return await<bool>([&](auto done) {
    t.engine().release_permit(permit.name, permit.permits, permit.slot, permit_claim(permit),
                              std::move(done));
  });
}

// `permits` is the count the extend presents (a lease's text carries it, unproven): the permit's
// own unless a test alters it.
inline storage::Result<storage::Extension> extend_permit(EngineUnderTest& t,
                                                         const storage::Permit& permit,
                                                         std::chrono::milliseconds ttl,
                                                         std::uint32_t permits = 0) {
  return await<storage::Extension>([&](auto done) {
    t.engine().extend_permit(permit.name, permits == 0 ? permit.permits : permits, permit.slot,
                             permit_claim(permit), ttl, std::move(done));
  });
}

inline storage::Result<storage::SemaphoreStatus> inspect_semaphore(EngineUnderTest& t,
                                                                   const std::string& name) {
  return await<storage::SemaphoreStatus>(
      [&](auto done) { t.engine().inspect_semaphore(name, std::move(done)); });
}

// A Result<bool> that is ok and true.
inline bool said_yes(const storage::Result<bool>& result) {
  return result.ok() && result.value();
}

// How many EVALSHA calls `node` served so far (every script attempt, release or extend).
inline std::int64_t evalsha_calls(RedisCluster& cluster, std::size_t node) {
  const std::string stats =
      SyncRedis(cluster.node(node).port()).info_field("commandstats", "cmdstat_evalsha");
  if (stats.empty()) return 0;
  return std::stoll(stats.substr(stats.find('=') + 1));
}

// From now on `node` keeps every command it serves in its slow log (up to 10,000), so that
// script_calls() can count one script's calls — unlike evalsha_calls(), not counting the engine's
// own background scripts (the registry round, every second).
inline void log_every_command(RedisCluster& cluster, std::size_t node) {
  SyncRedis redis(cluster.node(node).port());
  redis.command({"CONFIG", "SET", "slowlog-max-len", "10000"});
  redis.command({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
  redis.command({"SLOWLOG", "RESET"});
}

// How many commands `node` served since log_every_command() whose arguments `matches`.
template <class Matches>
std::int64_t logged_calls(RedisCluster& cluster, std::size_t node, Matches matches) {
  const SyncReply log = SyncRedis(cluster.node(node).port()).command({"SLOWLOG", "GET", "-1"});
  std::int64_t calls = 0;
  for (const SyncReply& entry : log.elements) {
    if (entry.elements.size() < 4) continue;
    if (matches(entry.elements[3].elements)) ++calls;  // {id, time, duration, args, ...}
  }
  return calls;
}

inline bool is_command(const SyncReply& arg, std::string_view upper, std::string_view lower) {
  return arg.text == upper || arg.text == lower;
}

// How many EVALSHA calls of the script `sha` `node` served since log_every_command().
inline std::int64_t script_calls(RedisCluster& cluster, std::size_t node, std::string_view sha) {
  return logged_calls(cluster, node, [sha](const std::vector<SyncReply>& args) {
    return args.size() >= 2 && is_command(args[0], "EVALSHA", "evalsha") && args[1].text == sha;
  });
}

// How many EVAL calls whose first key is `key` `node` served since log_every_command(): e.g. the
// release of a refused attempt's keys (EngineCore::release_everywhere), sent in the same strand
// turn as the attempt's decision to sleep.
inline std::int64_t eval_calls_on(RedisCluster& cluster, std::size_t node, std::string_view key) {
  return logged_calls(cluster, node, [key](const std::vector<SyncReply>& args) {
    return args.size() >= 4 && is_command(args[0], "EVAL", "eval") && args[3].text == key;
  });
}

// An SQLite token source on `path` that reserves one token at a time, so the file holds every
// token drawn (a copy of it is exactly what was handed out).
inline std::shared_ptr<storage::SqliteTokenSource> sqlite_tokens_one_at_a_time(
    const std::filesystem::path& path) {
  storage::SqliteTokenOptions options;
  options.path = path;
  options.reserve_block = 1;
  auto opened = storage::SqliteTokenSource::open(options);
  if (!opened.ok()) throw std::runtime_error(opened.error().message);
  return opened.value();
}

}  // namespace fencelock::testing
