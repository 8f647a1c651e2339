-- wrk script: fencelock's tokens workload, driven by a load generator that is not ours (the
-- witness of bench/http_bench --workload tokens): POST /v1/tokens/{random name}, no body; ops =
-- draws answered 200 with a token, anything else is an error.
--
--   wrk -t T -c C -d 5s --timeout 5s -s bench/wrk/tokens.lua http://127.0.0.1:PORT -- C
--
-- Arguments and the JSON line: common.lua.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(here .. "common.lua")("tokens")

init = common.init

function request()
  return wrk.format("POST", "/v1/tokens/" .. common.random_name(), nil, "")
end

function response(status, headers, body)
  if status == 200 and body:find('"token":', 1, true) then
    ops = ops + 1
  else
    errors = errors + 1
  end
end
