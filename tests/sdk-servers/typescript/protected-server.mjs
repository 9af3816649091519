// A legacy MCP server protected the way the TypeScript SDK 1.x does it, for mcp-migrate's proxy
// tests of authenticated servers (docs/proxy/deployment.md, "Authenticated servers"): the SDK's
// bearer-auth middleware (`requireBearerAuth` with a verifier that accepts two fixed tokens, one
// per user: `alice-token` → alice, `bob-token` → bob) in front of Streamable HTTP at `/mcp`, and
// the SDK's metadata router serving `/.well-known/oauth-protected-resource/mcp` and
// `/.well-known/oauth-authorization-server` for the resource URL given with `--resource-url`. A
// request without a valid token is answered 401 with
// `WWW-Authenticate: Bearer ... resource_metadata="..."`. Each legacy session belongs to the
// token that opened it (a request of another token on it is answered 403).
//
// Tools: `whoami` says which user the request carrying the call runs as (`extra.authInfo`, from
// the token on that very request); `ask_name` elicits a name (the legacy push-style
// `elicitation/create`, tied to the call) and answers `"<user>: hello <name>"`; `echo` answers
// its `text`.
//
// For bench/credentials.sh: `--bench-tokens N` also accepts `bench` and `bench-0` … `bench-<N-1>`
// (each token its own user, named like it); `--open` leaves the bearer-auth middleware out (the
// same server without auth: a request without a token runs as `nobody`).
//
// Usage: node protected-server.mjs --port N --resource-url URL [--bench-tokens N] [--open]
// (prints `listening on http://127.0.0.1:N/mcp` on stdout once it accepts connections.)

import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

import express from "express";
import { z } from "zod";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";

const USERS = { "alice-token": "alice", "bob-token": "bob" };

const { values } = parseArgs({
  options: {
    port: { type: "string" },
    "resource-url": { type: "string" },
    "bench-tokens": { type: "string" },
    open: { type: "boolean", default: false },
  },
});
const resourceUrl = new URL(values["resource-url"]);
if (values["bench-tokens"] !== undefined) {
  USERS.bench = "bench";
  for (let i = 0; i < Number(values["bench-tokens"]); i++) USERS[`bench-${i}`] = `bench-${i}`;
}

const verifier = {
  async verifyAccessToken(token) {
    const user = USERS[token];
    if (!user) throw new InvalidTokenError("unknown token");
    return { token, clientId: user, scopes: ["mcp"], expiresAt: Math.floor(Date.now() / 1000) + 3600 };
  },
};

function newServer() {
  const server = new McpServer({ name: "mcp-migrate-protected-ts-server", version: "1.0.0" });
  server.registerTool("whoami", { description: "Say which user this call runs as" }, async (extra) => ({
    content: [{ type: "text", text: extra.authInfo?.clientId ?? "nobody" }],
  }));
  server.registerTool(
    "echo",
    { description: "Answer the text it is given", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "ask_name",
    { description: "Ask the user's name (elicitation), then greet them as the caller" },
    async (extra) => {
      const answer = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: {
            message: "What is your name?",
            requestedSchema: {
              type: "object",
              properties: { name: { type: "string", description: "Your name." } },
              required: ["name"],
            },
          },
        },
        ElicitResultSchema,
      );
      const user = extra.authInfo?.clientId ?? "nobody";
      const text =
        answer.action === "accept" ? `${user}: hello ${answer.content?.name}` : `${user}: no name (${answer.action})`;
      return { content: [{ type: "text", text }] };
    },
  );
  return server;
}

const app = express();
app.use(express.json());
app.use(
  mcpAuthMetadataRouter({
    oauthMetadata: {
      issuer: "https://auth.example.com",
      authorization_endpoint: "https://auth.example.com/authorize",
      token_endpoint: "https://auth.example.com/token",
      response_types_supported: ["code"],
    },
    resourceServerUrl: resourceUrl,
    scopesSupported: ["mcp"],
  }),
);
const auth = requireBearerAuth({
  verifier,
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resourceUrl),
});

// Session id → { transport, token }.
const sessions = new Map();

app.all("/mcp", ...(values.open ? [] : [auth]), async (req, res) => {
  const id = req.headers["mcp-session-id"];
  if (id) {
    const session = sessions.get(id);
    if (!session) {
      res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      return;
    }
    if (session.token !== req.auth?.token) {
      res.status(403).json({ jsonrpc: "2.0", error: { code: -32600, message: "not your session" }, id: null });
      return;
    }
    await session.transport.handleRequest(req, res, req.body);
    return;
  }
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => sessions.set(sid, { transport, token: req.auth?.token }),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  await newServer().connect(transport);
  await transport.handleRequest(req, res, req.body);
});

app.listen(Number(values.port), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${values.port}/mcp`);
});
