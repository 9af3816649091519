"""FastMCP's own translating proxy, for bench/sdk_backends.sh: `create_proxy(URL, mode="legacy")`
(fastmcp 4.1.6: a 2026-07-28 front, the legacy handshake era pinned on its backend), served over
Streamable HTTP on a socket bound here, so that the port can be 0.

Usage: fastmcp_proxy.py LEGACY_URL [--listen 127.0.0.1:0]
Prints `listening on http://ADDR/mcp` once it accepts connections.
"""

import argparse
import asyncio
import socket

import uvicorn
from fastmcp.server import create_proxy


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--listen", default="127.0.0.1:0")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(1024)
    bound_host, bound_port = sock.getsockname()[:2]
    proxy = create_proxy(args.url, mode="legacy", name="fastmcp-proxy")
    app = proxy.http_app(path="/mcp")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        print(f"listening on http://{bound_host}:{bound_port}/mcp", flush=True)

    await asyncio.gather(server.serve(sockets=[sock]), announce())


if __name__ == "__main__":
    asyncio.run(main())
