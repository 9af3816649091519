// A legacy MCP server on the official TypeScript SDK 1.x over Streamable HTTP (stateful
// sessions, SSE responses), for mcp-migrate's proxy tests.
//
// Like the Rust fixture `tests/legacy-server`, whose tool names and result texts it mirrors, it
// deliberately uses the legacy push-style APIs: tools send server-initiated requests in the
// middle of their own `tools/call` and await the answers. Do not copy it into a new server.
//
// - `ask_name`, `ask_twice`: `extra.sendRequest` (elicitation/create), which the SDK sends with
//   the call's request id as related request: on the call's own POST response stream.
// - `summarize`: `server.server.createMessage` without a related request: on the session's
//   standalone GET stream.
//
// Usage: node server.mjs [--port N] (0: any free port). Prints `listening on
// http://127.0.0.1:PORT/mcp` once it accepts connections; logs go to stderr.

import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const text = (value) => ({ content: [{ type: "text", text: value }] });

const form = (message, field, description) => ({
  method: "elicitation/create",
  params: {
    message,
    requestedSchema: {
      type: "object",
      properties: { [field]: { type: "string", description } },
      required: [field],
    },
  },
});

async function elicit(extra, message, field, description) {
  const result = await extra.sendRequest(form(message, field, description), ElicitResultSchema);
  if (result.action === "accept" && result.content && typeof result.content[field] === "string") {
    return [result.content[field], null];
  }
  return [null, result.action === "decline" ? "the user declined" : "the user cancelled"];
}

function build() {
  const server = new McpServer({ name: "mcp-legacy-ts-fixture-server", version: "1.0.0" });
  server.tool("echo", "Return the text unchanged", { text: z.string() }, async ({ text: t }) =>
    text(t),
  );
  server.tool(
    "ask_name",
    "Ask the user for their name (form elicitation) and greet them",
    async (extra) => {
      const [name, why] = await elicit(extra, "What is your name?", "name", "Your name.");
      return text(name === null ? `No name given: ${why}.` : `Hello, ${name}!`);
    },
  );
  server.tool(
    "ask_twice",
    "Ask for a name, then for a favourite colour (two elicitations)",
    async (extra) => {
      const [name, why] = await elicit(extra, "What is your name?", "name", "Your name.");
      if (name === null) return text(`No name given: ${why}.`);
      const question = `${name}, what is your favourite colour?`;
      const [colour, why2] = await elicit(extra, question, "color", "Your favourite colour.");
      if (colour === null) return text(`No colour given: ${why2}.`);
      return text(`${name} likes ${colour}`);
    },
  );
  server.tool(
    "summarize",
    "Summarize the text with the client's LLM (sampling)",
    { text: z.string() },
    async ({ text: t }) => {
      // No related request: the SDK sends it on the session's standalone GET stream.
      const result = await server.server.createMessage(
        {
          messages: [{ role: "user", content: { type: "text", text: `Summarize briefly:\n${t}` } }],
          maxTokens: 100,
        },
        undefined,
      );
      if (result.content?.type !== "text") throw new Error("the sampled message has no text");
      return text(result.content.text);
    },
  );
  return server;
}

const sessions = new Map();

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function refuse(response, status, message) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

const httpServer = http.createServer(async (request, response) => {
  try {
    if (!request.url.startsWith("/mcp")) return refuse(response, 404, "Not found");
    let body;
    if (request.method === "POST") {
      try {
        body = JSON.parse(await readBody(request));
      } catch {
        return refuse(response, 400, "Parse error");
      }
    }
    const id = request.headers["mcp-session-id"];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id) return refuse(response, 404, "Session not found");
      if (request.method !== "POST" || !isInitializeRequest(body)) {
        return refuse(response, 400, "Bad Request: no valid session ID");
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await build().connect(transport);
    }
    await transport.handleRequest(request, response, body);
  } catch (error) {
    console.error("request failed:", error);
    if (!response.headersSent) refuse(response, 500, "Internal error");
  }
});

const portIndex = process.argv.indexOf("--port");
const port = portIndex > 0 ? Number(process.argv[portIndex + 1]) : 0;
// Thousands of paused calls each hold a response stream open.
httpServer.maxConnections = 100000;
httpServer.keepAliveTimeout = 60000;
httpServer.listen(port, "127.0.0.1", 4096, () => {
  console.log(`listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
});
