// The Lua scripts that give fencelock's lock keys their semantics. Every script runs atomically on
// one node; the engine runs each on all nodes and counts the answers.
//
// KEYS[1] is always the lock key (key prefix + name). A lock key's value is the lease value (48 hex
// digits: lease id, then secret; lease_secret.h) followed by the grant's token and holder
// (lease_value.h), or that with "#<mark>" once a waiting acquire was refused by it: the mark is the
// id of the one engine whose waiters were refused, or "*" for several. No '#' comes before the
// mark (lease_value.h escapes it), so the first '#' starts it; a lease is known by the value's
// first 48 characters, which is all a claim or a cleanup compares. The mark lets a release through
// one fencelockd wake the waiters of another (PUBLISH, see EngineCore) at no cost when nobody
// elsewhere waits: the release reads the value it compares anyway. A holder's release and extend
// carry its *claim* in ARGV[1]: the proof (lease id + digest, 48 hex) followed by the token in
// decimal. They answer 1 (done), 0 (the key is absent or holds another lease) or -1 (this lease,
// but the claim's token is not the one it was granted with: the lease string was altered; nothing
// is changed). Every acquire carries the fencing token its grant would answer (drawn before the
// vote) and the name's *fence key* ("<lock key>#fence"; a semaphore's: "<prefix><name>#fence"),
// which holds the highest token any acquire of that name wrote on this node and never expires. An
// acquire whose token is not above the fence writes nothing and answers {-3, ..., fence} (a token
// store behind the nodes, or a draw that lost a race: docs/architecture.md, "The fence"). Tokens
// are compared as decimal digits (Lua's numbers are doubles); an empty token (an engine without a
// token source) skips the fence. Scripts are SCRIPT LOADed on every new connection and invoked with
// EVALSHA; a NOSCRIPT answer (someone ran SCRIPT FLUSH) is retried once with EVAL.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/lua_fragments.h"
#include "engine/lua_revoke_scripts.h"
#include "engine/lua_rw_scripts.h"

