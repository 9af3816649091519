"""A legacy MCP client on the official Python SDK 1.x (`mcp`), for mcp-migrate's proxy tests.

It opens a legacy session (`initialize`) over Streamable HTTP (`--url`) or stdio (`--stdio CMD
ARGS...`), runs the flows named by `--flows` against the legacy fixture server behind the proxy,
answering the server's requests (elicitation, sampling, roots) as the client called `--name`
would, and prints one JSON object on stdout: what it got and what it was asked.
"""

import argparse
import json
import sys
from datetime import timedelta

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


class Client:
    def __init__(self, name: str, color: str):
        self.name = name
        self.values = {"name": name, "color": color, "confirm": True}
        self.seen: list[dict] = []
        self.logs: list[dict] = []
        self.progress: list[float] = []
        self.results: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.sessions = 0
        self.initialize: dict = {}

    async def on_elicit(self, context, params):
        dumped = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.seen.append({"method": "elicitation/create", "params": dumped})
        if getattr(params, "mode", None) == "url":
            return types.ElicitResult(action="accept")
        properties = (getattr(params, "requestedSchema", None) or {}).get("properties", {})
        content = {key: self.values[key] for key in properties if key in self.values}
        return types.ElicitResult(action="accept", content=content)

    async def on_sample(self, context, params):
        self.seen.append(
            {
                "method": "sampling/createMessage",
                "params": params.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
        )
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"Summary by {self.name}."),
            model="scripted",
            stopReason="endTurn",
        )

    async def on_roots(self, context):
        self.seen.append({"method": "roots/list", "params": {}})
        return types.ListRootsResult(
            roots=[types.Root(uri=f"file:///{self.name}/root", name="Root")]
        )

    async def on_log(self, params):
        self.logs.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))

    def session(self, read, write) -> ClientSession:
        return ClientSession(
            read,
            write,
            read_timeout_seconds=timedelta(seconds=60),
            sampling_callback=self.on_sample,
            elicitation_callback=self.on_elicit,
            list_roots_callback=self.on_roots,
            logging_callback=self.on_log,
            client_info=types.Implementation(name=f"py-{self.name}", version="1.30.0"),
        )

    async def call(self, session: ClientSession, flow: str, tool: str, arguments: dict, **kw):
        try:
            result = await session.call_tool(tool, arguments, **kw)
            self.results[flow] = text_of(result)
        except McpError as error:
            self.errors[flow] = f"{error.error.code}: {error.error.message}"

    async def run_flows(self, session: ClientSession, flows: list[str], idle: float):
        initialized = await session.initialize()
        self.sessions += 1
        self.initialize = initialized.model_dump(mode="json", by_alias=True, exclude_none=True)
        for flow in flows:
            if flow == "ping":
                await session.send_ping()
                self.results[flow] = "pong"
            elif flow == "ask_name":
                await self.call(session, flow, "ask_name", {})
            elif flow == "ask_twice":
                await self.call(session, flow, "ask_twice", {})
            elif flow == "url":
                await self.call(session, flow, "connect_account", {})
            elif flow == "summarize":
                await self.call(session, flow, "summarize", {"text": f"text of {self.name}"})
            elif flow == "roots":
                await self.call(session, flow, "list_workspace_roots", {})
            elif flow == "logging":
                await session.set_logging_level("info")
                await self.call(session, flow, "log_and_echo", {"text": f"log of {self.name}"})
            elif flow == "progress":

                async def on_progress(progress, total, message):
                    self.progress.append(progress)

                await self.call(session, flow, "slow_count", {"n": 3}, progress_callback=on_progress)
            elif flow == "idle":
                # Wait past the proxy's idle timeout: the next call finds the session gone.
                await anyio.sleep(idle)
                await self.call(session, flow, "echo", {"text": "after idle"})
            else:
                raise SystemExit(f"unknown flow {flow}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--name", default="Alice")
    parser.add_argument("--color", default="blue")
    parser.add_argument("--flows", default="ask_name")
    parser.add_argument("--idle", type=float, default=0)
    parser.add_argument("--reconnect-flows", default="")
    # `--stdio COMMAND ARGS...` takes everything after it (the proxy's own `--` included).
    argv = sys.argv[1:]
    stdio = argv[argv.index("--stdio") + 1 :] if "--stdio" in argv else None
    args = parser.parse_args(argv[: argv.index("--stdio")] if stdio is not None else argv)
    args.stdio = stdio
    client = Client(args.name, args.color)
    flows = [flow for flow in args.flows.split(",") if flow]
    if args.stdio:
        server = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
        async with stdio_client(server) as (read, write):
            async with client.session(read, write) as session:
                await client.run_flows(session, flows, args.idle)
    else:
        async with streamablehttp_client(args.url) as (read, write, _):
            async with client.session(read, write) as session:
                await client.run_flows(session, flows, args.idle)
        again = [flow for flow in args.reconnect_flows.split(",") if flow]
        if again:
            # A new session, as a client does after "Session terminated".
            async with streamablehttp_client(args.url) as (read, write, _):
                async with client.session(read, write) as session:
                    await client.run_flows(session, again, args.idle)
    json.dump(
        {
            "client": client.name,
            "sessions": client.sessions,
            "initialize": client.initialize,
            "results": client.results,
            "errors": client.errors,
            "seen": client.seen,
            "logs": client.logs,
            "progress": client.progress,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    anyio.run(main)
