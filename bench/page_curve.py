"""Uncached page times across catalogues of different sizes: does a page grow with what it shows or
with what is stored?

    .venv/bin/python bench/page_curve.py [--runs 5] [--workload-runs 61] [--cached] URL [URL ...]

Each URL is a loaded store (``synthetic_catalog.py`` builds them). For each, the same kinds of page
are timed with the response cache off, as ``page_time.py`` times them (in process, median of
``--runs`` after 10 warm-up requests): the leaderboard of its largest workload, the leaderboard of
the workload whose run count is nearest ``--workload-runs`` (the same size in every catalogue, so
its row of the table is the curve the "flat within 2×" target reads), home, and that workload's
fastest run as a page and as JSON. Prints one table, a column per catalogue. With ``--cached``, the
response cache is on, so every timed request after the warm-up is answered from it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

import httpx
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).parent))
from common import load_average, request_times_ms

from kernelindex.app import create_app
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Run, Workload
from kernelindex.settings import Settings


def chosen_paths(url: str, workload_runs: int) -> tuple[int, dict[str, str]]:
    """The catalogue's run count and the path of each kind of page timed."""
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            total = session.scalar(select(func.count()).select_from(Run)) or 0
            counts = session.execute(
                select(Workload.name, func.count(Run.id).label("runs"))
                .join(Run, Run.workload_id == Workload.id)
                .group_by(Workload.id, Workload.name)
            ).all()
            largest = max(counts, key=lambda row: (row.runs, row.name))
            sized = min(counts, key=lambda row: (abs(row.runs - workload_runs), row.name))
            fastest = session.scalar(
                select(Run.name)
                .join(Workload, Workload.id == Run.workload_id)
                .where(Workload.name == sized.name)
                .order_by(Run.latency_ns, Run.name)
                .limit(1)
            )
    finally:
        engine.dispose()
    return total, {
        f"largest leaderboard ({largest.runs:,} runs)": f"/workloads/{largest.name}",
        f"leaderboard of ~{workload_runs} runs": f"/workloads/{sized.name}",
        "home": "/",
        "run page": f"/runs/{fastest}",
        "run JSON": f"/runs/{fastest}.json",
    }


async def timed(url: str, paths: dict[str, str], runs: int, cached: bool) -> dict[str, float]:
    app = create_app(Settings(database_url=url, response_cache_mb=64 if cached else 0))
    medians = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            for kind, path in paths.items():
                samples = await request_times_ms(client, path, runs)
                medians[kind.split(" (")[0]] = statistics.median(samples)
                print(f"  {kind}: {path}: {medians[kind.split(' (')[0]]:.2f} ms", flush=True)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workload-runs", type=int, default=61)
    parser.add_argument("--cached", action="store_true", help="time answers from the response cache")
    parser.add_argument("urls", nargs="+")
    args = parser.parse_args()
    columns = []
    for url in args.urls:
        total, paths = chosen_paths(url, args.workload_runs)
        print(f"{url}: {total:,} runs; {load_average()}", flush=True)
        columns.append((total, asyncio.run(timed(url, paths, args.runs, args.cached))))
    kinds = list(columns[0][1])
    mode = "cached" if args.cached else "uncached"
    print(f"\n| page ({mode}, median ms) | " + " | ".join(f"{total:,} runs" for total, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for kind in kinds:
        print(f"| {kind} | " + " | ".join(f"{figures[kind]:.1f}" for _, figures in columns) + " |")


if __name__ == "__main__":
    main()
