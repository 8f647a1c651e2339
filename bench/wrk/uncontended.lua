-- wrk script: fencelock's uncontended workload, driven by a load generator that is not ours (the
-- witness of bench/http_bench --workload uncontended). Acquire a random name (ttl 10 s, no
-- wait_ms), release it with the lease from the answer, repeat; ops = pairs, counted when a
-- release answers "released": true. A 409 to an acquire is "refused" (another connection holds
-- that name); any other answer, and "released": false, is an error.
--
--   wrk -t T -c C -d 5s --timeout 5s -s bench/wrk/uncontended.lua http://127.0.0.1:PORT -- C
--
-- wrk's request() and response() run in one Lua state per thread and are not told which
-- connection they serve. So each thread keeps the leases its acquires were answered with, in
-- order, and the next request any of its connections sends is the release of the oldest (an
-- acquire when it holds none): every connection has one request in flight, as every
-- http_bench caller has, but a lease may be released over another connection of the same thread
-- than the one that acquired it. With as many threads as connections the pairing is exact.
-- Arguments and the JSON line: common.lua.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(here .. "common.lua")("uncontended")

local held = {}  -- leases not yet released: held[first .. last], oldest first, { name, lease } each
local first, last = 1, 0


function init(args)
  common.init(args)
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  if first <= last then
    local oldest = held[first]
    held[first] = nil
    first = first + 1
    return wrk.format("DELETE", "/v1/locks/" .. oldest[1], nil, '{"lease":"' .. oldest[2] .. '"}')
  end
  return wrk.format("POST", "/v1/locks/" .. common.random_name(), nil, '{"ttl_ms":10000}')
end

function response(status, headers, body)
  if status == 200 then
    local lease = body:match('"lease":"([^"]+)"')
    if lease then  -- an acquire was granted: release it next
      last = last + 1
      held[last] = { body:match('"name":"([^"]+)"'), lease }
    elseif body:find('"released":true', 1, true) then
      ops = ops + 1
    else
      errors = errors + 1
    end
  elseif status == 409 then
    refused = refused + 1
  else
    errors = errors + 1
  end
end
