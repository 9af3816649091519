"""A legacy MCP server on the official Python SDK (FastMCP, mcp 1.30.0) with the tools, prompts
and resources that the official conformance suite calls on a server under test.

It is the Python backend of the proxy's conformance run (tests/tests/conformance_sdk_backends.rs)
and mirrors the rmcp backend tests/conformance-server (names, arguments, outputs). It is written
the way FastMCP servers were written before 2026-07-28: tools that need something from the
client push `elicitation/create`, `sampling/createMessage` or `roots/list` in the middle of their
own call and await the answer; logs and progress go out with `ctx.log` / `ctx.report_progress`
(which, in the Python SDK, ignore the level a client set). Turning that into 2026-07-28 is the
proxy's job. Do not copy it into a new server.

Elicitation and sampling requests carry the proxy's `inputRequests` key hint in
`_meta["io.github.mcp-migrate/inputKey"]` (the suite expects `user_name` and friends);
`roots/list` goes out as FastMCP sends it (no `_meta`, not tied to the call: over Streamable
HTTP it travels on the session's standalone GET stream).

Usage: conformance_server.py --transport stdio
       conformance_server.py --transport http --listen 127.0.0.1:0
(HTTP prints `listening on http://ADDR/mcp` on stdout once it accepts connections.)
"""

import argparse
import asyncio
import json
import socket
import sys
from typing import Annotated, Any

from pydantic import Field

import mcp.types as types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts.base import UserMessage
from mcp.shared.message import ServerMessageMetadata

INPUT_KEY_HINT = "io.github.mcp-migrate/inputKey"
TEST_IMAGE_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

server = FastMCP("mcp-legacy-conformance-server-python")


def tool(description: str):
    """A FastMCP tool with plain content results (no output schema, no structured content)."""
    return server.tool(description=description, structured_output=False)


def text(value: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=value)]


# ---- Pushes to the client (legacy, mid-call) ----


def hinted(key: str | None) -> dict[str, Any] | None:
    return {INPUT_KEY_HINT: key} if key else None


async def ask(ctx: Context, key: str | None, message: str, schema: dict) -> types.ElicitResult:
    """A form elicitation tied to the current call, as `ctx.elicit` sends it, plus the key hint."""
    params = types.ElicitRequestFormParams(message=message, requestedSchema=schema, _meta=hinted(key))
    return await ctx.session.send_request(
        types.ServerRequest(types.ElicitRequest(params=params)),
        types.ElicitResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )


def accepted(reply: types.ElicitResult, field: str) -> Any:
    if reply.action == "accept" and reply.content:
        return reply.content.get(field)
    return None


NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


async def ask_name(ctx: Context, key: str, message: str) -> str | None:
    return accepted(await ask(ctx, key, message, NAME_SCHEMA), "name")


async def confirm(ctx: Context, key: str) -> bool:
    return accepted(await ask(ctx, key, "Please confirm", OK_SCHEMA), "ok") is True


async def sample(ctx: Context, key: str | None, prompt: str, max_tokens: int) -> str:
    params = types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
        maxTokens=max_tokens,
        _meta=hinted(key),
    )
    result = await ctx.session.send_request(
        types.ServerRequest(types.CreateMessageRequest(params=params)),
        types.CreateMessageResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    content = result.content
    return content.text if isinstance(content, types.TextContent) else "(no text)"


async def roots(ctx: Context) -> list[str]:
    result = await ctx.session.list_roots()
    return [str(root.uri) for root in result.roots]


# ---- tools-call-* (fixed results) ----


@tool(description="Tests simple text content response")
def test_simple_text() -> list[types.ContentBlock]:
    return text("This is a simple text response for testing.")


@tool(description="Tests image content response")
def test_image_content() -> list[types.ContentBlock]:
    return [types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mimeType="image/png")]


@tool(description="Tests audio content response")
def test_audio_content() -> list[types.ContentBlock]:
    return [types.AudioContent(type="audio", data=TEST_AUDIO_BASE64, mimeType="audio/wav")]


