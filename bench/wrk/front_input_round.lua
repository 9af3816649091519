-- wrk script: the 2026-07-28 `test_input_required_result_elicitation` flow (every legacy server of the benchmark has it) through mcp-mrtr-proxy, one pause/resume round per
-- call (bench/proxy_vs_nginx.sh): the first request is answered `input_required` with
-- `inputRequests` and `requestState`; the retry carries the answer ("Alice") and the state and
-- must complete with "Hello, Alice!". A retry is queued per thread and sent by the thread's next
-- free connection. `calls_ok` counts completed flows (two requests each).
-- Each thread of each run is a caller of its own (`Authorization: Bearer` with a fresh uuid):
-- a pause is its caller's, and the flows wrk leaves paused when a run stops stay paused until
-- `--pause-ttl`, counting against their caller's `--max-paused-per-principal` (64); one caller
-- for every run would reach it with 64 connections (docs/proxy/paused-calls.md).
package.path = os.getenv("WRK_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

setup = common.setup
done = common.done

local retries = {}
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'

function init(args)
  common.post_tool_call("test_input_required_result_elicitation")
  local uuid = io.open("/proc/sys/kernel/random/uuid"):read("l")
  wrk.headers["Authorization"] = "Bearer bench-" .. uuid
end

function request()
  local retry = table.remove(retries)
  local params
  if retry then
    params = '{"name":"test_input_required_result_elicitation","arguments":{},' .. meta .. ',"inputResponses":{"' .. retry.key
      .. '":{"action":"accept","content":{"name":"Alice"}}},"requestState":"' .. retry.state .. '"}'
  else
    params = '{"name":"test_input_required_result_elicitation","arguments":{},' .. meta .. '}'
  end
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. common.next_id()
    .. ',"method":"tools/call","params":' .. params .. '}')
end

function response(status, headers, body)
  if status == 200 and body:find('"resultType"%s*:%s*"input_required"') then
    local state = body:match('"requestState"%s*:%s*"([^"]+)"')
    local key = body:match('"inputRequests"%s*:%s*{%s*"([^"]+)"')
    if state and key then
      table.insert(retries, { state = state, key = key })
      return
    end
  elseif status == 200 and body:find('"resultType"%s*:%s*"complete"')
      and body:find('Hello, Alice!', 1, true) then
    calls_ok = calls_ok + 1
    return
  end
  common.bad(status, body)
end
