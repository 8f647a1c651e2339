// Pieces of Lua shared by the scripts of lua_scripts.h and lua_rw_scripts.h (macros: the scripts
// are compile-time string constants). Each piece's contract is in its comment.
#pragma once

// Where releases are announced. One channel for every key prefix (the Lua scripts cannot know the
// prefix); listeners match the key in the message against their own prefix.
#define FENCELOCK_ANNOUNCEMENT_CHANNEL "fencelock:released"  // spelled once, for C++ and Lua

// The engine half of the tag that announces a failed attempt's cleanup (kReleaseSilentlyScript):
// no engine's; watches act on it, waiters never do.
#define FENCELOCK_CLEANUP_TAG_ENGINE "ffffffffffffffff"

// The start of every script that checks a holder's claim (lua_scripts.h): leaves the key's value in
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

// The end of a release that deleted KEYS[1], whose value was `value` (FENCELOCK_LUA_CHECK_CLAIM):
// a marked value (someone waits: lua_scripts.h's mark) is announced on the release channel with the
// release's tag (ARGV[2], or zeros and the lease id) and the key `key` (a Lua expression: the key
// whose waiters the release may let in) — unless the mark is the releasing engine's own (its
// waiters were woken directly). Returns 1.
#define FENCELOCK_LUA_ANNOUNCE_RELEASE_OF(key)                                       \
  "local at = string.find(value, '#', 49, true)\n"                                   \
  "if not at then\n"                                                                 \
  "  return 1\n"                                                                     \
  "end\n"                                                                            \
  "local tag = ARGV[2] or ('0000000000000000' .. string.sub(claim, 1, 16))\n"        \
  "if string.sub(value, at + 1) ~= string.sub(tag, 1, 16) then\n"                    \
  "  redis.call('PUBLISH', '" FENCELOCK_ANNOUNCEMENT_CHANNEL "', tag .. ' ' .. " key \
  ")\n"                                                                              \
  "end\n"                                                                            \
  "return 1\n"
#define FENCELOCK_LUA_ANNOUNCE_RELEASE FENCELOCK_LUA_ANNOUNCE_RELEASE_OF("KEYS[1]")

// A Lua expression: whether the decimal token in variable `t` is above the fence in variable `f`
// (nil → no fence); an empty token is above everything (no fence kept). Inline, not a function:
// a closure made on every call measurably slowed the single lock's acquire.
#define FENCELOCK_LUA_ABOVE(t, f) \
  "(" t " == '' or not " f " or #" t " > #" f " or (#" t " == #" f " and " t " > " f "))"

// Marks `value` of `key` for the waiters of engine `wanted` as kAcquireLockScript does.
#define FENCELOCK_LUA_MARK                                                \
  "local function mark(key, value, wanted)\n"                             \
  "  local at = string.find(value, '#', 1, true)\n"                       \
  "  if at then\n"                                                        \
  "    local m = string.sub(value, at + 1)\n"                             \
  "    if m == wanted or m == '*' then\n"                                 \
  "      return\n"                                                        \
  "    end\n"                                                             \
  "    wanted = '*'\n"                                                    \
  "    value = string.sub(value, 1, at - 1)\n"                            \
  "  end\n"                                                               \
  "  redis.call('SET', key, value .. '#' .. wanted, 'KEEPTTL')\n"         \
  "end\n"                                                                 \
  "local function holder(value)\n"                                        \
  "  local at = string.find(value, '#', 1, true)\n"                       \
  "  return string.sub(value, 1, math.min(16, (at or #value + 1) - 1))\n" \
  "end\n"
