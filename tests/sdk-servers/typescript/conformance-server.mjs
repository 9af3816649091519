// A legacy MCP server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, its
// low-level `Server`) with the tools, prompts and resources that the official conformance suite
// calls on a server under test.
//
// It is the TypeScript backend of the proxy's conformance run (tests/tests/conformance_sdk_backends.rs)
// and mirrors the rmcp backend tests/conformance-server (names, arguments, outputs). It is written
// the way TypeScript servers were written before 2026-07-28: tools that need something from the
// client push `elicitation/create`, `sampling/createMessage` (with `extra.sendRequest`, tied to
// the call) or `roots/list` (`server.listRoots()`, not tied to the call: over Streamable HTTP it
// travels on the session's standalone GET stream) mid-call and await the answer. Turning that
// into 2026-07-28 is the proxy's job. Do not copy it into a new server.
//
// Elicitation and sampling requests carry the proxy's `inputRequests` key hint in
// `_meta["io.github.mcp-migrate/inputKey"]` (the suite expects `user_name` and friends).
//
// Usage: node conformance-server.mjs --transport stdio
//        node conformance-server.mjs --transport http --listen 127.0.0.1:0
// (HTTP prints `listening on http://ADDR/mcp` on stdout once it accepts connections.)

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

const INPUT_KEY_HINT = "io.github.mcp-migrate/inputKey";
const TEST_IMAGE_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const text = (value) => ({ content: [{ type: "text", text: value }] });
const noArguments = { type: "object", properties: {} };
const plain = (name, description) => ({ name, description, inputSchema: noArguments });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const embedded = (uri, mimeType, body) => ({ type: "resource", resource: { uri, mimeType, text: body } });

const JSON_SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: {
    address: {
      $anchor: "addressDef",
      type: "object",
      properties: { street: { type: "string" }, city: { type: "string" } },
    },
  },
  properties: {
    name: { type: "string" },
    address: { $ref: "#/$defs/address" },
    contactMethod: { type: "string", enum: ["phone", "email"] },
    phone: { type: "string" },
    email: { type: "string" },
  },
  allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
  if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
  then: { required: ["phone"] },
  else: { required: ["email"] },
  additionalProperties: false,
};

const TOOLS = [
  plain("test_simple_text", "Tests simple text content response"),
  plain("test_image_content", "Tests image content response"),
  plain("test_audio_content", "Tests audio content response"),
  plain("test_embedded_resource", "Tests embedded resource content response"),
  plain("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
  plain("test_error_handling", "Tests error response handling"),
  plain("test_reconnection", "Tests SSE stream disconnection and client reconnection (SEP-1699)"),
  plain("test_tool_with_logging", "Tests tool that emits log messages during execution"),
  plain("test_tool_with_progress", "Tests tool that reports progress notifications"),
  {
    name: "echo",
    description: "Returns the text unchanged",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
  {
    name: "greet",
    description: "Greets someone by name",
    inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
  {
    name: "test_header_param",
    description: "Echoes the region, which clients mirror into Mcp-Param-Region",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" } },
      required: ["region"],
    },
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    inputSchema: JSON_SCHEMA_2020_12,
  },
  {
    name: "test_sampling",
    description: "Tests server-initiated sampling (LLM completion request)",
    inputSchema: {
      type: "object",
      properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"],
    },
  },
  {
    name: "test_elicitation",
    description: "Tests server-initiated elicitation (user input request)",
    inputSchema: {
      type: "object",
      properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"],
    },
  },
  plain("test_input_required_result_elicitation", "Asks for the user's name (elicitation) and greets them"),
  plain("test_input_required_result_sampling", "Asks the client's LLM for the capital of France (sampling)"),
  plain("test_input_required_result_list_roots", "Counts the client's roots (roots/list)"),
  plain("test_input_required_result_request_state", "Asks for a confirmation; the paused call is the state"),
  plain("test_input_required_result_multiple_inputs", "Elicitation, sampling and roots/list at the same time"),
  plain("test_input_required_result_multi_round", "Asks for a name, then for a favourite colour"),
  plain("test_input_required_result_tampered_state", "Asks for a confirmation (the state must be integrity-protected)"),
  plain("test_input_required_result_capabilities", "Asks only for what the client declared (elicitation and/or sampling)"),
  plain("test_missing_capability", "Needs the client's LLM (sampling)"),
  plain("test_streaming_elicitation", "Asks the user something mid-call (elicitation)"),
  plain("test_logging_tool", "Logs a message mid-call"),
  plain("test_url_elicitation", "Sends the user to a URL (URL-mode elicitation) mid-call"),
  plain("test_cancellable", "Runs for 5 s unless cancelled"),
  plain("test_trigger_tool_change", "Announces a tool list change (notifications/tools/list_changed)"),
  plain("test_trigger_prompt_change", "Announces a prompt list change (notifications/prompts/list_changed)"),
];

const STATIC_RESULTS = {
  test_simple_text: () => text("This is a simple text response for testing."),
  test_image_content: () => ({ content: [{ type: "image", data: TEST_IMAGE_BASE64, mimeType: "image/png" }] }),
  test_audio_content: () => ({ content: [{ type: "audio", data: TEST_AUDIO_BASE64, mimeType: "audio/wav" }] }),
  test_embedded_resource: () => ({
    content: [embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")],
  }),
  test_multiple_content_types: () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: TEST_IMAGE_BASE64, mimeType: "image/png" },
      embedded("test://mixed-content-resource", "application/json", JSON.stringify({ test: "data", value: 123 })),
    ],
  }),
  test_error_handling: () => ({
    isError: true,
    content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
  }),
  test_reconnection: () =>
    text(
      "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
    ),
  echo: (args) => text(String(args.text ?? "")),
  greet: (args) => text(`Hello, ${args.name ?? "World"}!`),
  test_header_param: (args) => text(`region: ${args.region ?? ""}`),
  json_schema_2020_12_tool: (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
};

