// The Redis token source's scripts (see redis_token_source.h for the design).
//
// Each is SCRIPT LOADed by the connection's handshake, which checks the digest below against
// what Redis computed — a script edited without its digest fails loudly at connect.
#pragma once

#include <string_view>

namespace fencelock::storage {

// The epoch negotiation. KEYS[1]: the epoch record, a hash {epoch, run_id}. ARGV[1]: the master's
// run_id as the caller last read it (INFO server). ARGV[2]: the highest epoch the calling source
// has drawn under, or -1 if it never drew (so "used epoch 0" and "used nothing" stay apart).
// Returns the epoch to draw under. Idempotent per incarnation: every source meeting the same
// run_id gets the same epoch, and only the first one writes. A record with no epoch and a caller
// that never drew is a fresh deployment: epoch 0. A record that is gone while the caller drew
// before (a wiped master) moves to the caller's highest epoch + 1.
inline constexpr std::string_view kTokenEpochScript =
    "local rec = redis.call('HMGET', KEYS[1], 'epoch', 'run_id')\n"
    "local recorded = tonumber(rec[1])\n"
    "local used = tonumber(ARGV[2])\n"
    "if rec[2] == ARGV[1] and recorded and recorded >= used then return recorded end\n"
    "local epoch = 0\n"
    "if recorded ~= nil or used >= 0 then epoch = math.max(recorded or 0, used) + 1 end\n"
    "redis.call('HSET', KEYS[1], 'epoch', epoch, 'run_id', ARGV[1])\n"
    "return epoch\n";

inline constexpr std::string_view kTokenEpochScriptSha = "ee96048759e2a8edd73dab582471a87000559a91";

// One draw (INCR) or read (GET) of a counter, only under the recorded epoch. KEYS[1]: the name's
// counter; KEYS[2]: the epoch record. ARGV[1]: the epoch the caller draws under; ARGV[2]: "next"
// to increment, anything else to read. Returns the counter (0 for a counter never drawn) when the
// record holds exactly ARGV[1]; otherwise -1 — never a counter, which is never negative — and
// touches nothing. Checking the record in the same atomic step as the INCR is what keeps two
// sources from ever drawing under two epochs: whoever changes the record, every later draw of
// any source that has not adopted the new epoch is refused.
inline constexpr std::string_view kTokenDrawScript =
    "local recorded = tonumber(redis.call('HGET', KEYS[2], 'epoch'))\n"
    "if recorded == nil or recorded ~= tonumber(ARGV[1]) then return -1 end\n"
    "if ARGV[2] == 'next' then return redis.call('INCR', KEYS[1]) end\n"
    "return tonumber(redis.call('GET', KEYS[1])) or 0\n";

inline constexpr std::string_view kTokenDrawScriptSha = "870aba17f28efb6ef75c4a9d1936e3f11444a886";

// A skip past a fence (TokenSource::skip_past): the lock nodes saw ARGV[2] · 2^40 + ARGV[3] granted
// for the name. KEYS[1]: the name's counter; KEYS[2]: the epoch record. ARGV[1]: the epoch the
// caller draws under. Under any other recorded epoch: -1, nothing changed. If the seen epoch is
// below the recorded one, every later token is above it already: 0. Otherwise raises the record
// to the seen epoch (sources drawing under the old one mismatch and adopt it, as after any change
// of the record) and the counter to at least the seen counter, and returns 1: the next draw of
// the name is above what the nodes saw. Never lowers anything.
inline constexpr std::string_view kTokenSkipScript =
    "local recorded = tonumber(redis.call('HGET', KEYS[2], 'epoch'))\n"
    "if recorded == nil or recorded ~= tonumber(ARGV[1]) then return -1 end\n"
    "local seen = tonumber(ARGV[2])\n"
    "if seen < recorded then return 0 end\n"
    "if seen > recorded then redis.call('HSET', KEYS[2], 'epoch', seen) end\n"
    "local counter = tonumber(redis.call('GET', KEYS[1])) or 0\n"
    "if counter < tonumber(ARGV[3]) then redis.call('SET', KEYS[1], ARGV[3]) end\n"
    "return 1\n";

inline constexpr std::string_view kTokenSkipScriptSha = "7f5e44f81953775031528a21b363c91cdb8e7383";

}  // namespace fencelock::storage
