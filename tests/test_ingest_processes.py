"""Real ``kernelindex ingest`` processes against a real (slow) upstream on 127.0.0.1:
killed with SIGKILL mid-run and run again, and two started at once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import IngestionReport, Workload
from kernelindex.paths import BUNDLED_SNAPSHOT
from tests.catalogue import catalogue_fingerprint
from tests.servers import serving, snapshot_api

KERNELINDEX = str(Path(sys.executable).with_name("kernelindex"))
KERNELS = len(list((BUNDLED_SNAPSHOT / "api" / "kernels").iterdir()))


def slow(app: Any, delay_s: float) -> Any:
    """``app`` answering each request ``delay_s`` late."""

    async def delayed(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await asyncio.sleep(delay_s)
        await app(scope, receive, send)

    return delayed


@pytest.fixture(scope="module")
def slow_upstream() -> Iterator[str]:
    with serving(slow(snapshot_api(BUNDLED_SNAPSHOT), 0.02)) as url:
        yield f"{url}/api/"


@pytest.fixture(scope="module")
def fast_upstream() -> Iterator[str]:
    with serving(snapshot_api(BUNDLED_SNAPSHOT)) as url:
        yield f"{url}/api/"


def start_ingest(processes: list[subprocess.Popen[str]], url: str, upstream: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [KERNELINDEX, "ingest", "sol-execbench", "--base-url", upstream, "--database-url", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KERNELINDEX_HTTP_RETRIES": "0", "COLUMNS": "200"},
    )
    processes.append(process)
    return process


def workloads(url: str) -> int:
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            return session.scalar(select(func.count()).select_from(Workload)) or 0
    finally:
        engine.dispose()


def wait_for_workloads(url: str, at_least: int, process: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + 60
    while (count := workloads(url)) < at_least:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"only {count} workloads after 60 s"
        time.sleep(0.05)
    return count


def reports(url: str) -> list[tuple[str, list[str]]]:
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            rows = session.execute(select(IngestionReport.status, IngestionReport.errors).order_by(IngestionReport.id))
            return [(status, errors) for status, errors in rows]
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def reference(request: pytest.FixtureRequest, backend: str) -> dict[str, Any]:
    """The state an uninterrupted ingest of the bundled snapshot leaves."""
    if backend == "sqlite":
        return catalogue_fingerprint(f"sqlite:///{request.getfixturevalue('sqlite_loaded_template')}")
    return catalogue_fingerprint(request.getfixturevalue("pg_loaded_url"))


@pytest.fixture
def fresh_url(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    """An empty, migrated database of the backend under test that real processes can commit to."""
    url = (
        f"sqlite:///{tmp_path / 'ingest.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("postgres").create("ingest")
    )
    migrate.upgrade(url)
    return url


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Ingest processes a test starts; any still running at the end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_ingest_killed_mid_run_then_run_again_equals_an_uninterrupted_ingest(
    fresh_url, reference, slow_upstream, fast_upstream, processes
):
    killed = start_ingest(processes, fresh_url, slow_upstream)
    written = wait_for_workloads(fresh_url, 40, killed)
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=10) == -signal.SIGKILL
    left = workloads(fresh_url)
    assert written <= left < KERNELS, "the kill must land mid-run"
    assert reports(fresh_url) == [("running", [])]

    again = start_ingest(processes, fresh_url, fast_upstream)
    _, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    assert "1 earlier ingest(s) had stopped before finishing" in stderr

    assert catalogue_fingerprint(fresh_url) == reference
    (first, first_errors), (second, _) = reports(fresh_url)
    assert (first, second) == ("interrupted", "succeeded")
    assert "stopped before it finished" in first_errors[0]


def test_second_ingest_started_meanwhile_refuses_with_a_clear_message(fresh_url, slow_upstream, processes):
    first = start_ingest(processes, fresh_url, slow_upstream)
    try:
        wait_for_workloads(fresh_url, 5, first)
        second = start_ingest(processes, fresh_url, slow_upstream)
        _, stderr = second.communicate(timeout=60)
        assert second.returncode == 3
        assert "another ingest or import is already writing to this store" in " ".join(stderr.split())
        # The refused ingest wrote nothing, not even a report of its own.
        assert [status for status, _ in reports(fresh_url)] == ["running"]
        assert first.poll() is None
    finally:
        first.kill()
        first.wait(timeout=10)
    # The killed holder took its lock with it: the next ingest starts.
    third = start_ingest(processes, fresh_url, slow_upstream)
    wait_for_workloads(fresh_url, workloads(fresh_url) + 1, third)
    third.send_signal(signal.SIGKILL)
    third.wait(timeout=10)