// ---- Pushes to the client (legacy, mid-call) ----

const hinted = (key) => (key ? { _meta: { [INPUT_KEY_HINT]: key } } : {});
const NAME_SCHEMA = { type: "object", properties: { name: { type: "string" } }, required: ["name"] };
const OK_SCHEMA = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };

async function ask(extra, key, message, requestedSchema) {
  return extra.sendRequest(
    { method: "elicitation/create", params: { message, requestedSchema, ...hinted(key) } },
    ElicitResultSchema,
  );
}

const accepted = (reply, field) => (reply.action === "accept" && reply.content ? reply.content[field] : undefined);

async function askName(extra, key, message) {
  return accepted(await ask(extra, key, message, NAME_SCHEMA), "name");
}

async function confirm(extra, key) {
  return accepted(await ask(extra, key, "Please confirm", OK_SCHEMA), "ok") === true;
}

async function sample(extra, key, prompt, maxTokens) {
  const result = await extra.sendRequest(
    {
      method: "sampling/createMessage",
      params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens, ...hinted(key) },
    },
    CreateMessageResultSchema,
  );
  return result.content?.type === "text" ? result.content.text : "(no text)";
}

async function log(extra, message) {
  await extra.sendNotification({
    method: "notifications/message",
    params: { level: "info", logger: "conformance-test-server", data: message },
  });
}

