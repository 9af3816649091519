-- wrk script: 2026-07-28 `tools/call echo` (no session, `_meta` and the Mcp-* headers), as
-- mcp-mrtr-proxy serves it (bench/proxy_vs_nginx.sh). Every answer is checked (HTTP 200, a
-- complete result whose text is "hi"); done() prints one JSON line (bench/wrk/common.lua).
package.path = os.getenv("WRK_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

setup = common.setup
done = common.done

function init(args)
  common.post_tool_call("echo")
end

function request()
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. common.next_id()
    .. ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},'
    .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}')
end

function response(status, headers, body)
  if status == 200 and body:find('"resultType"%s*:%s*"complete"')
      and body:find('"text"%s*:%s*"hi"') then
    calls_ok = calls_ok + 1
  else
    common.bad(status, body)
  end
end
