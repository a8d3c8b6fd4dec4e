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

from kernelindex.ingest import github
from kernelindex.ingest.snapshot import snapshot_transport


def free_port() -> int:
    """A port free now, for a server in another process (which may lose it to a race; a server
    in this process takes its socket from ``serving`` instead)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app under uvicorn in a thread, on a socket bound to port 0 (so parallel
    test workers never collide); yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
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
        sock.close()


def transport_app(transport: httpx.MockTransport, host: str = "upstream") -> Any:
    """An ASGI app answering every request with ``transport``, as if sent to ``host``."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        query = scope["query_string"].decode()
        request = httpx.Request("GET", f"http://{host}{scope['path']}?{query}")
        response = transport.handle_request(request)
        body = response.read()
        content_type = response.headers.get("content-type", "application/octet-stream").encode()
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def snapshot_api(root: Path) -> Any:
    """An ASGI app answering the SOL-ExecBench API paths from a snapshot folder."""
    return transport_app(snapshot_transport(root))


@contextmanager
def github_serving(root: Path, owner: str, repo: str) -> Iterator[tuple[str, str]]:
    """A recorded GitHub snapshot served on 127.0.0.1 as two real hosts, the REST API and
    the raw-file host; yields their base URLs ``(api_url, raw_url)``."""
    with github_serving_repos([(root, owner, repo)]) as urls:
        yield urls


@contextmanager
def github_serving_repos(repos: list[tuple[Path, str, str]]) -> Iterator[tuple[str, str]]:
    """Several recorded repositories ``(snapshot folder, owner, repo)`` behind one API host and
    one raw host, as GitHub serves them all; yields ``(api_url, raw_url)``."""
    transports = {f"{owner}/{repo}": github.snapshot_transport(root, owner, repo) for root, owner, repo in repos}

    def handle(request: httpx.Request) -> httpx.Response:
        parts = request.url.path.strip("/").split("/")
        repository = "/".join(parts[1:3] if parts[0] == "repos" else parts[0:2])
        transport = transports.get(repository)
        return transport.handle_request(request) if transport else httpx.Response(404, text="404: Not Found")

    transport = httpx.MockTransport(handle)
    api_host, raw_host = httpx.URL(github.SNAPSHOT_API).host, httpx.URL(github.SNAPSHOT_RAW).host
    with serving(transport_app(transport, api_host)) as api_url, serving(transport_app(transport, raw_host)) as raw_url:
        yield api_url, raw_url
