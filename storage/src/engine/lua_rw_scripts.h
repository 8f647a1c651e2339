// The Lua scripts of read/write locks (LockEngine::acquire_rw). Read/write lock X on one node:
// every grant, read or write, is a lease on its own key "<prefix>X#rw:<lease id>" (a lock key:
// its value and claim as a single lock's, lua_scripts.h); the *state key* "<prefix>X#rw", a hash,
// names each grant's lease id with its mode ('r' or 'w') and lives at least as long as the longest
// of them; the *writer-waiting key* "<prefix>X#rw-writer" holds the lease id of one writer that
// waits, for a bounded time. A grant's key gone (released, expired) means it is over here, whatever
// the hash still says: the scripts drop such entries as they meet them. Tokens and the fence are
// the lock X's own (its fence key "<prefix>X#fence"): one order for every grant of the name.
#pragma once

#include <cstddef>
#include <string_view>

#include "engine/lua_fragments.h"

namespace fencelock::storage {

// The most grants a read/write lock has at a time (on one node): the scripts read every live
// grant, so this bounds what one name costs a node. A read beyond it is refused like one a writer
// blocks (it waits for a grant to end).
#define FENCELOCK_RW_MAX_GRANTS "128"  // spelled once, for C++ and Lua
inline constexpr std::size_t kMaxRwGrants = 128;

// An attempt. KEYS[1]: the attempt's lease key, KEYS[2]: the state key, KEYS[3]: the
// writer-waiting key, KEYS[4]: the fence key; ARGV[1]: the value to write (as
// kAcquireLockScript's), ARGV[2]: ttl (ms), ARGV[3]: this engine's id for an attempt that will wait
// if refused, or "" (no mark), ARGV[4]: the token, ARGV[5]: 'r' or 'w', ARGV[6]: for a writer that
// will wait, how long (ms) its wait keeps new readers out, or "0". A read is granted here when no
// write grant is live, no other writer waits and fewer than kMaxRwGrants grants are live; a write
// when no grant at all is live. Granted and
// the token above the fence: SETs KEYS[1] PX ttl, enters it in the state key (whose ttl is raised
// to at least ttl), clears the writer-waiting key if it was this lease's, raises the fence,
// returns 1. Granted but the token not above the fence: {-3, fence}, nothing written. Refused: a
// waiting writer takes the writer-waiting key if it is free (PX ARGV[6]); every live grant is
// marked for ARGV[3]'s waiters (so its release is announced, under the state key's name); returns
// {0, holder id, pttl} of what must end first here: the live grant that ends last, or the waiting
// writer's key.
inline constexpr std::string_view kAcquireRwScript = FENCELOCK_LUA_MARK
    "local id = string.sub(ARGV[1], 1, 16)\n"
    "local base = KEYS[2] .. ':'\n"
    "local members = redis.call('HGETALL', KEYS[2])\n"
    "local live = {}\n"
    "local writer = false\n"
    "for i = 1, #members, 2 do\n"
    "  local key = base .. members[i]\n"
    "  local value = redis.call('GET', key)\n"
    "  if value then\n"
    "    writer = writer or members[i + 1] == 'w'\n"
    "    live[#live + 1] = {key, value}\n"
    "  else\n"
    "    redis.call('HDEL', KEYS[2], members[i])\n"
    "  end\n"
    "end\n"
    "local waiting = redis.call('GET', KEYS[3])\n"
    "local write = ARGV[5] == 'w'\n"
    "local blocked = writer or (write and #live > 0) or\n"
    "                (not write and ((waiting and waiting ~= id) or\n"
    "                                #live >= " FENCELOCK_RW_MAX_GRANTS "))\n"
    "if not blocked then\n"
    "  local fence = redis.call('GET', KEYS[4])\n"
    "  local token = ARGV[4]\n"
    "  if not " FENCELOCK_LUA_ABOVE("token", "fence") " then\n"
    "    return {-3, fence}\n"
    "  end\n"
    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "  redis.call('HSET', KEYS[2], id, ARGV[5])\n"
    "  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then\n"
    "    redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
    "  end\n"
    "  if waiting == id then\n"
    "    redis.call('DEL', KEYS[3])\n"
    "  end\n"
    "  if token ~= '' then\n"
    "    redis.call('SET', KEYS[4], token)\n"
    "  end\n"
    "  return 1\n"
    "end\n"
    "if write and ARGV[6] ~= '0' and (not waiting or waiting == id) then\n"
    "  redis.call('SET', KEYS[3], id, 'PX', ARGV[6])\n"
    "end\n"
    "local last, pttl = '', -1\n"
    "for _, grant in ipairs(live) do\n"
    "  local left = redis.call('PTTL', grant[1])\n"
    "  if left > pttl then\n"
    "    last, pttl = holder(grant[2]), left\n"
    "  end\n"
    "  if ARGV[3] ~= '' then\n"
    "    mark(grant[1], grant[2], ARGV[3])\n"
    "  end\n"
    "end\n"
    "if last == '' and waiting then\n"
    "  last, pttl = waiting, redis.call('PTTL', KEYS[3])\n"
    "end\n"
    "return {0, last, pttl}\n";

// A release. KEYS[1]: the lease key, KEYS[2]: the state key, KEYS[3]: the writer-waiting key;
// ARGV as kReleaseScript's. The compare-and-delete of kReleaseScript, the grant's entry dropped
// from the state key, the writer-waiting key deleted if this lease holds it (its own cleanup may
// not have reached this node), and a marked value announced as "<tag> <state key>": the waiters
// of X's read/write lock, not of one grant.
inline constexpr std::string_view kReleaseRwScript = FENCELOCK_LUA_CHECK_CLAIM
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('HDEL', KEYS[2], string.sub(claim, 1, 16))\n"
    "if redis.call('GET', KEYS[3]) == string.sub(claim, 1, 16) then\n"
    "  redis.call('DEL', KEYS[3])\n"
    "end\n" FENCELOCK_LUA_ANNOUNCE_RELEASE_OF("KEYS[2]");

// An extend. KEYS[1]: the lease key, KEYS[2]: the state key; ARGV[1]: the claim, ARGV[2]: the ttl
// (ms), ARGV[3]: the grant's mode, 'r' or 'w' (bound to the claim: rw_claim_text). As kExtendScript
// on the lease key (never shortened); then the grant is entered in the state key again (should it
// have been dropped) and the state key's ttl raised to at least the lease key's.
inline constexpr std::string_view kExtendRwScript = FENCELOCK_LUA_CHECK_CLAIM
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "local pttl = redis.call('PTTL', KEYS[1])\n"
    "redis.call('HSET', KEYS[2], string.sub(claim, 1, 16), ARGV[3])\n"
    "if redis.call('PTTL', KEYS[2]) < pttl then\n"
    "  redis.call('PEXPIRE', KEYS[2], pttl)\n"
    "end\n"
    "return 1\n";

// The state here. KEYS[1]: the state key, KEYS[2]: the writer-waiting key. Returns {{mode, value,
// pttl, mode, value, pttl, ...} of every live grant, the waiting writer's lease id or ""}. Values
// go to the engine only, which compares them across nodes and never returns one to anyone.
inline constexpr std::string_view kInspectRwScript =
    "local base = KEYS[1] .. ':'\n"
    "local members = redis.call('HGETALL', KEYS[1])\n"
    "local live = {}\n"
    "for i = 1, #members, 2 do\n"
    "  local key = base .. members[i]\n"
    "  local value = redis.call('GET', key)\n"
    "  if value then\n"
    "    live[#live + 1] = members[i + 1]\n"
    "    live[#live + 1] = value\n"
    "    live[#live + 1] = redis.call('PTTL', key)\n"
    "  end\n"
    "end\n"
    "return {live, redis.call('GET', KEYS[2]) or ''}\n";

// SHA-1 of each, as lua_scripts.h's.
inline constexpr std::string_view kAcquireRwScriptSha = "ee5ec62a01b60c5bf6f5cebcc7b6fefb4cc41ca0";
inline constexpr std::string_view kReleaseRwScriptSha = "72a293681e5a2d1ce0b4be22bd35315c3ceaa983";
inline constexpr std::string_view kExtendRwScriptSha = "70751519e57bb084a520534574301e2ec06f085c";
inline constexpr std::string_view kInspectRwScriptSha = "3727f7433cf75b8e6d6507ebbb0dd7b2da7e5409";

}  // namespace fencelock::storage
