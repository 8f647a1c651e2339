// The Redis token source's epoch script (see redis_token_source.h for the design).
//
// KEYS[1]: the epoch record, a hash {epoch, run_id}. ARGV[1]: the master's run_id as this
// connection's handshake read it. ARGV[2]: the highest epoch the calling source has drawn under,
// or -1 if it never drew (so "used epoch 0" and "used nothing" stay apart).
// Returns the epoch to draw under. Idempotent per incarnation: every source meeting the same
// run_id gets the same epoch, and only the first one writes. A record with no epoch and a caller
// that never drew is a fresh deployment: epoch 0.
#pragma once

#include <string_view>

namespace fencelock::storage {

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

}  // namespace fencelock::storage
