"""Refuse request targets no page can mean: control characters and overlong URLs.

A NUL byte in a query string reaches PostgreSQL as an error (and SQLite as a silent
mismatch), so it is stopped here, once, for every route.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

MAX_TARGET_BYTES = 8192
CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class RequestGuard:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        query: bytes = scope.get("query_string", b"")
        problem = None
        if len(raw_path) + len(query) > MAX_TARGET_BYTES:
            problem = (414, "URI too long", f"The address is longer than {MAX_TARGET_BYTES} bytes.")
        elif CONTROL.search(unquote_to_bytes(raw_path)) or CONTROL.search(unquote_to_bytes(query.replace(b"+", b" "))):
            problem = (
                400,
                "Bad request",
                "The address contains control characters (such as %00), which no page accepts.",
            )
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, title, detail = problem
        body = json.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
