"""Helpers the benchmark scripts share: statistics lines, the machine's load, servers and wrk.

Servers are started as separate processes bound to 127.0.0.1, pinned to CPU 0 with
``taskset``; ``wrk`` runs pinned to CPU 1 (PRODUCT.md §10).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

PYTHON = sys.executable
SERVER_CPU = "0"
CLIENT_CPU = "1"


def describe(label: str, values: Sequence[float], unit: str, digits: int = 2) -> str:
    median, low, high = statistics.median(values), min(values), max(values)
    return f"{label}: median {median:.{digits}f} {unit} (min {low:.{digits}f}, max {high:.{digits}f}, n={len(values)})"


def empty_store(url: str) -> None:
    """Empty the store at ``url`` and migrate it: a SQLite file is removed, a PostgreSQL database
    downgraded to nothing."""
    from kernelindex.db import migrate

    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    else:
        migrate.downgrade(url, "base")
    migrate.upgrade(url)


async def request_times_ms(client: Any, path: str, runs: int) -> list[float]:
    """``runs`` timings of GET ``path`` (request to last body byte, in ms) after 10 warm-up
    requests; every answer must be 200. ``client`` is an ``httpx.AsyncClient`` on the app."""
    for _ in range(10):
        await client.get(path)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        response = await client.get(path)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return samples


def load_average() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(
    argv: list[str], port: int, env: dict[str, str] | None = None, ready_path: str = "/", cpus: str = SERVER_CPU
) -> Iterator[str]:
    """Run ``argv`` pinned to ``cpus`` (the server CPU) until the block ends; yields its base URL."""
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-server-{port}.log", "w")  # noqa: SIM115
    process = subprocess.Popen(
        ["taskset", "-c", cpus, *argv],
        env={**os.environ, **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: uvicorn's workers are stopped with it
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {' '.join(argv)} (see {log.name})")
            try:
                httpx.get(base + ready_path, timeout=30)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def uvicorn_argv(app: str, port: int, loop: str, workers: int = 1, factory: bool = False) -> list[str]:
    """uvicorn with h11 and asyncio (``loop="h11"``) or httptools and uvloop (``loop="uvloop"``)."""
    http, event_loop = ("h11", "asyncio") if loop == "h11" else ("httptools", "uvloop")
    argv = [PYTHON, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--http", http, "--loop", event_loop, "--workers", str(workers), "--log-level", "warning"]
    argv += ["--no-access-log"]
    return [*argv, "--factory"] if factory else argv


_RATE = re.compile(r"Requests/sec:\s+([\d.]+)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_ERRORS = re.compile(r"Socket errors:.*")


def wrk(url: str, seconds: int, connections: int = 8, threads: int = 1) -> tuple[float, str]:
    """Requests per second of ``url`` (wrk pinned to the client CPU), and a note of any errors."""
    out = subprocess.run(
        ["taskset", "-c", CLIENT_CPU, "wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rate = _RATE.search(out)
    if rate is None:
        raise RuntimeError(out)
    notes = [m.group(0) for m in (_NON_2XX.search(out), _ERRORS.search(out)) if m]
    return float(rate.group(1)), "; ".join(notes)


def rate_line(label: str, rates: Sequence[float], notes: Sequence[str]) -> str:
    line = describe(label, rates, "req/s", 0)
    problems = sorted({note for note in notes if note})
    return line + (f" [{', '.join(problems)}]" if problems else "")
