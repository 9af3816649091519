"""A legacy MCP server protected the way the MCP authorization spec and the Python SDK do it,
for mcp-migrate's proxy tests of authenticated servers (docs/proxy/deployment.md).

Built on the official Python SDK (FastMCP, mcp 1.x) over legacy Streamable HTTP at `/mcp`, as a
resource server: a `TokenVerifier` accepts two fixed bearer tokens, one per user
(`alice-token` → alice, `bob-token` → bob); `AuthSettings.resource_server_url` names the URL
given with `--resource-url`, so the SDK serves `/.well-known/oauth-protected-resource/mcp` and
answers a request without a valid token `401` with
`WWW-Authenticate: Bearer ... resource_metadata="..."`. Each legacy session belongs to the token
that opened it (the SDK refuses it to any other).

Tools: `whoami` says which user the request carrying the call runs as (from the token on that
very request); `ask_name` elicits a name with the legacy push-style `ctx.elicit` and answers
`"<user>: hello <name>"`.

Usage: protected_server.py --port N --resource-url URL. Logs go to stderr.
"""

import argparse
import sys

from pydantic import BaseModel, Field

from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.elicitation import AcceptedElicitation
from mcp.server.fastmcp import Context, FastMCP

USERS = {"alice-token": "alice", "bob-token": "bob"}


class FixedTokens(TokenVerifier):
    """Two fixed test tokens, one per user."""

    async def verify_token(self, token: str) -> AccessToken | None:
        user = USERS.get(token)
        if user is None:
            return None
        return AccessToken(token=token, client_id=user, scopes=["mcp"], subject=user)


class UserName(BaseModel):
    """The form `ask_name` sends."""

    name: str = Field(description="Your name.")


def user_of(ctx: Context) -> str:
    """The user of the token on the HTTP request that carries this call."""
    request = ctx.request_context.request
    header = request.headers.get("authorization", "") if request is not None else ""
    token = header.removeprefix("Bearer ").strip()
    return USERS.get(token, f"unknown token {token!r}")


def build(resource_url: str, port: int) -> FastMCP:
    mcp = FastMCP(
        "mcp-migrate-protected-server",
        token_verifier=FixedTokens(),
        auth=AuthSettings(
            issuer_url="https://auth.example.com",
            resource_server_url=resource_url,
            required_scopes=["mcp"],
            validate_token_resource=False,
        ),
        host="127.0.0.1",
        port=port,
        log_level="WARNING",
    )

    @mcp.tool()
    async def whoami(ctx: Context) -> str:
        """Say which user this call runs as"""
        return user_of(ctx)

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the user's name (elicitation), then greet them as the caller"""
        result = await ctx.elicit(message="What is your name?", schema=UserName)
        if isinstance(result, AcceptedElicitation):
            return f"{user_of(ctx)}: hello {result.data.name}"
        return f"{user_of(ctx)}: no name ({result.action})"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="port to listen on")
    parser.add_argument("--resource-url", required=True, help="AuthSettings.resource_server_url")
    args = parser.parse_args()
    sys.stdout = sys.stderr
    build(args.resource_url, args.port).run(transport="streamable-http")


if __name__ == "__main__":
    main()
