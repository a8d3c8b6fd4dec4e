"""The MCP tools over streamable HTTP at ``/mcp``, beside the site (``kernelindex serve --mcp``).

``with_mcp`` wraps the site's ASGI app: requests to ``/mcp`` go to the SDK's streamable HTTP
app, each counted first by ``allow`` (the site's own rate limiter, per client address: a 429
problem beyond it), everything else to the site. The SDK's session manager runs for as long
as the site does (inside its lifespan).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer

PATH = "/mcp"

Asgi = Callable[[dict[str, Any], Any, Any], Any]


async def _too_many(send: Any, message: str) -> None:
    body = json.dumps({"type": "about:blank", "title": "Too many requests", "status": 429, "detail": message}).encode()
    headers = [(b"content-type", b"application/problem+json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 429, "headers": [*headers, (b"retry-after", b"60")]})
    await send({"type": "http.response.body", "body": body})


def with_mcp(
    site: Asgi, server: MCPServer[Any], allow: Callable[[str], bool], refused: str, host: str = "127.0.0.1"
) -> Asgi:
    """``site`` with ``server``'s tools at ``/mcp``; ``allow(client address)`` counts each request."""
    mcp_app = server.streamable_http_app(streamable_http_path=PATH, host=host)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            async with server.session_manager.run():
                await site(scope, receive, send)
            return
        if scope["type"] == "http" and (scope["path"] == PATH or scope["path"].startswith(PATH + "/")):
            client = scope.get("client")
            address = client[0] if client else "unknown"
            # The limiter may write to the database: off the event loop.
            if not await anyio.to_thread.run_sync(allow, address):
                await _too_many(send, refused)
                return
            await mcp_app(scope, receive, send)
            return
        await site(scope, receive, send)

    return app
