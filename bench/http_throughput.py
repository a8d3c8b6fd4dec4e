"""Requests per second over HTTP with wrk (PRODUCT.md §10), KernelIndex beside its references.

    .venv/bin/python bench/http_throughput.py --database-url URL [--datasette-file FILE]
        [--seconds 5] [--repeats 3] [--loops h11,uvloop] [--connections 8] [--only LABELS]

Serves the store at URL with one uvicorn worker pinned to CPU 0, and loads it with wrk
pinned to CPU 1, for each server stack in ``--loops`` (h11 on asyncio; httptools on
uvloop). Measured, each ``--repeats`` times for ``--seconds``:

- the leaderboard of a median-sized workload and of the largest one (all eight sections);
- a run's JSON permalink, and a bare Starlette route returning the same bytes (same stack);
- home, search, records, compare and the API list endpoints.

With ``--datasette-file`` (the same catalogue as a SQLite file), Datasette's table page of
the ``run`` table filtered to the median workload, sorted by latency, 50 rows: HTML by
default, HTML without facet suggestions, and JSON; against the same workload's leaderboard.
Prints medians with min–max and the ratios, measured in this one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import httpx
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).parent))
from common import free_port, load_average, rate_line, server, uvicorn_argv, wrk

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Run, Workload


def sample(url: str) -> dict[str, str]:
    """Paths of typical things in the catalogue: the median and the largest workload, runs."""
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        sizes = session.execute(
            select(Run.workload_id, func.count().label("runs")).group_by(Run.workload_id).order_by("runs")
        ).all()
        median_id, largest_id = sizes[len(sizes) // 2].workload_id, sizes[-1].workload_id
        wanted = select(Workload.id, Workload.name).where(Workload.id.in_([median_id, largest_id]))
        names = {row.id: row.name for row in session.execute(wanted)}
        runs = session.scalars(select(Run.name).where(Run.workload_id == median_id).order_by(Run.id).limit(2)).all()
    engine.dispose()
    return {
        "median_workload_id": str(median_id),
        "median": f"/workloads/{names[median_id]}",
        "largest": f"/workloads/{names[largest_id]}",
        "run": runs[0],
        "other_run": runs[1] if len(runs) > 1 else runs[0],
    }


def measure(base: str, paths: dict[str, str], seconds: int, repeats: int, connections: int) -> dict[str, list]:
    results: dict[str, list] = {}
    for label, path in paths.items():
        response = httpx.get(base + path, timeout=600)  # renders it once (and checks it works)
        assert response.status_code == 200, (path, response.status_code)
        runs = [wrk(base + path, seconds, connections) for _ in range(repeats)]
        results[label] = runs
        print("  " + rate_line(f"{label} {path}", [r for r, _ in runs], [n for _, n in runs]), flush=True)
    return results


def median(runs: list) -> float:
    return statistics.median(rate for rate, _ in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--datasette-file", help="the same catalogue as a SQLite file, for Datasette")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--loops", default="h11,uvloop")
    parser.add_argument("--only", help="measure only these pages (comma-separated labels, e.g. 'run JSON permalink')")
    args = parser.parse_args()
    found = sample(args.database_url)
    pages = {
        "leaderboard (median workload)": found["median"],
        "leaderboard (largest workload)": found["largest"],
        "run JSON permalink": f"/runs/{found['run']}.json",
        "home": "/",
        "search": "/search?q=attention+fp8",
        "records": "/records",
        "compare": f"/compare?run={found['run']}&run={found['other_run']}",
        "API runs": "/api/v1/runs",
        "API workloads": "/api/v1/workloads",
    }
    if args.only:
        # The run JSON is always served: the bare Starlette route serves its bytes.
        wanted = {*args.only.split(","), "run JSON permalink"}
        pages = {label: path for label, path in pages.items() if label in wanted}
    print(f"store {args.database_url}; {load_average()}", flush=True)
    env = {"KERNELINDEX_DATABASE_URL": args.database_url}
    with tempfile.TemporaryDirectory() as folder:
        body_file = Path(folder) / "body.json"
        for loop in args.loops.split(","):
            print(f"uvicorn, one worker, {loop}:", flush=True)
            port = free_port()
            argv = uvicorn_argv("kernelindex.app:create_app", port, loop, factory=True)
            with server(argv, port, env, ready_path="/robots.txt") as base:
                ours = measure(base, pages, args.seconds, args.repeats, args.connections)
                body_file.write_bytes(httpx.get(base + pages["run JSON permalink"]).content)
            port = free_port()
            argv = [*uvicorn_argv("bare_starlette:app", port, loop), "--app-dir", str(Path(__file__).parent)]
            with server(argv, port, {"BENCH_BODY_FILE": str(body_file)}) as base:
                bare = measure(base, {"bare Starlette, same bytes": "/runs/x.json"}, *_rest(args))
            ratio = median(ours["run JSON permalink"]) / median(bare["bare Starlette, same bytes"])
            print(f"  run JSON permalink / bare Starlette = {ratio:.2f}; {load_average()}", flush=True)
    if args.datasette_file:
        datasette(args, found, pages["leaderboard (median workload)"])


def _rest(args: argparse.Namespace) -> tuple[int, int, int]:
    return args.seconds, args.repeats, args.connections


def datasette(args: argparse.Namespace, found: dict[str, str], leaderboard: str) -> None:
    name = Path(args.datasette_file).stem
    query = f"workload_id={found['median_workload_id']}&_sort=latency_ns&_size=50"
    results = {}
    for label, settings, path in (
        ("Datasette HTML", [], f"/{name}/run?{query}"),
        ("Datasette HTML without facet suggestions", ["--setting", "suggest_facets", "off"], f"/{name}/run?{query}"),
        ("Datasette JSON", [], f"/{name}/run.json?{query}"),
    ):
        port = free_port()
        argv = [sys.executable, "-m", "datasette", "serve", args.datasette_file, "-h", "127.0.0.1", "-p", str(port)]
        with server([*argv, *settings], port) as base:
            results[label] = measure(base, {label: path}, *_rest(args))[label]
    port = free_port()
    argv = uvicorn_argv("kernelindex.app:create_app", port, "h11", factory=True)
    env = {"KERNELINDEX_DATABASE_URL": f"sqlite:///{Path(args.datasette_file).resolve()}"}
    with server(argv, port, env, ready_path="/robots.txt") as base:
        ours = measure(base, {"KernelIndex leaderboard (SQLite, h11)": leaderboard}, *_rest(args))
    mine = median(ours["KernelIndex leaderboard (SQLite, h11)"])
    for label, runs in results.items():
        print(f"  KernelIndex leaderboard / {label} = {mine / median(runs):.1f}×")
    print(f"  {load_average()}")


if __name__ == "__main__":
    main()
