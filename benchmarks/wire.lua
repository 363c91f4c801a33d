-- wrk script for benchmarks/wire.py: POSTs pre-built kube-scheduler bodies round-robin.
-- Each line of the bodies file is "<reply key>\t<JSON body>"; the key goes in X-Wire-Reply so the
-- no-op server can answer the advisor's reply bytes for that body. Path from WIRE_PATH.
local requests = {}
local next_one = 0

function init(args)
  local path = os.getenv("WIRE_PATH")
  for line in io.lines(args[1]) do
    local key, body = line:match("^([^\t]*)\t(.*)$")
    local headers = { ["Content-Type"] = "application/json", ["X-Wire-Reply"] = key }
    requests[#requests + 1] = wrk.format("POST", path, headers, body)
  end
end

function request()
  next_one = next_one % #requests + 1
  return requests[next_one]
end

function done(summary, latency, _)
  local e = summary.errors
  io.write(string.format(
    'WIRE {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"errors":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
