"""Time a fresh install's first start: from `kernelindex serve` on an empty store to its first page.

    .venv/bin/python bench/first_start.py [--runs 3]

Each round runs the README's serve command on a new SQLite file (not pinned to a core: a
newcomer's first start has the whole machine), which migrates the store, loads every bundled
source's snapshot and the bundled reruns, then serves; the clock stops when the home page
answers 200. Prints the median and min–max in seconds, the store's run count, and the load
average, because the benchmark machine is shared.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import describe, free_port, load_average

DEADLINE_S = 300


def one_round(folder: Path, number: int) -> tuple[float, int]:
    database = folder / f"first-start-{number}.db"
    port = free_port()
    argv = [sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(port)]
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": f"sqlite:///{database}"}
    started = time.perf_counter()
    with open(folder / f"first-start-{number}.log", "w") as log:
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"serve exited with {process.returncode}: see {log.name}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/", timeout=30).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.perf_counter() - started > DEADLINE_S:
                    raise RuntimeError(f"no page within {DEADLINE_S} s")
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
    with sqlite3.connect(database) as connection:
        runs = connection.execute("SELECT count(*) FROM run").fetchone()[0]
    return elapsed, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    timings, counts = [], set()
    with tempfile.TemporaryDirectory() as folder:
        for number in range(args.runs):
            elapsed, runs = one_round(Path(folder), number)
            timings.append(elapsed)
            counts.add(runs)
    print(describe("first start, serve to home page", timings, "s"), f"| runs stored: {sorted(counts)}", load_average())


if __name__ == "__main__":
    main()
