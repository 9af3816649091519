// A legacy MCP client on the official TypeScript SDK 1.x (@modelcontextprotocol/sdk), for
// mcp-migrate's proxy tests: the same flows and output as python_client.py.
//
//   node ts_client.mjs --url URL --name Bob --color green --flows ask_name,summarize
//   node ts_client.mjs --name Bob --flows ask_name --stdio COMMAND ARGS...

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

function parseArgs(argv) {
  const args = { name: "Alice", color: "blue", flows: "ask_name", idle: 0, reconnectFlows: "" };
  for (let at = 0; at < argv.length; at++) {
    const flag = argv[at];
    if (flag === "--stdio") {
      args.stdio = argv.slice(at + 1);
      break;
    }
    const value = argv[++at];
    if (flag === "--url") args.url = value;
    else if (flag === "--name") args.name = value;
    else if (flag === "--color") args.color = value;
    else if (flag === "--flows") args.flows = value;
    else if (flag === "--idle") args.idle = Number(value);
    else if (flag === "--reconnect-flows") args.reconnectFlows = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const values = { name: args.name, color: args.color, confirm: true };
const out = {
  client: args.name,
  sessions: 0,
  initialize: {},
  results: {},
  errors: {},
  seen: [],
  logs: [],
  progress: [],
};

function textOf(result) {
  return result.content.filter((part) => part.type === "text").map((part) => part.text).join("\n");
}

function newClient() {
  const client = new Client(
    { name: `ts-${args.name}`, version: "1.32.2" },
    { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    out.seen.push({ method: "elicitation/create", params: request.params });
    if (request.params.mode === "url") return { action: "accept" };
    const properties = request.params.requestedSchema?.properties ?? {};
    const content = {};
    for (const key of Object.keys(properties)) if (key in values) content[key] = values[key];
    return { action: "accept", content };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    out.seen.push({ method: "sampling/createMessage", params: request.params });
    return {
      role: "assistant",
      content: { type: "text", text: `Summary by ${args.name}.` },
      model: "scripted",
      stopReason: "endTurn",
    };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    out.seen.push({ method: "roots/list", params: {} });
    return { roots: [{ uri: `file:///${args.name}/root`, name: "Root" }] };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    out.logs.push(notification.params);
  });
  return client;
}

async function call(client, flow, name, toolArgs, options) {
  try {
    const result = await client.callTool({ name, arguments: toolArgs }, undefined, {
      timeout: 60000,
      ...options,
    });
    out.results[flow] = textOf(result);
  } catch (error) {
    out.errors[flow] = `${error.code ?? ""}: ${error.message}`;
  }
}

async function runFlows(client, flows) {
  out.sessions += 1;
  out.initialize = {
    protocolVersion: client.transport?.protocolVersion,
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
  };
  for (const flow of flows) {
    if (flow === "ping") {
      await client.ping();
      out.results[flow] = "pong";
    } else if (flow === "ask_name") await call(client, flow, "ask_name", {});
    else if (flow === "ask_twice") await call(client, flow, "ask_twice", {});
    else if (flow === "url") await call(client, flow, "connect_account", {});
    else if (flow === "summarize") await call(client, flow, "summarize", { text: `text of ${args.name}` });
    else if (flow === "roots") await call(client, flow, "list_workspace_roots", {});
    else if (flow === "logging") {
      await client.setLoggingLevel("info");
      await call(client, flow, "log_and_echo", { text: `log of ${args.name}` });
    } else if (flow === "progress") {
      await call(client, flow, "slow_count", { n: 3 }, {
        onprogress: (progress) => out.progress.push(progress.progress),
      });
    } else if (flow === "idle") {
      await new Promise((resolve) => setTimeout(resolve, args.idle * 1000));
      await call(client, flow, "echo", { text: "after idle" });
    } else throw new Error(`unknown flow ${flow}`);
  }
}

function flowsOf(text) {
  return text.split(",").filter((flow) => flow);
}

async function session(flows) {
  const client = newClient();
  const transport = args.stdio
    ? new StdioClientTransport({ command: args.stdio[0], args: args.stdio.slice(1), stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(args.url));
  await client.connect(transport);
  await runFlows(client, flows);
  if (!args.stdio) {
    try {
      await transport.terminateSession();
    } catch {
      // An expired session cannot be ended twice.
    }
  }
  await client.close();
}

await session(flowsOf(args.flows));
if (flowsOf(args.reconnectFlows).length > 0) {
  // A new session, as a client does after its session was not found (404).
  await session(flowsOf(args.reconnectFlows));
}
process.stdout.write(`${JSON.stringify(out)}\n`);
