"""Median server time of pages, measured in process (no network, no client overhead).

    .venv/bin/python bench/page_time.py [--database-url URL] [--runs 200] [--no-cache] [PATH ...]

Loads the bundled snapshot into a temporary SQLite file unless --database-url names a
loaded store, then requests each path through the ASGI app and prints the median and
min–max of the time from request to last body byte. With the response cache on (the
default, as served), repeated requests are answered from it after one read of the
catalogue version; ``--no-cache`` turns it off, so every request renders the page.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import load_average, request_times_ms

from kernelindex.app import create_app
from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings

DEFAULT_PATHS = [
    "/workloads/l1-040-conv2d-residual-block",
    "/workloads/l1-040-conv2d-residual-block.json",
    "/runs/sol-submission-16893",
    "/runs/sol-submission-16893.json",
    "/",
]


async def measure(settings: Settings, paths: list[str], runs: int) -> None:
    print(f"response cache {'on' if settings.response_cache_mb else 'off'}; {load_average()}")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            for path in paths:
                samples = await request_times_ms(client, path, runs)
                median, low, high = statistics.median(samples), min(samples), max(samples)
                print(f"{path}: median {median:.2f} ms (min {low:.2f}, max {high:.2f}, n={runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--no-cache", action="store_true", help="render every request (response cache off)")
    parser.add_argument("paths", nargs="*", default=DEFAULT_PATHS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url
        if url is None:
            url = f"sqlite:///{Path(folder) / 'bench.db'}"
            migrate.upgrade(url)
            engine = make_engine(url)
            ingest(make_sessionmaker(engine), Settings(database_url=url), "sol-execbench", snapshot=BUNDLED_SNAPSHOT)
            engine.dispose()
        settings = Settings(database_url=url, response_cache_mb=0 if args.no_cache else 64)
        asyncio.run(measure(settings, args.paths, args.runs))


if __name__ == "__main__":
    main()
