"""Refuse requests no page can mean: control characters, overlong URLs, oversized or slow
bodies; and answer ``HEAD`` wherever ``GET`` is answered.

A NUL byte in a query string reaches PostgreSQL as an error (and SQLite as a silent
mismatch), so it is stopped here, once, for every route.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex import urls
from kernelindex.submissions import document
from kernelindex.web.errors import wants_problem_json

MAX_TARGET_BYTES = 8192
# Every C0 control and DEL, CR, LF and TAB included: no address of the site holds one, and
# a CR or LF echoed into a header or a log line would split it.
CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · KernelIndex</title><link rel="stylesheet" href="/static/kernelindex.css"></head>
<body><main><section class="error"><p class="eyebrow">HTTP {status}</p><h1>{title}</h1><p>{detail}</p>
<p><a href="/">Back to all workloads</a></p></section></main></body></html>
"""


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
        await _refuse(scope, send, *problem)


async def _refuse(scope: Scope, send: Send, status: int, title: str, detail: str, check: str | None = None) -> None:
    """Answer without reaching the router: problem JSON (naming the ``check`` that refused the request,
    where one is given), or a page that stands alone (no base.html)."""
    # An API path answers in problem JSON whatever it asked for; a form (``/submit``) only when asked.
    if (check is not None and scope["path"].startswith(urls.API)) or wants_problem_json(Request(scope)):
        problem = {"type": "about:blank", "title": title, "status": status, "detail": detail}
        body = json.dumps(problem | ({"check": check} if check else {})).encode()
        content_type = b"application/problem+json"
    else:
        body = PAGE.format(status=status, title=html.escape(title), detail=html.escape(detail)).encode()
        content_type = b"text/html; charset=utf-8"
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


MAX_BODY_BYTES = 64 * 1024
# A signed rerun bundle carries every raw sample: the largest shipped one is 190,819 bytes, and an
# upload may be up to four times that (768 KiB); every other request keeps the general limit.
MAX_BUNDLE_UPLOAD_BYTES = 768 * 1024
# Submitted runs carry four manifests and a figure per case; the form sends the document URL-encoded
# (up to three bytes for one). Each such route names its own size check in the problem JSON.
BODY_LIMITS_BY_PATH: dict[str, tuple[int, str | None]] = {
    urls.api_reruns(): (MAX_BUNDLE_UPLOAD_BYTES, "body-size"),
    urls.api_submissions(): (document.MAX_BYTES, "size"),
    urls.submit(): (3 * document.MAX_BYTES + 4096, "size"),
}
# The whole body, not each read: a client dripping a byte at a time is cut off all the same.
BODY_TIMEOUT_S = 30.0


class BodyLimit:
    """Refuse request bodies over ``MAX_BODY_BYTES`` (413; over ``BODY_LIMITS_BY_PATH``'s limit at
    the paths it names), declared or streamed, and bodies not received whole within ``timeout_s`` of
    the first read (408)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S):
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, check = BODY_LIMITS_BY_PATH.get(scope["path"], (self.max_bytes, None))
        too_large = (413, "Request too large", f"Requests are limited to {limit} bytes.", check)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _refuse(scope, send, *too_large)
            return
        received = 0
        deadline: float | None = None

        async def counted() -> Message:
            nonlocal received, deadline
            deadline = deadline or time.monotonic() + self.timeout_s
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise TooSlow() from None
            received += len(message.get("body", b""))
            if received > limit:
                raise TooLarge()
            return message

        try:
            await self.app(scope, counted, send)
        except TooLarge:
            await _refuse(scope, send, *too_large)
        except TooSlow:
            detail = f"The request's body did not arrive within {self.timeout_s:g} seconds."
            await _refuse(scope, send, 408, "Request timeout", detail)


class TooLarge(Exception):
    pass


class TooSlow(Exception):
    pass


class HeadAsGet:
    """Answer ``HEAD`` as ``GET`` without the body (RFC 9110 §9.3.2), on every route: link
    checkers and uptime probes ask with ``HEAD``. The headers, ``Content-Length`` included,
    are those the ``GET`` would have."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)
