-- wrk script: legacy `tools/call echo` on one Streamable HTTP session (bench/proxy_vs_nginx.sh).
-- Env: MCP_SESSION_ID (the session the benchmark opened), MCP_LEGACY_VERSION (2025-06-18).
-- Every answer is checked (HTTP 200, a JSON-RPC result whose text is "hi"); done() prints one
-- JSON line with the counts (bench/wrk/common.lua).
package.path = os.getenv("WRK_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local session = os.getenv("MCP_SESSION_ID")
local version = os.getenv("MCP_LEGACY_VERSION") or "2025-06-18"

setup = common.setup
done = common.done

function init(args)
  common.post({ ["Mcp-Session-Id"] = session, ["Mcp-Protocol-Version"] = version })
end

function request()
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. common.next_id()
    .. ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}')
end

function response(status, headers, body)
  if status == 200 and body:find('"result"', 1, true) and body:find('"text"%s*:%s*"hi"') then
    calls_ok = calls_ok + 1
  else
    common.bad(status, body)
  end
end