def embedded(uri: str, mime_type: str, body: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri=uri, mimeType=mime_type, text=body)
    )


@tool(description="Tests embedded resource content response")
def test_embedded_resource() -> list[types.ContentBlock]:
    return [embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")]


@tool(description="Tests response with multiple content types (text, image, resource)")
def test_multiple_content_types() -> list[types.ContentBlock]:
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mimeType="image/png"),
        embedded(
            "test://mixed-content-resource",
            "application/json",
            json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
        ),
    ]


@tool(description="Tests error response handling")
def test_error_handling() -> types.CallToolResult:
    return types.CallToolResult(isError=True, content=text("This tool intentionally returns an error for testing"))


@tool(description="Tests SSE stream disconnection and client reconnection (SEP-1699)")
def test_reconnection() -> list[types.ContentBlock]:
    return text(
        "Reconnection test completed successfully. If you received this, the client properly "
        "reconnected after stream closure."
    )


@tool(description="Tests tool that emits log messages during execution")
async def test_tool_with_logging(ctx: Context) -> list[types.ContentBlock]:
    for i, message in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
        if i:
            await asyncio.sleep(0.05)
        await ctx.log("info", message, logger_name="conformance-test-server")
    return text("Tool with logging executed successfully")


@tool(description="Tests tool that reports progress notifications")
async def test_tool_with_progress(ctx: Context) -> list[types.ContentBlock]:
    for i, progress in enumerate([0, 50, 100]):
        if i:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
    meta = ctx.request_context.meta
    token = meta.progressToken if meta else None
    return text("no progress token" if token is None else str(token))


@tool(description="Returns the text unchanged")
def echo(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


@tool(description="Greets someone by name")
def greet(name: str) -> list[types.ContentBlock]:
    return text(f"Hello, {name}!")


@tool(description="Echoes the region, which clients mirror into Mcp-Param-Region")
def test_header_param(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
) -> list[types.ContentBlock]:
    return text(f"region: {region}")


# ---- 2025-11-25 push tools ----


@tool(description="Tests server-initiated sampling (LLM completion request)")
async def test_sampling(
    prompt: Annotated[str, Field(description="The prompt to send to the LLM")], ctx: Context
) -> list[types.ContentBlock]:
    return text(f"LLM response: {await sample(ctx, None, prompt, 100)}")


def describe(reply: types.ElicitResult) -> str:
    return json.dumps({"action": reply.action, "content": reply.content}, separators=(",", ":"))


@tool(description="Tests server-initiated elicitation (user input request)")
async def test_elicitation(
    message: Annotated[str, Field(description="The message to show the user")], ctx: Context
) -> list[types.ContentBlock]:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return text(f"User response: {describe(await ask(ctx, None, message, schema))}")


@tool(description="Tests elicitation with default values per SEP-1034")
async def test_elicitation_sep1034_defaults(ctx: Context) -> list[types.ContentBlock]:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    reply = await ask(ctx, None, "Please review and update the form fields with defaults", schema)
    return text(f"Elicitation completed: {describe(reply)}")


@tool(description="Tests elicitation with enum schema improvements per SEP-1330")
async def test_elicitation_sep1330_enums(ctx: Context) -> list[types.ContentBlock]:
    options = ["option1", "option2", "option3"]
    titled = [{"const": o, "title": f"Option {o[-1]}"} for o in options]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": options,
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": titled},
            },
        },
        "required": [],
    }
    reply = await ask(ctx, None, "Please select options from the enum fields", schema)
    return text(f"Elicitation completed: {describe(reply)}")


# ---- 2026-07-28 MRTR scenarios, implemented by legacy pushes ----


@tool(description="Asks for the user's name (elicitation) and greets them")
async def test_input_required_result_elicitation(ctx: Context) -> list[types.ContentBlock]:
    name = await ask_name(ctx, "user_name", "What is your name?")
    return text(f"Hello, {name}!" if name is not None else "No name given.")