namespace fencelock::storage {

// Where releases are announced. One channel for every key prefix (the Lua scripts cannot know the
// prefix); listeners match the key in the message against their own prefix.
inline constexpr std::string_view kAnnouncementChannel = FENCELOCK_ANNOUNCEMENT_CHANNEL;

enum class Script : std::uint8_t {
  kRelease = 0,
  kReleaseSilently = 1,
  kExtend = 2,
  kInspect = 3,
  kAcquireLock = 4,
  kAcquireSet = 5,
  kReleaseSet = 6,
  kExtendSet = 7,
  kAcquirePermit = 8,
  kReleasePermit = 9,
  kExtendPermit = 10,
  kInspectSemaphore = 11,
  kFenceToken = 12,
  kRevokeLock = 13,
  kAcquireLockRequest = 14,
  kAdoptLease = 15,
  kReleaseUnlessRepeated = 16,
  kAcquireRw = 17,
  kReleaseRw = 18,
  kExtendRw = 19,
  kInspectRw = 20,
  kUndoRevoke = 21,
  kSettleRevoke = 22
};
inline constexpr std::size_t kScriptCount = 23;

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
inline constexpr std::string_view kReleaseScript =
    FENCELOCK_LUA_CHECK_CLAIM "redis.call('DEL', KEYS[1])\n" FENCELOCK_LUA_ANNOUNCE_RELEASE;

// kReleaseScript, except that a value whose request field a repeat took over ('g', lease_value.h)
// is left in place (answers 0): the release of a grant whose answer never reached its client
// (LeaseClaim::unless_repeated). As with the failed attempt's cleanup, each node runs it and the
// takeover in some order, and a quorum of takeovers is a quorum this release leaves alone.
inline constexpr std::string_view kReleaseUnlessRepeatedScript = FENCELOCK_LUA_CHECK_CLAIM
    "local colon = string.find(value, ':', 50, true)\n"
    "if colon and string.sub(value, colon + 1, colon + 1) == 'g' then\n"
    "  return 0\n"
    "end\n"
    "redis.call('DEL', KEYS[1])\n" FENCELOCK_LUA_ANNOUNCE_RELEASE;

// The cleanup of a failed attempt: a compare-and-delete on the lease value itself (ARGV[1], the 48
// characters known only to the engine, whatever follows them in the key), without a release's
// announcement. It frees nothing anyone waits for, and announcing it would wake other engines'
// waiters straight into the same split vote, over and over while the lock is held. A marked value
// (a watch may have seen it held on a quorum) is announced to watches only, with the tag
// kCleanupTagEngine + its lease id, which no waiter acts on. A value whose request field a repeat
// has taken over ('g', lease_value.h) stays: the repeat answered it as a grant (kAdoptLeaseScript).
// Every key in KEYS (one for a single lock, all of a lock set's keys, a permit's slot key).
inline constexpr std::string_view kCleanupTagEngine = FENCELOCK_CLEANUP_TAG_ENGINE;
inline constexpr std::string_view kReleaseSilentlyScript =
    "local deleted = 0\n"
    "for i = 1, #KEYS do\n"
    "  local value = redis.call('GET', KEYS[i])\n"
    "  if value and string.sub(value, 1, #ARGV[1]) == ARGV[1] then\n"
    "    local colon = string.find(value, ':', 50, true)\n"
    "    if not (colon and string.sub(value, colon + 1, colon + 1) == 'g') then\n"
    "      deleted = deleted + redis.call('DEL', KEYS[i])\n"
    "      if string.find(value, '#', 49, true) then\n"
    "        redis.call('PUBLISH', '" FENCELOCK_ANNOUNCEMENT_CHANNEL
    "', '" FENCELOCK_CLEANUP_TAG_ENGINE
    "' .. string.sub(value, 1, 16) .. ' ' .. KEYS[i])\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return deleted\n";

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

// ---- Lock sets (KEYS = the set's keys, in the canonical order of its names) ----
// A lock set writes one lease value on every key of the set. Its claim is as a single lease's, with
// the token text "<t1>,<t2>,...[@owner]" (lease_secret.h).

// All or nothing on this node. KEYS: the set's n keys, then their n fence keys; ARGV[1]: the lease
// value, ARGV[2]: ttl (ms), ARGV[3]: this engine's id, or "" for an attempt that will not wait
// (no mark), ARGV[3 + i]: the token of the i-th name, ARGV[4 + n]: the value's tail
// (lease_value.h). If no key of the set exists and every token is above its fence, SETs every key i
// to
// "<ARGV[1]>:<ARGV[3 + i]><ARGV[4 + n]>" PX ARGV[2], raises every fence and returns 1. If a
// key is held, writes nothing but marks (ARGV[3]) every held key as kAcquireLockScript does, and
// returns {0, holder id, pttl, held} — holder id and pttl of the held key that frees last (the set
// can be granted here only once all are free), `held` the 1-based indices of the held keys (a
// waiter woken by a release of one of its names hands the wake-up on if that name stayed free).
// If all are free but a token is not above its fence: {-3, i, fence}, nothing written.
inline constexpr std::string_view kAcquireSetScript = FENCELOCK_LUA_MARK
    "local n = #KEYS / 2\n"
    "for i = 1, n do\n"
    "  if redis.call('EXISTS', KEYS[i]) == 1 then\n"
    "    local id, last, held = '', -2, {}\n"
    "    for j = i, n do\n"
    "      local value = redis.call('GET', KEYS[j])\n"
    "      if value then\n"
    "        held[#held + 1] = j\n"
    "        local pttl = redis.call('PTTL', KEYS[j])\n"
    "        if pttl > last then\n"
    "          last = pttl\n"
    "          id = holder(value)\n"
    "        end\n"
    "        if ARGV[3] ~= '' then\n"
    "          mark(KEYS[j], value, ARGV[3])\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "    return {0, id, last, held}\n"
    "  end\n"
    "end\n"
    "for i = 1, n do\n"
    "  local fence = redis.call('GET', KEYS[n + i])\n"
    "  local token = ARGV[3 + i]\n"
    "  if not " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "    return {-3, i, fence}\n"
    "  end\n"
    "end\n"
    "for i = 1, n do\n"
    "  local value = ARGV[1] .. ':' .. ARGV[3 + i] .. ARGV[4 + n]\n"
    "  redis.call('SET', KEYS[i], value, 'PX', ARGV[2])\n"
    "  if ARGV[3 + i] ~= '' then\n"
    "    redis.call('SET', KEYS[n + i], ARGV[3 + i])\n"
    "  end\n"
    "end\n"
    "return 1\n";

// The start of the set's release and extend: finds which keys hold the claimed lease (ARGV[1], as
// in FENCELOCK_LUA_CHECK_CLAIM). Leaves `values` (key index → value, marked or not) and `all`
// (every key holds it). Returns -1 — before changing anything — when the lease is there but the
// claim's token list is not the one it was granted with (the digest is checked once: every key of
// the set holds the same value).
#define FENCELOCK_LUA_CHECK_SET_CLAIM                                           \
  "local claim = ARGV[1]\n"                                                     \
  "local id = string.sub(claim, 1, 16)\n"                                       \
  "local held = nil\n"                                                          \
  "local values = {}\n"                                                         \
  "local all = true\n"                                                          \
  "for i = 1, #KEYS do\n"                                                       \
  "  local value = redis.call('GET', KEYS[i])\n"                                \
  "  if value and string.sub(value, 1, 16) == id then\n"                        \
  "    local lease = string.sub(value, 1, 48)\n"                                \
  "    if not held then\n"                                                      \
  "      local digest = redis.sha1hex(string.sub(claim, 49) .. ':' .. lease)\n" \
  "      if string.sub(digest, 1, 32) ~= string.sub(claim, 17, 48) then\n"      \
  "        return -1\n"                                                         \
  "      end\n"                                                                 \
  "      held = lease\n"                                                        \
  "    end\n"                                                                   \
  "    if lease == held then\n"                                                 \
  "      values[i] = value\n"                                                   \
  "    else\n"                                                                  \
  "      all = false\n"                                                         \
  "    end\n"                                                                   \
  "  else\n"                                                                    \
  "    all = false\n"                                                           \
  "  end\n"                                                                     \
  "end\n"

// Compare-and-delete of every key of the set that still holds the claim; announces each marked one
// as kReleaseScript does (ARGV[2]: the optional release tag). Returns 1 iff this node held the
// whole set (it then votes yes), 0 otherwise, -1 as FENCELOCK_LUA_CHECK_SET_CLAIM.
inline constexpr std::string_view kReleaseSetScript = FENCELOCK_LUA_CHECK_SET_CLAIM
    "local tag = ARGV[2] or ('0000000000000000' .. id)\n"
    "for i, value in pairs(values) do\n"
    "  redis.call('DEL', KEYS[i])\n"
    "  local at = string.find(value, '#', 49, true)\n"
    "  if at and string.sub(value, at + 1) ~= string.sub(tag, 1, 16) then\n"
    "    redis.call('PUBLISH', '" FENCELOCK_ANNOUNCEMENT_CHANNEL
    "', tag .. ' ' .. KEYS[i])\n"
    "  end\n"
    "end\n"
    "if all then\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

// Compare-and-lengthen of the whole set: only if every key holds the claim, makes each key's
// remaining ttl at least ARGV[2] ms (never shorter, as kExtendScript) and returns 1; otherwise
// changes nothing and returns 0 (or -1).
inline constexpr std::string_view kExtendSetScript = FENCELOCK_LUA_CHECK_SET_CLAIM
    "if not all then\n"
    "  return 0\n"
    "end\n"
    "for i = 1, #KEYS do\n"
    "  if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[2]) then\n"
    "    redis.call('PEXPIRE', KEYS[i], ARGV[2])\n"
    "  end\n"
    "end\n"
    "return 1\n";

#undef FENCELOCK_LUA_CHECK_SET_CLAIM

// ---- Counting semaphores ----
// Semaphore X with N permits: slot keys "<prefix>X#permit:<i>" (i < N), each a lock key (a permit
// is a lease on one slot), and the config key "<prefix>X#permits" holding N, with a ttl at least
// the longest live permit's. Scripts derive a slot key from the config key: drop the final 's', add
// ":<i>" — so they can look at the slots of a count other than the caller's.

// A permit attempt. KEYS[1]: the config key, KEYS[2..N+1]: the slot keys, KEYS[N+2]: the
// semaphore's fence key; ARGV[1]: the lease value, ARGV[2]: ttl (ms), ARGV[3]: this engine's id, or
// "" (no mark), ARGV[4]: the slot tried (0-based), ARGV[5]: the token. ARGV[1] is the whole value
// written (lease_value.h), as for a single lock.
// Returns {-2, "<live N>"} if the config key holds another N and some slot of that N is live
// (nothing written); 1 if the slot was free and the token above the fence: the slot is SET like a
// single lock, the fence raised and the config key set to N with a ttl at least ARGV[2];
// {-3, fence} if the slot is free but the token is not above the fence (nothing written);
// otherwise {0, holder id, pttl, {free slots}, slot}: the slots free on this node, and the held
// slot that frees first here, its holder and remaining ttl. A refusal marks every held slot for
// this engine's waiters (as kAcquireLockScript), so a release of any slot through another engine
// is announced.
inline constexpr std::string_view kAcquirePermitScript = FENCELOCK_LUA_MARK
    "local permits = tostring(#KEYS - 2)\n"
    "local live = redis.call('GET', KEYS[1])\n"
    "if live and live ~= permits then\n"
    "  local base = string.sub(KEYS[1], 1, -2) .. ':'\n"
    "  for i = 0, (tonumber(live) or 0) - 1 do\n"
    "    if redis.call('EXISTS', base .. i) == 1 then\n"
    "      return {-2, live}\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local slot = KEYS[tonumber(ARGV[4]) + 2]\n"
    "local fence = redis.call('GET', KEYS[#KEYS])\n"
    "local token = ARGV[5]\n"
    "if " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "  if redis.call('SET', slot, ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "    if live ~= permits or redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "      redis.call('SET', KEYS[1], permits, 'PX', ARGV[2])\n"
    "    end\n"
    "    if token ~= '' then\n"
    "      redis.call('SET', KEYS[#KEYS], token)\n"
    "    end\n"
    "    return 1\n"
    "  end\n"
    "elseif redis.call('EXISTS', slot) == 0 then\n"
    "  return {-3, fence}\n"
    "end\n"
    "local free = {}\n"
    "local soonest_slot, id, soonest = -1, '', -1\n"
    "for i = 2, #KEYS - 1 do\n"
    "  local value = redis.call('GET', KEYS[i])\n"
    "  if not value then\n"
    "    table.insert(free, i - 2)\n"
    "  else\n"
    "    local pttl = redis.call('PTTL', KEYS[i])\n"
    "    if soonest_slot < 0 or (pttl >= 0 and pttl < soonest) then\n"
    "      soonest_slot, id, soonest = i - 2, holder(value), pttl\n"
    "    end\n"
    "    if ARGV[3] ~= '' then\n"
    "      mark(KEYS[i], value, ARGV[3])\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return {0, id, soonest, free, soonest_slot}\n";

// A permit's release: KEYS[1] its slot key, KEYS[2] the config key; ARGV as kReleaseScript. The
// compare-and-delete and announcement of kReleaseScript; and once no slot of the semaphore is live
// here any more, the config key is deleted too, so the semaphore can be re-created with another
// count at once.
inline constexpr std::string_view kReleasePermitScript = FENCELOCK_LUA_CHECK_CLAIM
    "redis.call('DEL', KEYS[1])\n"
    "local live = redis.call('GET', KEYS[2])\n"
    "if live then\n"
    "  local base = string.sub(KEYS[2], 1, -2) .. ':'\n"
    "  local any = false\n"
    "  for i = 0, (tonumber(live) or 0) - 1 do\n"
    "    if redis.call('EXISTS', base .. i) == 1 then\n"
    "      any = true\n"
    "      break\n"
    "    end\n"
    "  end\n"
    "  if not any then\n"
    "    redis.call('DEL', KEYS[2])\n"
    "  end\n"
    "end\n" FENCELOCK_LUA_ANNOUNCE_RELEASE;

// A permit's extend: KEYS[1] its slot key, KEYS[2] the config key; ARGV[1] the claim, ARGV[2] the
// ttl (ms), ARGV[3] the permit count (bound to the claim: permit_claim_text). As kExtendScript on
// the slot; then the config key's remaining ttl is raised to at least the slot's (never shortened),
// or the config key re-created with the slot's ttl if it expired — but one holding another count
// (live with it) is left alone: the permit's count can never change a semaphore's.
inline constexpr std::string_view kExtendPermitScript = FENCELOCK_LUA_CHECK_CLAIM
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "local pttl = redis.call('PTTL', KEYS[1])\n"
    "local live = redis.call('GET', KEYS[2])\n"
    "if not live then\n"
    "  redis.call('SET', KEYS[2], ARGV[3], 'PX', pttl)\n"
    "elseif live == ARGV[3] and redis.call('PTTL', KEYS[2]) < pttl then\n"
    "  redis.call('PEXPIRE', KEYS[2], pttl)\n"
    "end\n"
    "return 1\n";

// A semaphore's state here: KEYS[1] the config key. Returns {N or "", {"<slot>:<holder id>" of
// every live slot}}; never a value's secret.
inline constexpr std::string_view kInspectSemaphoreScript =
    "local live = redis.call('GET', KEYS[1])\n"
    "if not live then\n"
    "  return {'', {}}\n"
    "end\n"
    "local base = string.sub(KEYS[1], 1, -2) .. ':'\n"
    "local held = {}\n"
    "for i = 0, (tonumber(live) or 0) - 1 do\n"
    "  local value = redis.call('GET', base .. i)\n"
    "  if value then\n"
    "    table.insert(held, i .. ':' .. string.sub(value, 1, 16))\n"
    "  end\n"
    "end\n"
    "return {live, held}\n";

// A single lock's acquire. KEYS[1]: the lock key, KEYS[2]: its fence key; ARGV[1]: the value to
// write (lease value, token and holder: lease_value.h), ARGV[2]: ttl (ms), ARGV[3]: this engine's
// id for an attempt that will wait if refused, or
// "" (no mark), ARGV[4]: the token. If the key is free and the token above the fence: SET NX PX,
// the fence raised, returns 1. If the key is free but the token is not above the fence: {-3,
// fence}, nothing written. If the key is held: unless ARGV[3] is "", marks the holder's value with
// ARGV[3], or "*" if another engine's mark is there, keeping its ttl (KEEPTTL); returns {0,
// holder's lease id (the value's first 16 characters, never a mark), the key's PTTL}: when the
// holder's lease ends here (expiry_wait.h). Refusal and mark are one atomic step, so no release
// can slip between the two unannounced; a value already marked so is not written again (no AOF
// entry, no fsync). The secret part is never changed, and leaves the node only to a repeat of the
// request that wrote it (kAcquireLockRequestScript).
#define FENCELOCK_LUA_ACQUIRE_LOCK_HEAD \
  "local fence = redis.call('GET', KEYS[2])\n" \
    "local token = ARGV[4]\n" \
    "if " FENCELOCK_LUA_ABOVE("token", "fence") " then\n" \
    "  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n" \
    "    if token ~= '' then\n" \
    "      redis.call('SET', KEYS[2], token)\n" \
    "    end\n" \
    "    return 1\n" \
    "  end\n" \
    "end\n" \
    "local value = redis.call('GET', KEYS[1])\n" \
    "if not value then\n" \
    "  return {-3, fence}\n" \
    "end\n"
#define FENCELOCK_LUA_ACQUIRE_LOCK_REFUSE                                   \
  "local at = string.find(value, '#', 1, true)\n"                           \
  "local id = string.sub(value, 1, math.min(16, (at or #value + 1) - 1))\n" \
  "local refusal = {0, id, redis.call('PTTL', KEYS[1])}\n"                  \
  "local wanted = ARGV[3]\n"                                                \
  "if wanted == '' then\n"                                                  \
  "  return refusal\n"                                                      \
  "end\n"                                                                   \
  "if at then\n"                                                            \
  "  local mark = string.sub(value, at + 1)\n"                              \
  "  if mark == wanted or mark == '*' then\n"                               \
  "    return refusal\n"                                                    \
  "  end\n"                                                                 \
  "  wanted = '*'\n"                                                        \
  "  value = string.sub(value, 1, at - 1)\n"                                \
  "end\n"                                                                   \
  "redis.call('SET', KEYS[1], value .. '#' .. wanted, 'KEEPTTL')\n"         \
  "return refusal\n"
inline constexpr std::string_view kAcquireLockScript =
    FENCELOCK_LUA_ACQUIRE_LOCK_HEAD FENCELOCK_LUA_ACQUIRE_LOCK_REFUSE;

// A single lock's acquire that names a request (AcquireRequest::request_id): kAcquireLockScript
// with ARGV[1]'s request field "p<ARGV[5]>" (lease_value.h), except that a held value whose request
// field is "p<ARGV[5]>" or "g<ARGV[5]>" — this request's own earlier grant — is answered
// {2, "<lease value>:<token>", PTTL}, nothing written or marked. The lease value leaves the node
// only here, to an engine that proved the request (the digest of owner, name and request id).
// ARGV[6] "1" makes it a probe, for a waiting acquire that others wait ahead of: it never writes
// the key (a free key answers {-4}), it only finds an earlier grant or refuses and marks.
inline constexpr std::string_view kAcquireLockRequestScript =
    "local fence = redis.call('GET', KEYS[2])\n"
    "local token = ARGV[4]\n"
    "local probe = ARGV[6] == '1'\n"
    "if not probe and " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "    if token ~= '' then\n"
    "      redis.call('SET', KEYS[2], token)\n"
    "    end\n"
    "    return 1\n"
    "  end\n"
    "end\n"
    "local value = redis.call('GET', KEYS[1])\n"
    "if not value then\n"
    "  if probe then\n"
    "    return {-4}\n"
    "  end\n"
    "  return {-3, fence}\n"
    "end\n"
    "local request = ARGV[5]\n"
    "local colon = string.find(value, ':', 50, true)\n"
    "if colon and string.sub(value, 49, 49) == ':' then\n"
    "  local field = string.sub(value, colon + 1, colon + 2 + #request)\n"
    "  if field == 'p' .. request .. ':' or field == 'g' .. request .. ':' then\n"
    "    return {2, string.sub(value, 1, colon - 1), redis.call('PTTL', KEYS[1])}\n"
    "  end\n"
    "end\n" FENCELOCK_LUA_ACQUIRE_LOCK_REFUSE;

// A repeat takes over its request's earlier grant (AcquireOperation): KEYS[1] the lock key, ARGV[1]
// "<lease value>:<token>:" as kAcquireLockRequestScript answered it, ARGV[2] the request digest. If
// the key holds that value with request field "p<ARGV[2]>" or "g<ARGV[2]>", makes the field 'g'
// (KEEPTTL, mark kept) — so the cleanup of the attempt that wrote it no longer deletes it — and
// returns the key's PTTL; otherwise -1, nothing written.
inline constexpr std::string_view kAdoptLeaseScript =
    "local value = redis.call('GET', KEYS[1])\n"
    "if not value or string.sub(value, 1, #ARGV[1]) ~= ARGV[1] then\n"
    "  return -1\n"
    "end\n"
    "local at = #ARGV[1] + 1\n"
    "local field = string.sub(value, at, at + 1 + #ARGV[2])\n"
    "if field == 'p' .. ARGV[2] .. ':' then\n"
    "  redis.call('SET', KEYS[1], string.sub(value, 1, at - 1) .. 'g' .. string.sub(value, at + "
    "1),\n"
    "             'KEEPTTL')\n"
    "elseif field ~= 'g' .. ARGV[2] .. ':' then\n"
    "  return -1\n"
    "end\n"
    "return redis.call('PTTL', KEYS[1])\n";
// A token drawn without a lock (POST /v1/tokens; token_draw_operation.h): KEYS[1] the name's fence
// key, ARGV[1] the token. If the token is above the fence, raises the fence to it and returns 1;
// otherwise {-3, fence}, nothing written — as the acquire scripts fence a grant's token.
inline constexpr std::string_view kFenceTokenScript =
    "local fence = redis.call('GET', KEYS[1])\n"
    "local token = ARGV[1]\n"
    "if token ~= '' and " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "  redis.call('SET', KEYS[1], token)\n"
    "  return 1\n"
    "end\n"
    "return {-3, fence}\n";

// A fence repair's batch (fence_repair.h; EVAL, not loaded): raises each fence key KEYS[i] to at
// least ARGV[i] (a decimal token), never lowers one. Returns how many it raised.
inline constexpr std::string_view kRaiseFencesScript =
    "local raised = 0\n"
    "for i = 1, #KEYS do\n"
    "  local fence = redis.call('GET', KEYS[i])\n"
    "  local token = ARGV[i]\n"
    "  if token ~= '' and " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "    redis.call('SET', KEYS[i], token)\n"
    "    raised = raised + 1\n"
    "  end\n"
    "end\n"
    "return raised\n";

// Inspect: each key's value and remaining ttl, {value or nil, pttl, value or nil, pttl, ...} in
// the order of KEYS; a key that holds no string (someone else's) reads as nil. The engine
// compares values across nodes to find a quorum holder and never returns a value to anyone. With
// ARGV[1] (an engine id: a watch, lock_watches.h), also marks each held value for that engine as
// a waiting acquire does, so that its release is announced.
inline constexpr std::string_view kInspectScript = FENCELOCK_LUA_MARK
    "local out = {}\n"
    "for i = 1, #KEYS do\n"
    "  local value = redis.pcall('GET', KEYS[i])\n"
    "  if type(value) == 'table' then\n"
    "    value = false\n"
    "  elseif value and ARGV[1] then\n"
    "    mark(KEYS[i], value, ARGV[1])\n"
    "  end\n"
    "  out[2 * i - 1] = value\n"
    "  out[2 * i] = redis.call('PTTL', KEYS[i])\n"
    "end\n"
    "return out\n";

// SHA-1 of each script, as EVALSHA wants it. The connection handshake checks each against the
// SCRIPT LOAD reply, so a script edited without updating its digest fails loudly at connect.
inline constexpr std::string_view kReleaseSilentlyScriptSha =
    "9eaa1b64e1dcb704373a516bf9874eef7a4d89a1";
inline constexpr std::string_view kReleaseScriptSha = "f4240a8e9d9655c93c4dbeb16285bac47a9609ad";
inline constexpr std::string_view kExtendScriptSha = "cb0aa2db3c15a28ee47acf457cf1cd989a9b26f8";
inline constexpr std::string_view kInspectScriptSha = "8936d2319bda198007cc9154c320b880f04485bf";
inline constexpr std::string_view kAcquireLockScriptSha =
    "77be07fecce537f2626491367fb3316bc034272f";
inline constexpr std::string_view kAcquireSetScriptSha = "c27b0d8d869d694f4869b21b05ba2713993762e5";
inline constexpr std::string_view kReleaseSetScriptSha = "95710129550c49afac06df34d6f07e2664c98ccd";
inline constexpr std::string_view kExtendSetScriptSha = "291c298b18576dfcc32adcdb9e08cc703d075bb8";
inline constexpr std::string_view kAcquirePermitScriptSha =
    "e690df3dde80e200917820445220a50931f3ecb4";
inline constexpr std::string_view kReleasePermitScriptSha =
    "54d824f2bb7f381acb748bfd0bf31d9fdc822c13";
inline constexpr std::string_view kExtendPermitScriptSha =
    "8096a14c74c9f20df6b81648c107a44e3efca7b9";
inline constexpr std::string_view kFenceTokenScriptSha = "e6b19d863e8e7382bf41fdc97e142f56b40ee34f";
inline constexpr std::string_view kInspectSemaphoreScriptSha =
    "85c89408bc266f575cff7854d6f80daaab8a2199";
inline constexpr std::string_view kAcquireLockRequestScriptSha =
    "8ac4677a83039c23aa2bcbcf343ac7105ace5da6";
inline constexpr std::string_view kReleaseUnlessRepeatedScriptSha =
    "467e8254d48ffa8ccbd8980f3873b3495f7d5e03";
inline constexpr std::string_view kAdoptLeaseScriptSha = "00a96c8071c174d6678aff3d081b14725bba6163";

// Every script and its digest, one row per Script in the enum's order.
struct ScriptText {
  std::string_view source;
  std::string_view sha;
};
inline constexpr std::array<ScriptText, kScriptCount> kScriptTexts{{
    {kReleaseScript, kReleaseScriptSha},
    {kReleaseSilentlyScript, kReleaseSilentlyScriptSha},
    {kExtendScript, kExtendScriptSha},
    {kInspectScript, kInspectScriptSha},
    {kAcquireLockScript, kAcquireLockScriptSha},
    {kAcquireSetScript, kAcquireSetScriptSha},
    {kReleaseSetScript, kReleaseSetScriptSha},
    {kExtendSetScript, kExtendSetScriptSha},
    {kAcquirePermitScript, kAcquirePermitScriptSha},
    {kReleasePermitScript, kReleasePermitScriptSha},
    {kExtendPermitScript, kExtendPermitScriptSha},
    {kInspectSemaphoreScript, kInspectSemaphoreScriptSha},
    {kFenceTokenScript, kFenceTokenScriptSha},
    {kRevokeLockScript, kRevokeLockScriptSha},
    {kAcquireLockRequestScript, kAcquireLockRequestScriptSha},
    {kAdoptLeaseScript, kAdoptLeaseScriptSha},
    {kReleaseUnlessRepeatedScript, kReleaseUnlessRepeatedScriptSha},
    {kAcquireRwScript, kAcquireRwScriptSha},
    {kReleaseRwScript, kReleaseRwScriptSha},
    {kExtendRwScript, kExtendRwScriptSha},
    {kInspectRwScript, kInspectRwScriptSha},
    {kUndoRevokeScript, kUndoRevokeScriptSha},
    {kSettleRevokeScript, kSettleRevokeScriptSha},
}};

constexpr std::string_view script_sha(Script script) {
  return kScriptTexts[static_cast<std::size_t>(script)].sha;
}
constexpr std::string_view script_source(Script script) {
  return kScriptTexts[static_cast<std::size_t>(script)].source;
}

}  // namespace fencelock::storage
