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

With `--jwks FILE --issuer ISS --audience AUD` the tokens are JWTs instead (verified with PyJWT,
a dependency of the SDK, against the keys of the JWKS file): the user is the token's `sub`, and
the SDK's session owner its client, issuer and subject, so a refreshed token of the same user
keeps using the session.

Usage: protected_server.py --port N --resource-url URL [--jwks FILE --issuer ISS --audience AUD].
Logs go to stderr.
"""

import argparse
import json
import sys

import jwt

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


class JwtTokens(TokenVerifier):
    """JWTs signed by a key of a JWKS file, for one issuer and audience."""

    def __init__(self, jwks_file: str, issuer: str, audience: str) -> None:
        with open(jwks_file, encoding="utf-8") as file:
            self.keys = jwt.PyJWKSet.from_dict(json.load(file))
        self.issuer = issuer
        self.audience = audience

    def claims(self, token: str) -> dict | None:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = next(key for key in self.keys.keys if key.key_id == kid)
            return jwt.decode(
                token,
                key=key,
                algorithms=[key.algorithm_name],
                issuer=self.issuer,
                audience=self.audience,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, StopIteration):
            return None

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = self.claims(token)
        if claims is None:
            return None
        return AccessToken(
            token=token,
            client_id=claims.get("client_id", "mcp-migrate-tests"),
            scopes=["mcp"],
            expires_at=claims["exp"],
            subject=claims["sub"],
            claims=claims,
        )


VERIFIER: TokenVerifier = FixedTokens()


class UserName(BaseModel):
    """The form `ask_name` sends."""

    name: str = Field(description="Your name.")


def user_of(ctx: Context) -> str:
    """The user of the token on the HTTP request that carries this call."""
    request = ctx.request_context.request
    header = request.headers.get("authorization", "") if request is not None else ""
    token = header.removeprefix("Bearer ").strip()
    if isinstance(VERIFIER, JwtTokens):
        claims = VERIFIER.claims(token)
        return claims["sub"] if claims else "unverified token"
    return USERS.get(token, f"unknown token {token!r}")


def build(resource_url: str, port: int) -> FastMCP:
    mcp = FastMCP(
        "mcp-migrate-protected-server",
        token_verifier=VERIFIER,
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
    parser.add_argument("--jwks", help="verify JWTs with the keys of this JWKS file")
    parser.add_argument("--issuer", help="the JWTs' issuer (with --jwks)")
    parser.add_argument("--audience", help="the JWTs' audience (with --jwks)")
    args = parser.parse_args()
    sys.stdout = sys.stderr
    global VERIFIER
    if args.jwks:
        VERIFIER = JwtTokens(args.jwks, args.issuer, args.audience)
    build(args.resource_url, args.port).run(transport="streamable-http")


if __name__ == "__main__":
    main()