@tool(description="Asks the client's LLM for the capital of France (sampling)")
async def test_input_required_result_sampling(ctx: Context) -> list[types.ContentBlock]:
    answer = await sample(ctx, "capital_question", "What is the capital of France?", 100)
    return text(f"Sampling result: {answer}")


@tool(description="Counts the client's roots (roots/list)")
async def test_input_required_result_list_roots(ctx: Context) -> list[types.ContentBlock]:
    return text(f"Found {len(await roots(ctx))} root(s)")


@tool(description="Asks for a confirmation; the paused call is the state")
async def test_input_required_result_request_state(ctx: Context) -> list[types.ContentBlock]:
    ok = await confirm(ctx, "confirm")
    return text("state-ok: the paused call resumed with the confirmation" if ok else "not confirmed")


@tool(description="Elicitation, sampling and roots/list at the same time")
async def test_input_required_result_multiple_inputs(ctx: Context) -> list[types.ContentBlock]:
    name, greeting, listed = await asyncio.gather(
        ask_name(ctx, "user_name", "What is your name?"),
        sample(ctx, "greeting", "Generate a greeting", 50),
        roots(ctx),
    )
    return text(f"Name: {name}; Greeting: {greeting}; Roots: {len(listed)}")


@tool(description="Asks for a name, then for a favourite colour")
async def test_input_required_result_multi_round(ctx: Context) -> list[types.ContentBlock]:
    name = await ask_name(ctx, "step1", "Step 1: What is your name?")
    if name is None:
        return text("No name given.")
    schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    color = accepted(await ask(ctx, "step2", "Step 2: What is your favorite color?", schema), "color")
    return text(f"Multi-round complete for {name} who likes {color}")


@tool(description="Asks for a confirmation (the state must be integrity-protected)")
async def test_input_required_result_tampered_state(ctx: Context) -> list[types.ContentBlock]:
    return text("integrity-ok: confirmed" if await confirm(ctx, "confirm") else "not confirmed")


@tool(description="Asks only for what the client declared (elicitation and/or sampling)")
async def test_input_required_result_capabilities(ctx: Context) -> list[types.ContentBlock]:
    params = ctx.session.client_params
    capabilities = params.capabilities if params else types.ClientCapabilities()
    value_schema = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
    pushes = []
    if capabilities.elicitation is not None:
        pushes.append(("elicit_input", ask(ctx, "elicit_input", "Elicitation input", value_schema)))
    if capabilities.sampling is not None:
        pushes.append(("sample_input", sample(ctx, "sample_input", "Sample request", 50)))
    if not pushes:
        return text("No supported capabilities declared")
    await asyncio.gather(*(push for _, push in pushes))
    return text(f"capabilities-ok: received {','.join(key for key, _ in pushes)}")


# ---- server-stateless diagnostics ----


@tool(description="Needs the client's LLM (sampling)")
async def test_missing_capability(ctx: Context) -> list[types.ContentBlock]:
    return text(f"Sampled: {await sample(ctx, 'completion', 'Say hello', 20)}")


@tool(description="Asks the user something mid-call (elicitation)")
async def test_streaming_elicitation(ctx: Context) -> list[types.ContentBlock]:
    await confirm(ctx, "continue")
    return text("Streaming complete")


@tool(description="Logs a message mid-call")
async def test_logging_tool(ctx: Context) -> list[types.ContentBlock]:
    await ctx.info("Diagnostic trace logging activated")
    return text("Logging evaluated")


# ---- The proxy's end-to-end flows (tests/tests/proxy_sdk_flows.rs) ----


