// The Lua scripts that give fencelock's lock keys their semantics. Every script runs atomically on
// one node; the engine runs each on all nodes and counts the answers.
//
// KEYS[1] is always the lock key (key prefix + name); ARGV[1] is always the lease secret.
// Scripts are SCRIPT LOADed on every new connection and invoked with EVALSHA; a NOSCRIPT answer
// (someone ran SCRIPT FLUSH) is retried once with EVAL.
#pragma once

#include <cstdint>
#include <string_view>

namespace fencelock::storage {

enum class Script : std::uint8_t { kRelease = 0, kExtend = 1, kInspect = 2 };
inline constexpr std::size_t kScriptCount = 3;

// Compare-and-delete: deletes the key only if it still holds our secret, so a release can never
// delete a newer holder's key after ours expired. Returns 1 if deleted, 0 otherwise. Idempotent.
inline constexpr std::string_view kReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('DEL', KEYS[1])\n"
    "end\n"
    "return 0\n";

// Compare-and-PEXPIRE: resets the ttl (ARGV[2], ms) only if the key still holds our secret.
// PEXPIRE never creates a key, so a lease that vanished on a node is not resurrected there.
// Returns 1 if extended, 0 otherwise.
inline constexpr std::string_view kExtendScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "return 0\n";

// Inspect: the holder's value and remaining ttl, {value or nil, pttl}. The engine compares values
// across nodes to find a quorum holder and never returns the value to anyone.
inline constexpr std::string_view kInspectScript =
    "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}\n";

// SHA-1 of each script, as EVALSHA wants it. The connection handshake checks each against the
// SCRIPT LOAD reply, so a script edited without updating its digest fails loudly at connect.
inline constexpr std::string_view kReleaseScriptSha = "c89cee65b7ab260d98c281f3c3eb6fa7c992cdd2";
inline constexpr std::string_view kExtendScriptSha = "3a32323a05c08607e6bc7842cfeea9552d0b61f5";
inline constexpr std::string_view kInspectScriptSha = "2170fc65895d14f2eac3a77defa9568bea1a34a5";

constexpr std::string_view script_sha(Script script) {
  switch (script) {
    case Script::kRelease: return kReleaseScriptSha;
    case Script::kExtend: return kExtendScriptSha;
    case Script::kInspect: return kInspectScriptSha;
  }
  return {};
}

constexpr std::string_view script_source(Script script) {
  switch (script) {
    case Script::kRelease: return kReleaseScript;
    case Script::kExtend: return kExtendScript;
    case Script::kInspect: return kInspectScript;
  }
  return {};
}

}  // namespace fencelock::storage