function pushTools(server) {
  const roots = async () => (await server.listRoots()).roots.map((root) => root.uri);
  return {
    test_tool_with_logging: async (_args, extra) => {
      const messages = ["Tool execution started", "Tool processing data", "Tool execution completed"];
      for (const [i, message] of messages.entries()) {
        if (i) await sleep(50);
        await log(extra, message);
      }
      return text("Tool with logging executed successfully");
    },
    test_tool_with_progress: async (_args, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i) await sleep(50);
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
          });
        }
      }
      return text(progressToken === undefined ? "no progress token" : String(progressToken));
    },
    test_sampling: async (args, extra) => text(`LLM response: ${await sample(extra, null, args.prompt ?? "", 100)}`),
    test_elicitation: async (args, extra) => {
      const schema = {
        type: "object",
        properties: {
          username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" },
        },
        required: ["username", "email"],
      };
      const reply = await ask(extra, null, args.message ?? "", schema);
      return text(`User response: ${JSON.stringify({ action: reply.action, content: reply.content })}`);
    },
    test_input_required_result_elicitation: async (_args, extra) => {
      const name = await askName(extra, "user_name", "What is your name?");
      return text(name === undefined ? "No name given." : `Hello, ${name}!`);
    },
    test_input_required_result_sampling: async (_args, extra) =>
      text(`Sampling result: ${await sample(extra, "capital_question", "What is the capital of France?", 100)}`),
    test_input_required_result_list_roots: async () => text(`Found ${(await roots()).length} root(s)`),
    test_input_required_result_request_state: async (_args, extra) =>
      text((await confirm(extra, "confirm")) ? "state-ok: the paused call resumed with the confirmation" : "not confirmed"),
    test_input_required_result_multiple_inputs: async (_args, extra) => {
      const [name, greeting, listed] = await Promise.all([
        askName(extra, "user_name", "What is your name?"),
        sample(extra, "greeting", "Generate a greeting", 50),
        roots(),
      ]);
      return text(`Name: ${name}; Greeting: ${greeting}; Roots: ${listed.length}`);
    },
    test_input_required_result_multi_round: async (_args, extra) => {
      const name = await askName(extra, "step1", "Step 1: What is your name?");
      if (name === undefined) return text("No name given.");
      const schema = { type: "object", properties: { color: { type: "string" } }, required: ["color"] };
      const color = accepted(await ask(extra, "step2", "Step 2: What is your favorite color?", schema), "color");
      return text(`Multi-round complete for ${name} who likes ${color}`);
    },
    test_input_required_result_tampered_state: async (_args, extra) =>
      text((await confirm(extra, "confirm")) ? "integrity-ok: confirmed" : "not confirmed"),
    test_input_required_result_capabilities: async (_args, extra) => {
      const capabilities = server.getClientCapabilities() ?? {};
      const valueSchema = { type: "object", properties: { value: { type: "string" } }, required: ["value"] };
      const pushes = [];
      if (capabilities.elicitation) pushes.push(["elicit_input", ask(extra, "elicit_input", "Elicitation input", valueSchema)]);
      if (capabilities.sampling) pushes.push(["sample_input", sample(extra, "sample_input", "Sample request", 50)]);
      if (pushes.length === 0) return text("No supported capabilities declared");
      await Promise.all(pushes.map(([, push]) => push));
      return text(`capabilities-ok: received ${pushes.map(([key]) => key).join(",")}`);
    },
    test_missing_capability: async (_args, extra) => text(`Sampled: ${await sample(extra, "completion", "Say hello", 20)}`),
    test_streaming_elicitation: async (_args, extra) => {
      await confirm(extra, "continue");
      return text("Streaming complete");
    },
    test_logging_tool: async (_args, extra) => {
      await log(extra, "Diagnostic trace logging activated");
      return text("Logging evaluated");
    },
    test_url_elicitation: async (_args, extra) => {
      const reply = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: {
            mode: "url",
            message: "Open the link to continue",
            url: "https://example.com/consent",
            elicitationId: "consent-1",
            ...hinted("consent"),
          },
        },
        ElicitResultSchema,
      );
      return text(`URL elicitation: ${reply.action}`);
    },
    test_cancellable: async (_args, extra) => {
      for (let i = 0; i < 100 && !extra.signal.aborted; i++) await sleep(50);
      return text(extra.signal.aborted ? "cancelled" : "not cancelled");
    },
    test_trigger_tool_change: async () => {
      await server.sendToolListChanged();
      return text("tool list change announced");
    },
    test_trigger_prompt_change: async () => {
      await server.sendPromptListChanged();
      return text("prompt list change announced");
    },
  };
}

// ---- Prompts and resources ----

const PROMPTS = [
  { name: "test_simple_prompt", title: "Simple Test Prompt", description: "A simple prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    title: "Prompt With Arguments",
    description: "A prompt with required arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    title: "Prompt With Embedded Resource",
    description: "A prompt that includes an embedded resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", title: "Prompt With Image", description: "A prompt that includes image content" },
  {
    name: "test_input_required_result_prompt",
    title: "Prompt With Context",
    description: "Asks the user for context (elicitation) before building the prompt",
  },
];

function argument(args, key) {
  if (typeof args?.[key] !== "string") throw new McpError(ErrorCode.InvalidParams, `missing argument \`${key}\``);
  return args[key];
}

const user = (content) => ({ role: "user", content });
const userText = (value) => user({ type: "text", text: value });

