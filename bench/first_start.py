"""Time a fresh install's first start: from `kernelindex serve` on an empty store to its first page.

    .venv/bin/python bench/first_start.py [--runs 3] [--checkout DIR ...]

Each round runs the README's serve command on a new SQLite file (not pinned to a core: a
newcomer's first start has the whole machine), which migrates the store, loads every bundled
source's snapshot and the bundled reruns, then serves; the clock stops when the home page
answers 200. Prints each round and then the median and min–max in seconds, the store's run
count, `nproc` and the load average, because the benchmark machine is shared; and the CPU
seconds the serve process and the processes it started and waited for had used by then
(user + system, from /proc), which a busy machine changes far less than the wall time.

``--checkout DIR`` (repeatable) runs the serve command of another checkout of the
repository, with its own ``.venv`` where it has one (an editable install maps the templates,
static files, migrations and fixtures to its own checkout) and ``python -m kernelindex.cli``
in that folder, which imports its code; with several, the rounds take them in turn, so that each is measured at the same
times as the others. The default is this checkout.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import describe, free_port, load_average

DEADLINE_S = 600


HERE = Path(__file__).resolve().parent.parent


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def python_of(checkout: Path) -> Path:
    """The checkout's own virtual environment's Python, else this one. Its own: an editable install
    maps the templates, static files, migrations and fixtures to its checkout's folders."""
    own = checkout / ".venv" / "bin" / "python"
    return own if own.exists() else Path(sys.executable)


def cpu_seconds(pid: int) -> float:
    """User and system time of ``pid`` and of its children it has waited for, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    # Fields 14-17 of proc(5) (utime, stime, cutime, cstime), here from the state (field 3) on.
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def one_round(folder: Path, number: int, checkout: Path) -> tuple[float, float, int]:
    database = folder / f"first-start-{number}.db"
    port = free_port()
    argv = [str(python_of(checkout)), "-m", "kernelindex.cli", "serve", "--port", str(port)]
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": f"sqlite:///{database}"}
    started = time.perf_counter()
    with open(folder / f"first-start-{number}.log", "w") as log:
        process = subprocess.Popen(
            argv, cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"serve exited with {process.returncode}: see {log.name}")
                # A TCP connect until the server listens: an HTTP client made for every try took
                # a tenth of a core from the start it measures.
                if listening(port):
                    status = httpx.get(f"http://127.0.0.1:{port}/", timeout=DEADLINE_S).status_code
                    if status != 200:
                        raise RuntimeError(f"/ answered {status}: see {log.name}")
                    break
                if time.perf_counter() - started > DEADLINE_S:
                    raise RuntimeError(f"no page within {DEADLINE_S} s")
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
            cpu = cpu_seconds(process.pid)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
    with sqlite3.connect(database) as connection:
        runs = connection.execute("SELECT count(*) FROM run").fetchone()[0]
    return elapsed, cpu, runs


def commit_of(checkout: Path) -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=checkout, capture_output=True)
    return result.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="rounds per checkout")
    parser.add_argument("--checkout", type=Path, action="append", help="a checkout to start (default: this one)")
    args = parser.parse_args()
    checkouts = [path.resolve() for path in args.checkout or [HERE]]
    timings: dict[Path, list[float]] = {path: [] for path in checkouts}
    cpu: dict[Path, list[float]] = {path: [] for path in checkouts}
    counts: dict[Path, set[int]] = {path: set() for path in checkouts}
    print(f"nproc {os.cpu_count()}; at start {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for number in range(args.runs * len(checkouts)):
            checkout = checkouts[number % len(checkouts)]
            elapsed, used, runs = one_round(Path(folder), number, checkout)
            timings[checkout].append(elapsed)
            cpu[checkout].append(used)
            counts[checkout].add(runs)
            line = f"  {checkout} ({commit_of(checkout)}): {elapsed:.2f} s, CPU {used:.1f} s; {load_average()}"
            print(line, flush=True)
    for checkout in checkouts:
        print(
            f"{checkout} ({commit_of(checkout)}):",
            describe("first start, serve to home page", timings[checkout], "s"),
            "|",
            describe("CPU", cpu[checkout], "s", digits=1),
            f"| runs stored: {sorted(counts[checkout])}",
            load_average(),
        )


if __name__ == "__main__":
    main()
