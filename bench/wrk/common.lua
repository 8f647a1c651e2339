-- Shared by bench/wrk/uncontended.lua and tokens.lua: wrk's hooks that are the same for both.
-- A script loads it with `dofile(...)("WORKLOAD")`, which defines the globals setup() and done()
-- and returns the helpers below (init, random_name).
--
-- wrk runs one Lua state per thread (and one more, the main state, for setup() and done()).
-- Each thread counts in its own globals (ops, refused, errors); done() adds them up through
-- thread:get() and prints ONE JSON line on stdout, after wrk's own report, in the keys of
-- bench/http_bench's lines plus "loader": "wrk". Its latency percentiles are wrk's, per HTTP
-- request: with the uncontended workload acquires and releases alike (http_bench reports the
-- acquire alone).
--
-- Script arguments (after `--` on wrk's command line): CALLERS (the -c given to wrk, for the JSON
-- line: wrk does not tell a script), then NAMES (default 10000) and PREFIX (default "wrk-"), the
-- names drawn: PREFIX .. a random integer in [0, NAMES).
local common = {}

local threads = {}

function common.setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_id", #threads)
end

function common.init(args)
  callers = tonumber(args[1]) or 0
  names = tonumber(args[2]) or 10000
  prefix = args[3] or "wrk-"
  ops, refused, errors = 0, 0, 0
  math.randomseed(os.time() * 1000 + thread_id)
end

function common.random_name()
  return prefix .. math.random(0, names - 1)
end

local function ms(us)
  return string.format("%.3f", us / 1000)
end

-- The JSON line of the run.
local function report(workload, summary, latency)
  local totals = { ops = 0, refused = 0, errors = 0 }
  for _, thread in ipairs(threads) do
    for key in pairs(totals) do
      totals[key] = totals[key] + (thread:get(key) or 0)
    end
  end
  local e = summary.errors
  local socket_errors = e.connect + e.read + e.write + e.timeout
  local seconds = summary.duration / 1e6
  io.write(string.format(
    '{"system":"fencelock","loader":"wrk","workload":"%s","callers":%d,"threads":%d,' ..
      '"seconds":%.3f,"ops":%d,"ops_per_sec":%.3f,"requests":%d,"requests_per_sec":%.3f,' ..
      '"latency_of":"request","p50_ms":%s,"p90_ms":%s,"p99_ms":%s,"p999_ms":%s,' ..
      '"refused":%d,"errors":%d,"socket_errors":%d}\n',
    workload, threads[1] and threads[1]:get("callers") or 0, #threads, seconds, totals.ops,
    totals.ops / seconds, summary.requests, summary.requests / seconds,
    ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)),
    ms(latency:percentile(99.9)), totals.refused, totals.errors + socket_errors, socket_errors))
end

return function(workload)
  setup = common.setup
  done = function(summary, latency, requests)
    report(workload, summary, latency)
  end
  return common
end
