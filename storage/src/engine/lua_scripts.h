// The Lua scripts that give fencelock's lock keys their semantics. Every script runs atomically on
// one node; the engine runs each on all nodes and counts the answers.
//
// KEYS[1] is always the lock key (key prefix + name). A lock key's value is the lease value (48 hex
// digits: lease id, then secret; lease_secret.h), or "<value>#<mark>" once a waiting acquire was
// refused by it: the mark is the id of the one engine whose waiters were refused, or "*" for
// several. Values are hex, so '#' separates unambiguously; every script that compares a value
// accepts both forms. The mark lets a release through one fencelockd wake the waiters of another
// (PUBLISH, see EngineCore) at no cost when nobody elsewhere waits: the release reads the value
// it compares anyway.
// A holder's release and extend carry its *claim* in ARGV[1]: the proof (lease id + digest, 48 hex)
// followed by the token in decimal. They answer 1 (done), 0 (the key is absent or holds another
// lease) or -1 (this lease, but the claim's token is not the one it was granted with: the lease
// string was altered; nothing is changed).
// Scripts are SCRIPT LOADed on every new connection and invoked with EVALSHA; a NOSCRIPT answer
// (someone ran SCRIPT FLUSH) is retried once with EVAL.
#pragma once

#include <cstdint>
#include <string_view>

