-- Shared by the wrk scripts of bench/proxy_vs_nginx.sh: unique JSON-RPC ids per thread, the
-- count of checked answers, and a done() printing one JSON line:
-- {"calls_ok", "bad", "requests", "duration_us", "socket_errors", "p50_us", "p99_us", "first_bad"}.
local common = {}
local threads = {}

calls_ok = 0
bad_answers = 0
first_bad = ""
thread_number = 0
local counter = 0

function common.setup(thread)
  thread:set("thread_number", #threads)
  table.insert(threads, thread)
end

function common.next_id()
  counter = counter + 1
  return thread_number * 1000000000 + counter
end

-- A POST of JSON that takes JSON or SSE back, with the given extra headers.
function common.post(headers)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  for name, value in pairs(headers) do wrk.headers[name] = value end
end

-- A 2026-07-28 `tools/call` of the tool `name`: its headers (no session).
function common.post_tool_call(name)
  common.post({
    ["Mcp-Protocol-Version"] = "2026-07-28",
    ["Mcp-Method"] = "tools/call",
    ["Mcp-Name"] = name,
  })
end

function common.bad(status, body)
  bad_answers = bad_answers + 1
  if first_bad == "" then
    first_bad = status .. " " .. body:sub(1, 200):gsub('[%c"\\]', " ")
  end
end

function common.done(summary, latency, requests)
  local ok, bad, first = 0, 0, ""
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("calls_ok")
    bad = bad + thread:get("bad_answers")
    if first == "" then first = thread:get("first_bad") end
  end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"calls_ok":%d,"bad":%d,"requests":%d,"duration_us":%d,"socket_errors":%d,'
      .. '"p50_us":%d,"p99_us":%d,"first_bad":"%s"}\n',
    ok, bad, summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), first))
end

return common
