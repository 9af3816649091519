"""A legacy MCP server over the old HTTP+SSE transport, for mcp-migrate's proxy tests.

Built on the official Python SDK (FastMCP, mcp 1.30.0) and served with the HTTP+SSE
transport of protocol 2024-11-05: a client GETs `/sse`, the first event (`endpoint`) gives
the URL to POST its messages to (`/messages/?session_id=...`), and every server message
(responses included) arrives as a `message` event on that GET stream.

Like the Rust fixture `tests/legacy-server`, whose tool names, arguments and result texts it
mirrors, it deliberately uses the legacy push-style APIs: tools send server-initiated requests
(elicitation, sampling, roots) in the middle of their own `tools/call` and await the answers,
and send log and progress notifications. Do not copy it into a new server.

With `--transport streamable-http` the same tools are served over legacy Streamable HTTP at
`/mcp` (stateful sessions, SSE responses). Then `ask_name` and `ask_twice` (`ctx.elicit`) send
their requests on the call's own POST response stream, while `summarize` and
`list_workspace_roots` (`ctx.session.create_message` / `list_roots`, no related request) send
theirs on the session's GET stream: the two behaviours the proxy must tell apart.

Usage: server.py [--host 127.0.0.1] --port N [--transport sse|streamable-http], or
server.py --transport stdio (a stdio server, spawned by the proxy). Nothing is
written to stdout; logs go to stderr.
"""

import argparse
import asyncio
import sys
from typing import Annotated

from pydantic import BaseModel, Field, ValidationError

from mcp.server.elicitation import AcceptedElicitation, DeclinedElicitation
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent

# The largest `n` that `slow_count` accepts.
MAX_COUNT = 100

Text = Annotated[str, Field(description="The text to work on.")]

mcp = FastMCP(
    "mcp-legacy-sse-fixture-server",
    instructions="Legacy push-style fixture server (HTTP+SSE) for mcp-migrate tests.",
)


class UserName(BaseModel):
    """Form asked for by `ask_name` and `ask_twice`."""

    name: str = Field(description="Your name.")


class FavoriteColor(BaseModel):
    """Second form of `ask_twice`."""

    color: str = Field(description="Your favourite colour.")


async def elicit(ctx: Context, message: str, schema: type[BaseModel]):
    """A form elicitation (legacy `elicitation/create`): `(answer, None)` or `(None, why)`."""
    try:
        result = await ctx.elicit(message=message, schema=schema)
    except ValidationError:
        raise
    except ValueError:
        # The SDK raises this for an `accept` without content.
        return None, "the reply was empty"
    if isinstance(result, AcceptedElicitation):
        return result.data, None
    if isinstance(result, DeclinedElicitation):
        return None, "the user declined"
    return None, "the user cancelled"


# Tool results are plain text content: no output schema, no structured content.
tool = mcp.tool(structured_output=False)


@tool
def echo(text: Text) -> str:
    """Return the text unchanged"""
    return text


@tool
async def ask_name(ctx: Context) -> str:
    """Ask the user for their name (form elicitation) and greet them"""
    user, why = await elicit(ctx, "What is your name?", UserName)
    if user is None:
        return f"No name given: {why}."
    return f"Hello, {user.name}!"


@tool
async def summarize(text: Text, ctx: Context) -> str:
    """Summarize the text with the client's LLM (sampling)"""
    prompt = f"Summarize briefly:\n{text}"
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
    )
    if not isinstance(result.content, TextContent):
        raise ValueError("the sampled message has no text")
    return result.content.text


@tool
async def list_workspace_roots(ctx: Context) -> str:
    """List the client's workspace roots, one URI per line"""
    result = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in result.roots)


@tool
async def ask_twice(ctx: Context) -> str:
    """Ask for a name, then for a favourite colour (two elicitations)"""
    user, why = await elicit(ctx, "What is your name?", UserName)
    if user is None:
        return f"No name given: {why}."
    question = f"{user.name}, what is your favourite colour?"
    colour, why = await elicit(ctx, question, FavoriteColor)
    if colour is None:
        return f"No colour given: {why}."
    return f"{user.name} likes {colour.color}"


@tool
async def log_and_echo(text: Text, ctx: Context) -> str:
    """Send an info log notification, then return the text"""
    # Legacy `notifications/message`, with the Rust fixture's data and logger name.
    await ctx.info({"tool": "log_and_echo", "text": text}, logger_name="legacy-fixture")
    return text


@tool
async def slow_count(
    n: Annotated[int, Field(description="How many progress notifications to send (at most 100).")],
    ctx: Context,
) -> str:
    """Send n progress notifications, then return "counted n\""""
    if n > MAX_COUNT:
        raise ValueError(f"n must be at most {MAX_COUNT}")
    # Progress is only reported when the client asked for it (the SDK checks the token).
    for i in range(1, n + 1):
        await asyncio.sleep(0.02)
        await ctx.report_progress(i, n, f"{i}/{n}")
    return f"counted {n}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, help="port to listen on (HTTP transports)")
    parser.add_argument(
        "--transport",
        choices=["sse", "streamable-http", "stdio"],
        default="sse",
        help="legacy transport",
    )
    args = parser.parse_args()
    if args.transport == "stdio":
        # stdout is the protocol's: nothing else may write there.
        mcp.settings.log_level = "WARNING"
        mcp.run(transport="stdio")
        return
    if args.port is None:
        parser.error("--port is required for the HTTP transports")
    mcp.settings.host = args.host
    mcp.settings.port = args.port
    # Thousands of paused calls at once: uvicorn's access log would dominate the run.
    mcp.settings.log_level = "WARNING"
    # uvicorn's access log goes to stdout: send it, and anything else, to stderr.
    sys.stdout = sys.stderr
    mcp.run(transport=args.transport)


if __name__ == "__main__":
    main()
