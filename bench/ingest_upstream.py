"""Ingest 100,000 synthetic submissions from a local upstream (PRODUCT.md §10: ≤ 30 s, ≤ 300 MB).

    .venv/bin/python bench/ingest_upstream.py [--submissions 100000] [--database-url URL]

Serves a fake SOL-ExecBench API on 127.0.0.1 (a separate process pinned to CPU 1): the 235
bundled kernels, and ``--submissions`` submissions spread over them with the skew of real
leaderboards (Zipf), each a real submission of the snapshot with a new id, submitter,
latency, GPU, stack and finish time. Then runs ``kernelindex ingest sol-execbench
--base-url`` against it (pinned to CPU 0) into an empty, migrated store (a new SQLite
file, or the given database, emptied first), and reports its wall time and peak resident
memory (the child's maximum RSS).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import CLIENT_CPU, SERVER_CPU, free_port, load_average, server

from kernelindex.db import migrate
from kernelindex.paths import BUNDLED_SNAPSHOT

API = BUNDLED_SNAPSHOT / "api"
GPUS = ["B200", "B200", "B200", "H100", "H200"]


def _data(path: Path) -> Any:
    return json.loads(path.read_text())["data"]


def counts(total: int, kernels: list[int], seed: int) -> dict[int, int]:
    weights = [1 / (rank**0.8) for rank in range(1, len(kernels) + 1)]
    scale = total / sum(weights)
    made = [max(1, int(w * scale)) for w in weights]
    made[0] += total - sum(made)
    random.Random(seed).shuffle(made)
    return dict(zip(kernels, made, strict=True))


def app() -> Any:
    """The ASGI app of the fake upstream (run by uvicorn in its own process)."""
    import os

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    total = int(os.environ["BENCH_SUBMISSIONS"])
    # Another base gives another set of submissions: a later pull of a grown upstream.
    next_id = int(os.environ.get("BENCH_FIRST_ID", "1000000"))
    # A suffix renames every kernel: into a store whose workloads already took the real names
    # (the synthetic catalogue's do), the pull adds workloads of its own.
    suffix = os.environ.get("BENCH_NAME_SUFFIX", "")
    listing = _data(API / "kernels.json")
    for kernel in listing["kernels"]:
        kernel["name"] += suffix
    kernel_ids = sorted(kernel["id"] for kernel in listing["kernels"])
    details = {}
    for k in kernel_ids:
        detail = json.loads((API / "kernels" / f"{k}.json").read_bytes())
        detail["data"]["name"] += suffix
        details[k] = json.dumps(detail).encode()
    templates = {
        k: _data(API / "submissions" / f"kernel-{k}.json")["submissions"]
        or _data(API / "submissions" / "kernel-40.json")["submissions"]
        for k in kernel_ids
    }
    per_kernel = counts(total, kernel_ids, seed=3)
    first_id = {}
    for k in kernel_ids:
        first_id[k] = next_id
        next_id += per_kernel[k]

    def submission(kernel_id: int, index: int) -> dict[str, Any]:
        rng = random.Random(kernel_id * 1_000_003 + index)
        row = dict(rng.choice(templates[kernel_id]))
        latency = (row.get("latency_ms") or 0.05) * math.exp(rng.gauss(0.3, 0.4))
        row.update(
            id=first_id[kernel_id] + index,
            kernel_id=kernel_id,
            username=f"team-{rng.randrange(3000)}",
            status="COMPLETED",
            is_correct=True,
            is_disqualified=False,
            disqualification_reason=None,
            disqualification_source=None,
            disqualified_at=None,
            latency_ms=round(latency, 6),
            sol_score=round(rng.random(), 6),
            gpu_type=rng.choice(GPUS),
            evaluation_stack_version=rng.choice(["v1.0", "v1.1", "v1.1"]),
            finished_at=f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00.000",
        )
        return row

    async def kernels(request: Request) -> Response:
        return Response(json.dumps({"data": listing}), media_type="application/json")

    async def kernel(request: Request) -> Response:
        return Response(details[int(request.path_params["kernel_id"])], media_type="application/json")

    async def submissions(request: Request) -> Response:
        kernel_id = int(request.query_params["kernel_id"])
        offset, limit = int(request.query_params.get("offset", 0)), int(request.query_params.get("limit", 100))
        count = per_kernel.get(kernel_id, 0)
        rows = [submission(kernel_id, i) for i in range(offset, min(count, offset + limit))]
        page = {"submissions": rows, "total": count, "offset": offset, "limit": limit}
        return Response(json.dumps({"data": page}), media_type="application/json")

    return Starlette(
        routes=[
            Route("/api/kernels", kernels),
            Route("/api/kernels/{kernel_id:int}", kernel),
            Route("/api/submissions", submissions),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=100_000)
    parser.add_argument("--database-url", help="a PostgreSQL URL to use (it is emptied!); default: a SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'ingest.db'}"
        if not url.startswith("sqlite"):
            migrate.downgrade(url, "base")
        migrate.upgrade(url)
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "uvicorn",
            "ingest_upstream:app",
            "--factory",
            "--app-dir",
            str(Path(__file__).parent),
        ]
        argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        # The upstream on the client CPU, the ingest on the server CPU: the ingest is what is timed.
        env = {"BENCH_SUBMISSIONS": str(args.submissions)}
        with server(argv, port, env, ready_path="/api/kernels", cpus=CLIENT_CPU) as base:
            print(f"upstream at {base} with {args.submissions} submissions; {load_average()}", flush=True)
            cli = str(Path(sys.executable).parent / "kernelindex")
            command = ["taskset", "-c", SERVER_CPU, cli, "ingest", "sol-execbench", "--base-url", f"{base}/api"]
            start = time.perf_counter()
            done = subprocess.run([*command, "--database-url", url], capture_output=True, text=True)
            seconds = time.perf_counter() - start
            # Only the ingest has been waited for yet: the upstream is not counted.
            peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(done.stdout[-1500:], done.stderr[-1500:])
        print(f"ingest of {args.submissions} submissions: {seconds:.1f} s, peak RSS {peak_mb:.0f} MB; {load_average()}")


if __name__ == "__main__":
    main()