namespace fencelock::storage {

// Where releases are announced. One channel for every key prefix (the Lua scripts cannot know the
// prefix); listeners match the key in the message against their own prefix.
#define FENCELOCK_ANNOUNCEMENT_CHANNEL "fencelock:released"  // spelled once, for C++ and Lua
inline constexpr std::string_view kAnnouncementChannel = FENCELOCK_ANNOUNCEMENT_CHANNEL;

enum class Script : std::uint8_t {
  kRelease = 0,
  kReleaseSilently = 1,
  kExtend = 2,
  kInspect = 3,
  kAcquireAndMark = 4
};
inline constexpr std::size_t kScriptCount = 5;

// The start of every script that checks a holder's claim (see above): leaves the key's value in
// `value` and returns 0 or -1 unless the claim holds. The digest is recomputed from the value on
// the node, so only the token the lease was granted with passes. The lease id is compared only when
// the digest does not match (to tell an altered claim from another holder): the common path
// creates as few Lua strings as it can.
#define FENCELOCK_LUA_CHECK_CLAIM                                        \
  "local value = redis.call('GET', KEYS[1])\n"                           \
  "if not value then\n"                                                  \
  "  return 0\n"                                                         \
  "end\n"                                                                \
  "local held = value\n"                                                 \
  "if #value ~= 48 then\n"                                               \
  "  held = string.sub(value, 1, 48)\n"                                  \
  "end\n"                                                                \
  "local claim = ARGV[1]\n"                                              \
  "local digest = redis.sha1hex(string.sub(claim, 49) .. ':' .. held)\n" \
  "if string.sub(digest, 1, 32) ~= string.sub(claim, 17, 48) then\n"     \
  "  if string.sub(held, 1, 16) == string.sub(claim, 1, 16) then\n"      \
  "    return -1\n"                                                      \
  "  end\n"                                                              \
  "  return 0\n"                                                         \
  "end\n"

// Compare-and-delete: deletes the key only if it still holds the claimed lease (marked or not), so
// a release can never delete a newer holder's key after ours expired. Returns 1 if deleted, 0 or -1
// otherwise (see above). Idempotent. If the deleted value was marked by a waiter of an engine other
// than the releasing one, publishes "<tag> <KEYS[1]>" on kAnnouncementChannel. The tag is ARGV[2] —
// the releasing engine's id and a release number, 16 hex digits each — which the engine passes
// only when it has waiters of its own for the name (so that a mark of its own publishes nothing).
// Without ARGV[2] the tag is sixteen zeros (no engine) and the lease id: the same on every node, so
// listeners can tell copies of one release apart from the next. The uncontended release — an
// unmarked value, one argument — costs one GET, one digest and one DEL: on the engine's single
// strand and in Redis's Lua GC, every extra per-call argument measurably lowers throughput.
inline constexpr std::string_view kReleaseScript = FENCELOCK_LUA_CHECK_CLAIM
    "redis.call('DEL', KEYS[1])\n"
    "if #value == 48 then\n"
    "  return 1\n"
    "end\n"
    "local tag = ARGV[2] or ('0000000000000000' .. string.sub(claim, 1, 16))\n"
    "if string.sub(value, 50) ~= string.sub(tag, 1, 16) then\n"
    "  redis.call('PUBLISH', '" FENCELOCK_ANNOUNCEMENT_CHANNEL
    "', tag .. ' ' .. KEYS[1])\n"
    "end\n"
    "return 1\n";

// The cleanup of a failed attempt: a compare-and-delete on the lease value itself (ARGV[1], known
// only to the engine), without any announcement. It frees nothing anyone waits for, and announcing
// it would wake other engines' waiters straight into the same split vote, over and over while the
// lock is held.
inline constexpr std::string_view kReleaseSilentlyScript =
    "local value = redis.call('GET', KEYS[1])\n"
    "if value == ARGV[1] or (value and string.sub(value, 1, #ARGV[1] + 1) == ARGV[1] .. '#') then\n"
    "  return redis.call('DEL', KEYS[1])\n"
    "end\n"
    "return 0\n";

// Compare-and-lengthen: if the key still holds the claimed lease (marked or not), makes its
// remaining ttl at least ARGV[2] ms and returns 1; otherwise returns 0 or -1 (see above). It never
// shortens a ttl: an extend that fails (or is answered too late to count) may still run on a node
// later, and a shorter ttl there would end the lease behind the holder's back, before the deadline
// it was last told. So an extend to a shorter ttl leaves a longer remaining ttl in place (the
// holder is told the shorter validity, which is conservative). PEXPIRE never creates a key, so a
// lease that vanished on a node is not resurrected there. (PTTL/PEXPIRE rather than PEXPIRE GT: GT
// needs Redis 7.0.)
inline constexpr std::string_view kExtendScript = FENCELOCK_LUA_CHECK_CLAIM
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "return 1\n";

#undef FENCELOCK_LUA_CHECK_CLAIM

// The SET NX PX of an acquire that will wait if refused: on success returns 1, exactly like the
// plain SET. On refusal it marks the holder's value with ARGV[3] (this engine's id), or "*" if
// another engine's mark is there, keeping its ttl (KEEPTTL), and returns {0, holder's lease id
// (the value's first 16 characters, never a mark), the key's PTTL}: when the holder's lease ends
// here (expiry_wait.h). Refusal and mark are one atomic step, so no release can slip between the
// two unannounced; a value already marked so is not written again (no AOF entry, no fsync). The
// secret part is never changed, and never leaves the node.
inline constexpr std::string_view kAcquireAndMarkScript =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "  return 1\n"
    "end\n"
    "local value = redis.call('GET', KEYS[1])\n"
    "local at = string.find(value, '#', 1, true)\n"
    "local id = string.sub(value, 1, math.min(16, (at or #value + 1) - 1))\n"
    "local refusal = {0, id, redis.call('PTTL', KEYS[1])}\n"
    "local wanted = ARGV[3]\n"
    "if at then\n"
    "  local mark = string.sub(value, at + 1)\n"
    "  if mark == wanted or mark == '*' then\n"
    "    return refusal\n"
    "  end\n"
    "  wanted = '*'\n"
    "  value = string.sub(value, 1, at - 1)\n"
    "end\n"
    "redis.call('SET', KEYS[1], value .. '#' .. wanted, 'KEEPTTL')\n"
    "return refusal\n";

// Inspect: the holder's value and remaining ttl, {value or nil, pttl}. The engine compares values
// across nodes to find a quorum holder and never returns the value to anyone.
inline constexpr std::string_view kInspectScript =
    "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}\n";

// The node's marker (node_trust.h): a hash that every engine reads in its handshake with the node.
// One per node, shared by every key prefix ('#' never occurs in a lock name). Fields: max_ttl_ms,
// the largest --max-ttl of any engine that met the node; admitted, the run_id of the node's
// incarnation that some engine let vote (written by the engine with HSET).
inline constexpr std::string_view kNodeMarkerKey = "fencelock:#node";

// Handshake probe (EVAL, not loaded): raises max_ttl_ms to ARGV[1] (this engine's max ttl, ms) and
// returns {admitted or "", max_ttl_ms as a string}. Writes only when the maximum grows.
inline constexpr std::string_view kNodeMarkerScript =
    "local max = tonumber(redis.call('HGET', KEYS[1], 'max_ttl_ms')) or 0\n"
    "if tonumber(ARGV[1]) > max then\n"
    "  max = tonumber(ARGV[1])\n"
    "  redis.call('HSET', KEYS[1], 'max_ttl_ms', ARGV[1])\n"
    "end\n"
    "return {redis.call('HGET', KEYS[1], 'admitted') or '', tostring(max)}\n";

// Registry heartbeat (instance_registry.h; EVAL, once a second per node). KEYS[1]: the registry
// hash; ARGV[1]: this engine's id; ARGV[2]: its token identity; ARGV[3]: entry lifetime (ms);
// ARGV[4]: what the engine may do to an unbound node — "0" nothing, "1" bind it if no live entry
// of another identity is on it (a birth), "2" bind it (a repair). Writes this engine's entry
// "<expiry ms> <identity>" (the node's clock), deletes expired entries of others, binds as allowed
// (field "#tokens", kept for good; an empty value counts as unbound), raises the field "#mark" to
// ARGV[5] (the highest token this engine handed out, decimal; compared as digits, since Lua's
// numbers are doubles), and returns {the bound identity or "" if none, {"<engine id> <expiry ms>
// <identity>" of each other live entry}, the mark or "0"}. Fields starting with '#' are the
// registry's own, never entries (an engine id is hex).
inline constexpr std::string_view kRegistryHeartbeatScript =
    "local time = redis.call('TIME')\n"
    "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
    "redis.call('HSET', KEYS[1], ARGV[1], (now + tonumber(ARGV[3])) .. ' ' .. ARGV[2])\n"
    "local others = {}\n"
    "local foreign = false\n"
    "local entries = redis.call('HGETALL', KEYS[1])\n"
    "for i = 1, #entries, 2 do\n"
    "  if entries[i] ~= ARGV[1] and string.sub(entries[i], 1, 1) ~= '#' then\n"
    "    local space = string.find(entries[i + 1], ' ', 1, true)\n"
    "    if not space or tonumber(string.sub(entries[i + 1], 1, space - 1)) < now then\n"
    "      redis.call('HDEL', KEYS[1], entries[i])\n"
    "    else\n"
    "      local identity = string.sub(entries[i + 1], space + 1)\n"
    "      if identity ~= ARGV[2] then foreign = true end\n"
    "      table.insert(others, entries[i] .. ' ' .. entries[i + 1])\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local bound = redis.call('HGET', KEYS[1], '#tokens')\n"
    "if bound == '' then bound = false end\n"
    "if not bound and (ARGV[4] == '2' or (ARGV[4] == '1' and not foreign)) then\n"
    "  bound = ARGV[2]\n"
    "  redis.call('HSET', KEYS[1], '#tokens', bound)\n"
    "end\n"
    "local mark = redis.call('HGET', KEYS[1], '#mark') or '0'\n"
    "if #ARGV[5] > #mark or (#ARGV[5] == #mark and ARGV[5] > mark) then\n"
    "  mark = ARGV[5]\n"
    "  redis.call('HSET', KEYS[1], '#mark', mark)\n"
    "end\n"
    "return {bound or '', others, mark}\n";

// SHA-1 of each script, as EVALSHA wants it. The connection handshake checks each against the
// SCRIPT LOAD reply, so a script edited without updating its digest fails loudly at connect.
inline constexpr std::string_view kReleaseSilentlyScriptSha =
    "a6573291506a8c2e441cabf3c2d753eddd649307";
inline constexpr std::string_view kReleaseScriptSha = "ac0e9a2693df72e8f9864610396db3aaf6e71093";
inline constexpr std::string_view kExtendScriptSha = "cb0aa2db3c15a28ee47acf457cf1cd989a9b26f8";
inline constexpr std::string_view kInspectScriptSha = "2170fc65895d14f2eac3a77defa9568bea1a34a5";
inline constexpr std::string_view kAcquireAndMarkScriptSha =
    "6978c8e9d79a2e229214eb14610b8169f138fa7c";

constexpr std::string_view script_sha(Script script) {
  switch (script) {
    case Script::kRelease:
      return kReleaseScriptSha;
    case Script::kReleaseSilently:
      return kReleaseSilentlyScriptSha;
    case Script::kExtend:
      return kExtendScriptSha;
    case Script::kInspect:
      return kInspectScriptSha;
    case Script::kAcquireAndMark:
      return kAcquireAndMarkScriptSha;
  }
  return {};
}

constexpr std::string_view script_source(Script script) {
  switch (script) {
    case Script::kRelease:
      return kReleaseScript;
    case Script::kReleaseSilently:
      return kReleaseSilentlyScript;
    case Script::kExtend:
      return kExtendScript;
    case Script::kInspect:
      return kInspectScript;
    case Script::kAcquireAndMark:
      return kAcquireAndMarkScript;
  }
  return {};
}

}  // namespace fencelock::storage
