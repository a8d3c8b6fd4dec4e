"""The reference point of PRODUCT.md §10: a bare Starlette route returning fixed bytes.

    BENCH_BODY_FILE=body.json uvicorn bare_starlette:app --app-dir bench

Serves the file's bytes as ``application/json`` at every path, so ``http_throughput.py``
compares a run's JSON permalink with a route that does nothing but send the same body.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

BODY = Path(os.environ["BENCH_BODY_FILE"]).read_bytes()


async def fixed(request: Request) -> Response:
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/{path:path}", fixed)])
