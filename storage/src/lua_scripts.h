// The Lua scripts that give fencelock's lock keys their semantics. Every script runs atomically on
// one node; the engine runs each on all nodes and counts the answers.
//
// KEYS[1] is always the lock key (key prefix + name). Acquire-and-mark and release also take
// KEYS[2], the name's waiting marker (lock key + "#waiting"): "someone waits for this name", with
// the id of the one engine whose waiters set it, or "*" when waiters of several engines did. It
// lets a release through one fencelockd wake the waiters of another (PUBLISH, see EngineCore)
// without publishing anything when nobody elsewhere waits.
// Scripts are SCRIPT LOADed on every new connection and invoked with EVALSHA; a NOSCRIPT answer
// (someone ran SCRIPT FLUSH) is retried once with EVAL.
#pragma once

#include <cstdint>
#include <string_view>

namespace fencelock::storage {

enum class Script : std::uint8_t { kRelease = 0, kExtend = 1, kInspect = 2, kAcquireAndMark = 3 };
inline constexpr std::size_t kScriptCount = 4;

// Compare-and-delete: deletes the key only if it still holds our secret, so a release can never
// delete a newer holder's key after ours expired. Returns 1 if deleted, 0 otherwise. Idempotent.
// After a delete, if ARGV[3] (a channel) is not empty and the waiting marker (KEYS[2]) names
// another engine (or "*"), publishes ARGV[4] on that channel; ARGV[2] is the releasing engine's
// id. A failed attempt's cleanup passes an empty channel: it frees nothing anyone waits for, and
// announcing it would wake waiters into the same split vote. Never publishes the secret.
inline constexpr std::string_view kReleaseScript =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
    "  return 0\n"
    "end\n"
    "redis.call('DEL', KEYS[1])\n"
    "if ARGV[3] ~= '' then\n"
    "  local marker = redis.call('GET', KEYS[2])\n"
    "  if marker and marker ~= ARGV[2] then\n"
    "    redis.call('PUBLISH', ARGV[3], ARGV[4])\n"
    "  end\n"
    "end\n"
    "return 1\n";

// The SET NX PX of an acquire that will wait if refused: on success returns 1, exactly like the
// plain SET. On refusal it also keeps the waiting marker KEYS[2] — ARGV[3] (this engine's id), or
// "*" if another engine's id is there — alive for ARGV[4] ms, and returns 0. Marking in the same
// atomic step as the refusal means no release can slip between the two unannounced. The marker is
// rewritten only when its value changes or half its ttl has passed, so most refusals write
// nothing (no AOF entry, no fsync).
inline constexpr std::string_view kAcquireAndMarkScript =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "  return 1\n"
    "end\n"
    "local marker = redis.call('GET', KEYS[2])\n"
    "local wanted = ARGV[3]\n"
    "if marker and marker ~= ARGV[3] then\n"
    "  wanted = '*'\n"
    "end\n"
    "if marker ~= wanted or redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) / 2 then\n"
    "  redis.call('SET', KEYS[2], wanted, 'PX', ARGV[4])\n"
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
inline constexpr std::string_view kReleaseScriptSha = "feb634ac4c38f4add919bd8642689fe247c6b4ad";
inline constexpr std::string_view kExtendScriptSha = "3a32323a05c08607e6bc7842cfeea9552d0b61f5";
inline constexpr std::string_view kInspectScriptSha = "2170fc65895d14f2eac3a77defa9568bea1a34a5";
inline constexpr std::string_view kAcquireAndMarkScriptSha = "9d781d46c5109e17a092acc6dcabc236f281f588";

constexpr std::string_view script_sha(Script script) {
  switch (script) {
    case Script::kRelease: return kReleaseScriptSha;
    case Script::kExtend: return kExtendScriptSha;
    case Script::kInspect: return kInspectScriptSha;
    case Script::kAcquireAndMark: return kAcquireAndMarkScriptSha;
  }
  return {};
}

constexpr std::string_view script_source(Script script) {
  switch (script) {
    case Script::kRelease: return kReleaseScript;
    case Script::kExtend: return kExtendScript;
    case Script::kInspect: return kInspectScript;
    case Script::kAcquireAndMark: return kAcquireAndMarkScript;
  }
  return {};
}

}  // namespace fencelock::storage
