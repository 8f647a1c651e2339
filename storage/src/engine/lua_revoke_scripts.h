// The Lua scripts of a revoke (LockEngine::revoke): its attempt, the cleanup that undoes a failed
// one, and the settling of a granted one. A revoke overwrites whatever lease holds the lock key;
// should the revoke fail, the lease it overwrote must come back as it was — an acquire may be
// counting that lease's votes (docs/architecture.md, "Revoke"). So the attempt saves the value it
// overwrote in its *saved key* "<lock key>#revoked:<lease id>:<token>" (one per attempt: a fenced
// revoke tries again with the same lease and a new token), with that value's remaining ttl and a
// state letter ('u': the attempt's outcome is open; 'x': its cleanup ran and found its value
// overwritten by a later revoke); and the revoker's value lives at least as long as the value it
// overwrote, so the key is never free before that lease would have ended.
#pragma once

#include <string_view>

#include "engine/lua_fragments.h"

namespace fencelock::storage {

// The attempt. KEYS[1]: the lock key, KEYS[2]: its fence key, KEYS[3]: this revoke's saved key;
// ARGV as kAcquireLockScript's (ARGV[3] is ignored: a revoke never waits). If the token is above
// the fence: saves the key's value (if it has a ttl) in KEYS[3] as 'u' .. value PX its ttl, SETs
// the key to ARGV[1] PX max(ARGV[2], that ttl) — keeping the overwritten value's mark, so its
// waiters' engines still hear of the revoker's release — raises the fence and returns 1; a marked
// value's revoke is announced as a release (tag: zeros and the new lease id). Otherwise
// {-3, fence}, nothing written. Never without a token: only the fence keeps the revoked holder's
// writes out.
inline constexpr std::string_view kRevokeLockScript =
    "local fence = redis.call('GET', KEYS[2])\n"
    "local token = ARGV[4]\n"
    "if token ~= '' and " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "  local value = ARGV[1]\n"
    "  local ttl = tonumber(ARGV[2])\n"
    "  local old = redis.call('GET', KEYS[1])\n"
    "  local at = old and string.find(old, '#', 49, true)\n"
    "  if old then\n"
    "    local left = redis.call('PTTL', KEYS[1])\n"
    "    if left > 0 then\n"
    "      redis.call('SET', KEYS[3], 'u' .. old, 'PX', left)\n"
    "      ttl = math.max(ttl, left)\n"
    "    end\n"
    "  end\n"
    "  redis.call('SET', KEYS[1], value .. (at and string.sub(old, at) or ''), 'PX', ttl)\n"
    "  redis.call('SET', KEYS[2], token)\n"
    "  if at then\n"
    "    redis.call('PUBLISH', '" FENCELOCK_ANNOUNCEMENT_CHANNEL "',\n"
    "               '0000000000000000' .. string.sub(value, 1, 16) .. ' ' .. KEYS[1])\n"
    "  end\n"
    "  return 1\n"
    "end\n"
    "return {-3, fence}\n";

// The cleanup of a failed revoke. KEYS[1]: the lock key, KEYS[2]: the revoke's saved key; ARGV[1]:
// the revoke's lease value (48 characters). If the key holds that lease, puts back the value the
// revoke overwrote, for the ttl it had left, with the marks the key has now (a revoke carries the
// old marks over, waiters since may have added theirs) — or, when that value is a failed revoke's
// (its saved key flagged 'x'), what that one overwrote, and so on to the end of the chain — and
// deletes the key when nothing is saved or its time is up; either way announced to watches as a
// failed attempt's cleanup is (kReleaseSilentlyScript), and returns 1. Deletes the saved keys it
// walked. If the key holds another value (a later revoke's, or none), changes nothing there: flags
// the saved key 'x' — or, with nothing saved, writes one that is just 'x', for as long as the
// covering value lives — and returns 0. The walk reads saved keys it derives from values (not in
// KEYS): fencelock's nodes are single Redis servers, never a Redis Cluster. It ends: each step
// deletes the saved key it read.
inline constexpr std::string_view kUndoRevokeScript =
    "local value = redis.call('GET', KEYS[1])\n"
    "if not value or string.sub(value, 1, #ARGV[1]) ~= ARGV[1] then\n"
    "  local saved = redis.call('GET', KEYS[2])\n"
    "  if saved then\n"
    "    if string.sub(saved, 1, 1) == 'u' then\n"
    "      redis.call('SET', KEYS[2], 'x' .. string.sub(saved, 2), 'KEEPTTL')\n"
    "    end\n"
    "  elseif value then\n"
    "    local left = redis.call('PTTL', KEYS[1])\n"
    "    if left > 0 then\n"
    "      redis.call('SET', KEYS[2], 'x', 'PX', left)\n"
    "    end\n"
    "  end\n"
    "  return 0\n"
    "end\n"
    "local at = string.find(value, '#', 49, true)\n"
    "local mark = at and string.sub(value, at) or ''\n"
    "if at then\n"
    "  redis.call('PUBLISH', '" FENCELOCK_ANNOUNCEMENT_CHANNEL "', '" FENCELOCK_CLEANUP_TAG_ENGINE
    "' .. string.sub(value, 1, 16) .. ' ' .. KEYS[1])\n"
    "end\n"
    "local side = KEYS[2]\n"
    "while true do\n"
    "  local saved = redis.call('GET', side)\n"
    "  local left = redis.call('PTTL', side)\n"
    "  redis.call('DEL', side)\n"
    "  if not saved or left <= 0 or #saved < 2 then\n"
    "    break\n"
    "  end\n"
    "  local prior = string.sub(saved, 2)\n"
    "  side = KEYS[1] .. '#revoked:' .. string.sub(prior, 1, 16) .. ':' ..\n"
    "         (string.match(prior, '^%d*', 50) or '')\n"
    "  local next = redis.call('GET', side)\n"
    "  if not (next and string.sub(next, 1, 1) == 'x') then\n"
    "    local p = string.find(prior, '#', 49, true)\n"
    "    if p then\n"
    "      prior = string.sub(prior, 1, p - 1)\n"
    "    end\n"
    "    redis.call('SET', KEYS[1], prior .. mark, 'PX', left)\n"
    "    return 1\n"
    "  end\n"
    "end\n"
    "redis.call('DEL', KEYS[1])\n"
    "return 1\n";

// The settling of a granted revoke. KEYS[1]: the lock key, KEYS[2]: the revoke's saved key;
// ARGV[1]: the revoke's lease value (48 characters), ARGV[2]: ms. If the key holds that lease with
// more than ARGV[2] ms left, makes it ARGV[2] (the engine sends what is left of the revoker's own
// ttl: its value no longer need outlive the lease it overwrote). Deletes the saved key. Returns 1.
inline constexpr std::string_view kSettleRevokeScript =
    "local value = redis.call('GET', KEYS[1])\n"
    "if value and string.sub(value, 1, #ARGV[1]) == ARGV[1] and\n"
    "   redis.call('PTTL', KEYS[1]) > tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "redis.call('DEL', KEYS[2])\n"
    "return 1\n";

inline constexpr std::string_view kRevokeLockScriptSha = "24afb9f0bedcab33d6319deed3eb87ea89f360eb";
inline constexpr std::string_view kUndoRevokeScriptSha = "fbc31ab12ee2964bdca9ff00c452b74dd52798a1";
inline constexpr std::string_view kSettleRevokeScriptSha =
    "652abc830a0c6cf12f904a41628142ab7e48265d";

}  // namespace fencelock::storage
