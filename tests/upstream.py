"""A fake SOL-ExecBench API for tests, built from real kernels of the bundled snapshot.

Tests change what it serves (``kernels``, ``submissions``) or intercept requests
(``intercept``) to play a misbehaving upstream; nothing leaves the process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from kernelindex.ingest.http import Fetcher
from kernelindex.ingest.sol_execbench import SolExecBench
from kernelindex.paths import BUNDLED_SNAPSHOT

API = BUNDLED_SNAPSHOT / "api"
BASE_URL = "http://upstream.test/api/"


def _read(path: Path) -> Any:
    return json.loads(path.read_text())["data"]


class FakeUpstream:
    def __init__(self, kernel_ids: tuple[int, ...] = (39, 40, 62)):
        self.kernels: dict[int, dict[str, Any]] = {k: _read(API / "kernels" / f"{k}.json") for k in kernel_ids}
        self.submissions: dict[int, list[dict[str, Any]]] = {
            k: _read(API / "submissions" / f"kernel-{k}.json")["submissions"] for k in kernel_ids
        }
        self.totals: dict[int, int] = {}
        # More fields of a kernel's entry in the /kernels listing (e.g. its submission_count).
        self.listing_extra: dict[int, dict[str, Any]] = {}
        self.intercept: Callable[[httpx.Request], httpx.Response | None] | None = None
        self.requests: list[httpx.Request] = []

    def submission(self, kernel_id: int, index: int = 0) -> dict[str, Any]:
        return self.submissions[kernel_id][index]

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.intercept is not None and (response := self.intercept(request)) is not None:
            return response
        path = request.url.path.removeprefix("/api/")
        if path == "kernels":
            listing = [{"id": k, "name": d["name"], **self.listing_extra.get(k, {})} for k, d in self.kernels.items()]
            return httpx.Response(200, json={"data": {"kernels": listing}})
        if path.startswith("kernels/"):
            kernel = self.kernels.get(int(path.split("/")[1]))
            return httpx.Response(200, json={"data": kernel}) if kernel else httpx.Response(404)
        if path == "submissions":
            kernel_id = int(request.url.params["kernel_id"])
            offset, limit = int(request.url.params["offset"]), int(request.url.params["limit"])
            rows = self.submissions.get(kernel_id, [])
            page = {
                "submissions": copy.deepcopy(rows[offset : offset + limit]),
                "total": self.totals.get(kernel_id, len(rows)),
                "offset": offset,
                "limit": limit,
            }
            return httpx.Response(200, json={"data": page})
        return httpx.Response(404)

    def adapter(self, page_limit: int = 2, retries: int = 2) -> SolExecBench:
        client = httpx.Client(transport=httpx.MockTransport(self._handle), base_url=BASE_URL)
        return SolExecBench(Fetcher(client, retries=retries, sleep=lambda _: None), page_limit=page_limit)


Misbehaviour = Callable[[Any, bytes], Awaitable[bool]]


def served(upstream: FakeUpstream, misbehave: Misbehaviour | None = None) -> Any:
    """``upstream`` as an ASGI app, to run under a real HTTP server. ``misbehave(send, path)``
    may answer a request itself at the socket's level (stall, cut the body short) and
    returns whether it did."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path = scope["path"].encode()
        if misbehave is not None and await misbehave(send, path):
            return
        query = scope["query_string"].decode()
        response = upstream._handle(httpx.Request("GET", f"http://upstream.test{scope['path']}?{query}"))
        body = response.read()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app
