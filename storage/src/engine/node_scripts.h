// The Lua scripts of a lock node's own records, outside any lock: the node's marker, which every
// engine reads in its handshake (node_trust.h), and the registry of live engines
// (instance_registry.h). Each runs atomically on one node with EVAL (they are not loaded: they run
// once per handshake, recheck or heartbeat, not per lock operation).
#pragma once

#include <string_view>

namespace fencelock::storage {

// The node's marker (node_trust.h): a hash that every engine reads in its handshake with the node.
// One per node ('#' never occurs in a lock name). Shared by every key prefix: max_ttl_ms, the
// largest --max-ttl of any engine that met the node; suspect, "<run_id> <node clock ms>": an
// incarnation that may have lost keys as late as then (kNodeSuspectScript); evicted, "<run_id>
// <count>": the INFO stats evicted_keys of that incarnation the last suspect record covers,
// written with it (EngineCore::evicted_unseen: any other count is news; 0 for another
// incarnation). One per key prefix (a deployment): "admitted:<prefix>", the run_id of the node's
// incarnation that some engine of that prefix let vote (written with HSET) — a new cluster born
// for one deployment says nothing about another's leases; "fences_missing:<prefix>", "1" from when
// an engine of that prefix noticed the node may have lost its fences until a strict repair copied
// them back (deleted just before "admitted:<prefix>" is written again; set for every prefix
// admitted there when any engine finds the node lost keys it kept its marker through,
// kNodeFenceLossScript). The fields "admitted" and "fences_missing" without a prefix are what
// versions before them wrote: adopted only on the operator's word
// (EngineOptions::adopt_legacy_markers), since an older version's birth after every node lost its
// data writes them too.
inline constexpr std::string_view kNodeMarkerKey = "fencelock:#node";

// Handshake probe (EVAL, not loaded): raises max_ttl_ms to ARGV[1] (this engine's max ttl, ms) and
// returns {admitted or "", max_ttl_ms, suspect run_id or "", ms since the suspect record (node
// clock, never negative), the heartbeat number engine ARGV[2] last left in the registry hash
// KEYS[2] or "", fences_missing or "", "1" if an unprefixed admitted is there else "0", the
// evicted record or ""}, numbers
// as strings: admitted and fences_missing of key prefix ARGV[3]. With ARGV[4] = "1", where
// "admitted:<ARGV[3]>" is absent and an unprefixed admitted is there (an older version's), first
// copies it and an unprefixed fences_missing to ARGV[3]'s fields. Writes nothing else, unless the
// maximum grows.
inline constexpr std::string_view kNodeMarkerScript =
    "local max = tonumber(redis.call('HGET', KEYS[1], 'max_ttl_ms')) or 0\n"
    "if tonumber(ARGV[1]) > max then\n"
    "  max = tonumber(ARGV[1])\n"
    "  redis.call('HSET', KEYS[1], 'max_ttl_ms', ARGV[1])\n"
    "end\n"
    "local suspect, age = '', 0\n"
    "local record = redis.call('HGET', KEYS[1], 'suspect')\n"
    "local space = record and string.find(record, ' ', 1, true)\n"
    "if space then\n"
    "  local time = redis.call('TIME')\n"
    "  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
    "  suspect = string.sub(record, 1, space - 1)\n"
    "  age = math.max(0, now - (tonumber(string.sub(record, space + 1)) or now))\n"
    "end\n"
    "local seq = redis.call('HGET', KEYS[2], '#seq:' .. ARGV[2]) or ''\n"
    "local admitted = redis.call('HGET', KEYS[1], 'admitted:' .. ARGV[3])\n"
    "local missing = redis.call('HGET', KEYS[1], 'fences_missing:' .. ARGV[3])\n"
    "local legacy = redis.call('HGET', KEYS[1], 'admitted')\n"
    "if not admitted and legacy and ARGV[4] == '1' then\n"
    "  admitted = legacy\n"
    "  missing = missing or redis.call('HGET', KEYS[1], 'fences_missing')\n"
    "  if missing then\n"
    "    redis.call('HSET', KEYS[1], 'fences_missing:' .. ARGV[3], missing)\n"
    "  end\n"
    "  redis.call('HSET', KEYS[1], 'admitted:' .. ARGV[3], admitted)\n"
    "end\n"
    "return {admitted or '', tostring(max), suspect, tostring(age), "
    "string.match(seq, '^%d+') or '', missing or '', legacy and '1' or '0', "
    "redis.call('HGET', KEYS[1], 'evicted') or ''}\n";

// Records on the node (EVAL) that it lost fences while keeping its marker (NodeTrust::FenceLoss::
// evident): sets "fences_missing:<ARGV[1]>" (this engine's key prefix), and the same for every
// other prefix with an "admitted:<prefix>" field, and the unprefixed fences_missing if an
// unprefixed admitted is there — an engine of another deployment (or an older version) started
// later must not trust the node by rule 1 or 2 before its own strict repair. Returns 1.
inline constexpr std::string_view kNodeFenceLossScript =
    "redis.call('HSET', KEYS[1], 'fences_missing:' .. ARGV[1], '1')\n"
    "for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do\n"
    "  if string.sub(field, 1, 9) == 'admitted:' then\n"
    "    redis.call('HSET', KEYS[1], 'fences_missing:' .. string.sub(field, 10), '1')\n"
    "  elseif field == 'admitted' then\n"
    "    redis.call('HSET', KEYS[1], 'fences_missing', '1')\n"
    "  end\n"
    "end\n"
    "return 1\n";

// Records on the node (EVAL) that its incarnation ARGV[1] may have lost keys as late as now: sets
// the marker's suspect field to "<ARGV[1]> <node clock ms>", and unless ARGV[2] is "", its evicted
// field to "<ARGV[1]> <ARGV[2]>" (the evicted_keys the caller read before: this record covers
// them) — one step, so no engine reads the count as covered without the record. Returns 1.
inline constexpr std::string_view kNodeSuspectScript =
    "local time = redis.call('TIME')\n"
    "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
    "redis.call('HSET', KEYS[1], 'suspect', ARGV[1] .. ' ' .. string.format('%d', now))\n"
    "if ARGV[2] ~= '' then\n"
    "  redis.call('HSET', KEYS[1], 'evicted', ARGV[1] .. ' ' .. ARGV[2])\n"
    "end\n"
    "return 1\n";

// Registry heartbeat (instance_registry.h; EVAL, once a second per node). KEYS[1]: the registry
// hash; ARGV[1]: this engine's id; ARGV[2]: its token identity; ARGV[3]: entry lifetime (ms);
// ARGV[10]: the longest lease ttl this engine knows any instance may grant (ms, NodeTrust);
// ARGV[4]: what the engine may do to an unbound node — "0" nothing, "1" bind it if no live entry
// of another identity is on it (a birth), "2" bind it (a repair). Writes this engine's entry
// "<expiry ms> <ARGV[10]> <identity>" (the node's clock; an entry without the middle field, of an
// older version, is read as "<expiry ms> <identity>"), deletes expired entries of others, binds as
// allowed (field "#tokens", kept for good; an empty value counts as unbound), raises the field
// "#mark" to ARGV[5] (the highest token this engine handed out, decimal; compared as digits, since
// Lua's numbers are doubles), raises the field "#seq:<ARGV[1]>" to "<ARGV[6]> <node clock ms>"
// (ARGV[6]: this heartbeat's number, growing; a smaller one — a heartbeat of a timed-out connection
// delivered late — changes nothing; such fields of other engines unwritten for 24 h are deleted),
// raises the node marker's (KEYS[2], kNodeMarkerKey) max_ttl_ms to ARGV[7] (this engine's max ttl,
// ms), raises the field "#quarantine:on" (ARGV[8] "on": this engine quarantines restarted nodes)
// or "#quarantine:off:<ARGV[1]>" (ARGV[8] "off": one per engine, deleted once expired) to now +
// ARGV[9] ms (how long its declaration stands; node clock ms), and returns {the bound
// identity or "" if none, {"<engine id> <entry>" of each other live entry}, the mark
// or "0", the number this engine's previous heartbeat left here or "", the marker's max_ttl_ms,
// how many ms the other setting's declaration still stands (the latest of any other engine's
// "off", or the "on"; node clock; "0" if none), a live key prefix of another deployment that
// overlaps ARGV[11] (this engine's key prefix: one is a prefix of the other, so their lock keys
// collide) or "", "1" if the marker names an admission of ARGV[11] (or an older version's
// unprefixed one: it kept its history) else "0"}; it also keeps "prefix:<ARGV[11]>" in the node
// marker, live for the entry lifetime (expired ones are deleted). Fields starting with '#' are the
// registry's own, never entries (an engine id is hex).
inline constexpr std::string_view kRegistryHeartbeatScript =
    "local time = redis.call('TIME')\n"
    "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)\n"
    "redis.call('HSET', KEYS[1], ARGV[1], (now + tonumber(ARGV[3])) .. ' ' .. ARGV[10] .. ' ' .. "
    "ARGV[2])\n"
    "local seq = '#seq:' .. ARGV[1]\n"
    "local previous = string.match(redis.call('HGET', KEYS[1], seq) or '', '^%d+') or ''\n"
    "if previous == '' or tonumber(ARGV[6]) > tonumber(previous) then\n"
    "  redis.call('HSET', KEYS[1], seq, ARGV[6] .. ' ' .. string.format('%d', now))\n"
    "end\n"
    "local others = {}\n"
    "local foreign = false\n"
    "local off_until = 0\n"
    "local entries = redis.call('HGETALL', KEYS[1])\n"
    "for i = 1, #entries, 2 do\n"
    "  if string.sub(entries[i], 1, 5) == '#seq:' then\n"
    "    local written = tonumber(string.match(entries[i + 1], ' (%d+)$'))\n"
    "    if entries[i] ~= seq and (not written or written < now - 86400000) then\n"
    "      redis.call('HDEL', KEYS[1], entries[i])\n"
    "    end\n"
    "  elseif string.sub(entries[i], 1, 16) == '#quarantine:off:' then\n"
    "    local until_ms = tonumber(entries[i + 1]) or 0\n"
    "    if until_ms < now then\n"
    "      redis.call('HDEL', KEYS[1], entries[i])\n"
    "    elseif entries[i] ~= '#quarantine:off:' .. ARGV[1] then\n"
    "      off_until = math.max(off_until, until_ms)\n"
    "    end\n"
    "  elseif entries[i] ~= ARGV[1] and string.sub(entries[i], 1, 1) ~= '#' then\n"
    "    local space = string.find(entries[i + 1], ' ', 1, true)\n"
    "    if not space or tonumber(string.sub(entries[i + 1], 1, space - 1)) < now then\n"
    "      redis.call('HDEL', KEYS[1], entries[i])\n"
    "    else\n"
    "      local identity = string.sub(entries[i + 1], space + 1)\n"
    "      identity = string.match(identity, '^%d+ (.*)$') or identity\n"
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
    "local max = tonumber(redis.call('HGET', KEYS[2], 'max_ttl_ms')) or 0\n"
    "if tonumber(ARGV[7]) > max then\n"
    "  max = tonumber(ARGV[7])\n"
    "  redis.call('HSET', KEYS[2], 'max_ttl_ms', ARGV[7])\n"
    "end\n"
    "local declared = ARGV[8] == 'on' and '#quarantine:on' or '#quarantine:off:' .. ARGV[1]\n"
    "local until_ms = now + tonumber(ARGV[9])\n"
    "if until_ms > (tonumber(redis.call('HGET', KEYS[1], declared)) or 0) then\n"
    "  redis.call('HSET', KEYS[1], declared, string.format('%d', until_ms))\n"
    "end\n"
    "local stands = off_until - now\n"
    "if ARGV[8] ~= 'on' then\n"
    "  stands = (tonumber(redis.call('HGET', KEYS[1], '#quarantine:on')) or 0) - now\n"
    "end\n"
    "local overlap = ''\n"
    "local fields = redis.call('HGETALL', KEYS[2])\n"
    "for i = 1, #fields, 2 do\n"
    "  if string.sub(fields[i], 1, 7) == 'prefix:' then\n"
    "    local other = string.sub(fields[i], 8)\n"
    "    if (tonumber(fields[i + 1]) or 0) < now then\n"
    "      redis.call('HDEL', KEYS[2], fields[i])\n"
    "    elseif other ~= ARGV[11] and (string.sub(other, 1, #ARGV[11]) == ARGV[11] or "
    "string.sub(ARGV[11], 1, #other) == other) then\n"
    "      overlap = other\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('HSET', KEYS[2], 'prefix:' .. ARGV[11], "
    "string.format('%d', now + tonumber(ARGV[3])))\n"
    "local history = (redis.call('HEXISTS', KEYS[2], 'admitted:' .. ARGV[11]) == 1 or "
    "redis.call('HEXISTS', KEYS[2], 'admitted') == 1) and '1' or '0'\n"
    "return {bound or '', others, mark, previous, tostring(max), "
    "string.format('%d', math.max(0, stands)), overlap, history}\n";

}  // namespace fencelock::storage
