"""Real HTTP servers on 127.0.0.1 for tests: the app itself, or a recorded upstream."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from kernelindex.ingest.snapshot import snapshot_transport


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app under uvicorn in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def snapshot_api(root: Path) -> Any:
    """An ASGI app answering the SOL-ExecBench API paths from a snapshot folder."""
    transport = snapshot_transport(root)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        query = scope["query_string"].decode()
        request = httpx.Request("GET", f"http://upstream{scope['path']}?{query}")
        response = transport.handle_request(request)
        body = response.read()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app