async function getPrompt(name, args, extra) {
  switch (name) {
    case "test_simple_prompt":
      return { messages: [userText("This is a simple prompt for testing.")] };
    case "test_prompt_with_arguments":
      return {
        messages: [userText(`Prompt with arguments: arg1='${argument(args, "arg1")}', arg2='${argument(args, "arg2")}'`)],
      };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          user(embedded(argument(args, "resourceUri"), "text/plain", "Embedded resource content for testing.")),
          userText("Please process the embedded resource above."),
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          user({ type: "image", data: TEST_IMAGE_BASE64, mimeType: "image/png" }),
          userText("Please analyze the image above."),
        ],
      };
    case "test_input_required_result_prompt": {
      const schema = { type: "object", properties: { context: { type: "string" } }, required: ["context"] };
      const reply = await ask(extra, "user_context", "What context should the prompt use?", schema);
      return { messages: [userText(`Prompt with context: ${accepted(reply, "context") ?? "none"}`)] };
    }
    default:
      throw new McpError(ErrorCode.InvalidParams, `Prompt ${name} not found`);
  }
}

const RESOURCES = [
  {
    uri: "test://static-text",
    name: "static-text",
    title: "Static Text Resource",
    description: "A static text resource for testing",
    mimeType: "text/plain",
  },
  {
    uri: "test://static-binary",
    name: "static-binary",
    title: "Static Binary Resource",
    description: "A static binary resource (image) for testing",
    mimeType: "image/png",
  },
  {
    uri: "test://watched-resource",
    name: "watched-resource",
    title: "Watched Resource",
    description: "A resource clients may subscribe to",
    mimeType: "text/plain",
  },
];

function readResource(uri) {
  const fixed = {
    "test://static-text": { mimeType: "text/plain", text: "This is the content of the static text resource." },
    "test://static-binary": { mimeType: "image/png", blob: TEST_IMAGE_BASE64 },
    "test://watched-resource": { mimeType: "text/plain", text: "Watched resource content" },
  }[uri];
  if (fixed) return { contents: [{ uri, ...fixed }] };
  const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1];
  if (id === undefined) {
    throw new McpError(-32002, `Resource not found: ${uri}`, { uri });
  }
  const body = JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` });
  return { contents: [{ uri, mimeType: "application/json", text: body }] };
}

// ---- The server ----

function newServer() {
  const server = new Server(
    { name: "mcp-legacy-conformance-server-typescript", version: "1.32.2" },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        logging: {},
        completions: {},
      },
    },
  );
  const pushes = pushTools(server);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    const handler = STATIC_RESULTS[name] ?? pushes[name];
    if (!handler) throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
    return handler(args, extra);
  });
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) =>
    getPrompt(request.params.name, request.params.arguments, extra),
  );
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: "test://template/{id}/data",
        name: "template",
        title: "Resource Template",
        description: "A resource template with parameter substitution",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => readResource(request.params.uri));
  server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}));
  server.setRequestHandler(CompleteRequestSchema, async () => ({ completion: { values: [], total: 0, hasMore: false } }));
  return server;
}

async function serveHttp(listen) {
  const separator = listen.lastIndexOf(":");
  const host = listen.slice(0, separator);
  const port = Number(listen.slice(separator + 1));
  const transports = new Map();
  const http = createServer(async (req, res) => {
    try {
      if (new URL(req.url, "http://localhost").pathname !== "/mcp") {
        res.writeHead(404).end();
        return;
      }
      const sessionId = req.headers["mcp-session-id"];
      let transport = sessionId ? transports.get(sessionId) : undefined;
      let body;
      if (req.method === "POST") {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      }
      if (!transport && !sessionId && req.method === "POST" && isInitializeRequest(body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
        await newServer().connect(transport);
      }
      if (!transport) {
        res.writeHead(sessionId ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no such session" }, id: null }));
        return;
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      console.error("request failed:", error);
      if (!res.headersSent) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: String(error) }, id: null }));
      }
    }
  });
  http.listen(port, host, () => {
    const address = http.address();
    process.stdout.write(`listening on http://${address.address}:${address.port}/mcp\n`);
  });
}

const { values } = parseArgs({
  options: { transport: { type: "string" }, listen: { type: "string", default: "127.0.0.1:0" } },
});
if (values.transport === "stdio") {
  await newServer().connect(new StdioServerTransport());
} else if (values.transport === "http") {
  await serveHttp(values.listen);
} else {
  console.error("usage: conformance-server.mjs --transport stdio | --transport http [--listen HOST:PORT]");
  process.exit(2);
}
