"""A hostile upstream for tests: a real HTTP server on 127.0.0.1 whose answers a test scripts.

``hostile_upstream()`` starts a threaded ``http.server`` on an ephemeral port and yields a
``HostileUpstream``: every request goes to the first route whose path prefix matches, and
anything unrouted to ``fallback`` (by default a ``FakeUpstream``, the SOL-ExecBench API built
from the bundled snapshot's real kernels, so an ingest can first store good figures). A route
answers with a ``Reply``: a status, headers, and a body given whole or as chunks (a generator,
so a huge body is produced while it is sent and never held), with a pause between chunks for a
slow drip. The canned misbehaviours below cover what the ingest must survive: endless
pagination, a total that keeps moving ahead, huge bodies, ``Retry-After: 999999``, a slow
drip, JSON nested a hundred thousand deep and a listing of a million kernels generated cheaply.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from tests.upstream import FakeUpstream


@dataclass
class Reply:
    """One answer: ``body`` whole, or chunks sent one by one with ``pause_s`` before each."""

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    pause_s: float = 0.0


Route = Callable[[str, dict[str, str]], Reply | None]


def json_reply(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(value).encode(), {"Content-Type": "application/json", **(headers or {})})


def from_fake(upstream: FakeUpstream) -> Route:
    """Answers as ``upstream`` (the SOL-ExecBench API of ``tests/upstream.py``) would."""

    def answer(path: str, query: dict[str, str]) -> Reply:
        request = httpx.Request("GET", "http://upstream.test" + path, params=query)
        response = upstream._handle(request)
        return Reply(response.status_code, response.read(), {"Content-Type": "application/json"})

    return answer


# --- Canned misbehaviours ------------------------------------------------------------


def endless_submissions(kernel_id: int, per_page_bytes: int = 0, moving_total: bool = True) -> Route:
    """``/submissions`` of ``kernel_id`` without end: every page holds new submissions (fresh ids)
    and, with ``moving_total``, a total always one page ahead. ``per_page_bytes`` pads each page
    with an ``error_log`` that long, so the pages weigh what a test needs."""
    counter = itertools.count(10_000_000)

    def answer(path: str, query: dict[str, str]) -> Reply | None:
        if not path.endswith("/submissions") or query.get("kernel_id") != str(kernel_id):
            return None
        offset, limit = int(query.get("offset", 0)), int(query.get("limit", 100))
        padding = "x" * (per_page_bytes // max(limit, 1))
        rows = [_submission(next(counter), kernel_id, padding) for _ in range(limit)]
        total = offset + 2 * limit if moving_total else 10**9
        return json_reply({"data": {"submissions": rows, "total": total, "offset": offset, "limit": limit}})

    return answer


def _submission(number: int, kernel_id: int, padding: str) -> dict[str, Any]:
    return {
        "id": number,
        "username": "someone",
        "kernel_id": kernel_id,
        "status": "completed",
        "is_correct": True,
        "sol_score": 0.5,
        "latency_ms": 0.125,
        "gpu_type": "B200",
        "evaluation_stack_version": "v1",
        "error_log": padding,
    }


def huge_body(total_bytes: int, chunk_bytes: int = 1 << 16, declare_length: bool = False) -> Reply:
    """A body of ``total_bytes`` (spaces, then nothing useful), produced chunk by chunk as it is
    sent; without ``declare_length`` no Content-Length warns the client."""

    def chunks() -> Iterator[bytes]:
        sent = 0
        while sent < total_bytes:
            size = min(chunk_bytes, total_bytes - sent)
            sent += size
            yield b" " * size

    headers = {"Content-Type": "application/json"}
    if declare_length:
        headers["Content-Length"] = str(total_bytes)
    return Reply(200, chunks(), headers)


def slow_drip(pause_s: float = 0.2, forever: bool = True) -> Reply:
    """A body one byte at a time, ``pause_s`` apart, without end (or for a few bytes)."""
    source = itertools.repeat(b" ") if forever else iter([b"{", b"}"])
    return Reply(200, source, {"Content-Type": "application/json"}, pause_s)


def deep_json(depth: int = 100_000) -> Reply:
    """Valid JSON nested ``depth`` lists deep, inside the ``data`` wrapper."""
    return Reply(200, b'{"data": ' + b"[" * depth + b"]" * depth + b"}", {"Content-Type": "application/json"})


def many_kernels(count: int) -> Reply:
    """A ``/kernels`` listing of ``count`` kernels, built as bytes in one pass."""
    entries = b",".join(b'{"id":%d,"name":"k%d"}' % (number, number) for number in range(1, count + 1))
    return Reply(200, b'{"data":{"kernels":[' + entries + b"]}}", {"Content-Type": "application/json"})


def rate_limited(retry_after: str = "999999", status: int = 429) -> Reply:
    return json_reply({"message": "slow down"}, status, {"Retry-After": retry_after})


# --- The server ----------------------------------------------------------------------


class HostileUpstream:
    """The scripted server: ``route(prefix, answer)`` adds a route, ``clear()`` drops them all."""

    def __init__(self, url: str, fallback: Route):
        self.url = url
        self.fallback = fallback
        self.routes: list[tuple[str, Route]] = []
        self.requests: list[str] = []
        self.lock = threading.Lock()

    def route(self, prefix: str, answer: Route | Reply) -> None:
        """Answer paths starting with ``prefix`` (after the base path) with ``answer``: a fixed
        ``Reply`` (sent anew for each request) or a function that may decline with ``None``."""
        if isinstance(answer, Reply):
            fixed = answer

            def answer(path: str, query: dict[str, str]) -> Reply:
                return fixed

        self.routes.append((prefix, answer))

    def clear(self) -> None:
        self.routes.clear()

    def answer(self, path: str, query: dict[str, str]) -> Reply:
        with self.lock:
            self.requests.append(path)
        for prefix, route in list(self.routes):
            if path.startswith(prefix) and (reply := route(path, query)) is not None:
                return reply
        reply = self.fallback(path, query)
        assert reply is not None
        return reply


@contextmanager
def hostile_upstream(fallback: Route | None = None) -> Iterator[HostileUpstream]:
    """A ``HostileUpstream`` serving on 127.0.0.1 (an ephemeral port) in a thread; its base URL
    is ``.url`` (``…/api`` for the SOL-ExecBench paths)."""
    upstream: HostileUpstream

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # a body ends when the connection closes: no length needed

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            reply = upstream.answer(parts.path, dict(parse_qsl(parts.query)))
            try:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Connection", "close")
                self.end_headers()
                chunks = [reply.body] if isinstance(reply.body, bytes) else reply.body
                for chunk in chunks:
                    if reply.pause_s:
                        time.sleep(reply.pause_s)
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what a bounded client does

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    upstream = HostileUpstream(f"http://127.0.0.1:{server.server_address[1]}", fallback or from_fake(FakeUpstream()))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