@tool(description="Sends the user to a URL (URL-mode elicitation) mid-call")
async def test_url_elicitation(ctx: Context) -> list[types.ContentBlock]:
    params = types.ElicitRequestURLParams(
        message="Open the link to continue",
        url="https://example.com/consent",
        elicitationId="consent-1",
        _meta=hinted("consent"),
    )
    reply = await ctx.session.send_request(
        types.ServerRequest(types.ElicitRequest(params=params)),
        types.ElicitResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    return text(f"URL elicitation: {reply.action}")


@tool(description="Runs for 5 s unless cancelled")
async def test_cancellable() -> list[types.ContentBlock]:
    for _ in range(100):
        await asyncio.sleep(0.05)
    return text("not cancelled")


@tool(description="Announces a tool list change (notifications/tools/list_changed)")
async def test_trigger_tool_change(ctx: Context) -> list[types.ContentBlock]:
    await ctx.session.send_tool_list_changed()
    return text("tool list change announced")


@tool(description="Announces a prompt list change (notifications/prompts/list_changed)")
async def test_trigger_prompt_change(ctx: Context) -> list[types.ContentBlock]:
    await ctx.session.send_prompt_list_changed()
    return text("prompt list change announced")


# json-schema-2020-12: the raw schema must survive tools/list unchanged, so this tool's schema is
# set by hand rather than derived from the signature.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    structured_output=False,
)
def json_schema_2020_12_tool(**arguments: Any) -> list[types.ContentBlock]:
    return text(f"JSON Schema 2020-12 tool called with: {json.dumps(arguments, separators=(',', ':'))}")


server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = JSON_SCHEMA_2020_12


# ---- Prompts ----


@server.prompt(title="Simple Test Prompt", description="A simple prompt without arguments")
def test_simple_prompt() -> list[UserMessage]:
    return [UserMessage("This is a simple prompt for testing.")]


@server.prompt(title="Prompt With Arguments", description="A prompt with required arguments")
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> list[UserMessage]:
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt(title="Prompt With Embedded Resource", description="A prompt that includes an embedded resource")
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[UserMessage]:
    return [
        UserMessage(embedded(resourceUri, "text/plain", "Embedded resource content for testing.")),
        UserMessage("Please process the embedded resource above."),
    ]


@server.prompt(title="Prompt With Image", description="A prompt that includes image content")
def test_prompt_with_image() -> list[UserMessage]:
    return [
        UserMessage(types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mimeType="image/png")),
        UserMessage("Please analyze the image above."),
    ]


@server.prompt(
    title="Prompt With Context",
    description="Asks the user for context (elicitation) before building the prompt",
)
async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage]:
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    reply = await ask(ctx, "user_context", "What context should the prompt use?", schema)
    return [UserMessage(f"Prompt with context: {accepted(reply, 'context') or 'none'}")]


# ---- Resources ----


@server.resource(
    "test://static-text",
    name="static-text",
    title="Static Text Resource",
    description="A static text resource for testing",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    title="Static Binary Resource",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
)
def static_binary() -> bytes:
    import base64

    return base64.b64decode(TEST_IMAGE_BASE64)


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    title="Watched Resource",
    description="A resource clients may subscribe to",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content"


@server.resource(
    "test://template/{id}/data",
    name="template",
    title="Resource Template",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
def template(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


# ---- Handlers FastMCP has no decorator for (on its low-level server) ----

low_level = server._mcp_server


@server.completion()
async def complete(ref, argument, context) -> types.Completion:
    return types.Completion(values=[], total=0, hasMore=False)


@low_level.set_logging_level()
async def set_logging_level(level: types.LoggingLevel) -> None:
    # Accepted and advertised, as in most FastMCP servers, but `ctx.log` does not consult it.
    print(f"logging level set to {level}", file=sys.stderr)


@low_level.subscribe_resource()
async def subscribe(uri) -> None:
    print(f"subscribed to {uri}", file=sys.stderr)


@low_level.unsubscribe_resource()
async def unsubscribe(uri) -> None:
    print(f"unsubscribed from {uri}", file=sys.stderr)


# ---- Transports ----


async def serve_http(listen: str) -> None:
    import uvicorn

    host, _, port = listen.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(1024)
    bound_host, bound_port = sock.getsockname()[:2]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:
            await asyncio.sleep(0.01)
        print(f"listening on http://{bound_host}:{bound_port}/mcp", flush=True)

    await asyncio.gather(http.serve(sockets=[sock]), announce())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--listen", default="127.0.0.1:0")
    args = parser.parse_args()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        asyncio.run(serve_http(args.listen))


if __name__ == "__main__":
    main()
