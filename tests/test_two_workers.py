"""Two real worker processes on PostgreSQL share their rate-limit counters (in Redis or in
the store), so the 20-a-day attestation limit holds however requests are spread."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Attestation
from kernelindex.store import accounts
from tests.factories import PASSWORD
from tests.servers import free_port

REDIS_URL = "redis://127.0.0.1:6379/14"
RUN = "sol-submission-16893"


@pytest.fixture
def catalogue(postgres, pg_loaded_template) -> str:  # type: ignore[no-untyped-def]
    return postgres.create("workers", template=pg_loaded_template)


def start_worker(database_url: str, redis_url: str | None, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": database_url}
    env.pop("KERNELINDEX_REDIS_URL", None)
    if redis_url:
        env["KERNELINDEX_REDIS_URL"] = redis_url
    with log.open("wb") as sink:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "kernelindex.app:create_app",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{base}/index.json", timeout=2)
            return process, base
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise AssertionError(log.read_text()) from None
            time.sleep(0.2)


@pytest.mark.parametrize("backend", ["redis", "database"])
def test_attestation_limit_holds_across_two_worker_processes(catalogue, backend, tmp_path):
    redis_url = None
    if backend == "redis":
        redis = pytest.importorskip("redis")
        redis.Redis.from_url(REDIS_URL).flushdb()
        redis_url = REDIS_URL
    engine = make_engine(catalogue)
    with make_sessionmaker(engine).begin() as session:
        user = accounts.create_user(session, "busy", PASSWORD)
        _, secret = accounts.create_api_key(session, user, "workers", ["attest"])
    workers = [start_worker(catalogue, redis_url, tmp_path / f"worker-{n}.log") for n in range(2)]
    try:
        limit = LIMITS["attest"].count
        statuses = []
        for n in range(limit + 6):
            _, base = workers[n % 2]
            response = httpx.post(
                f"{base}/api/v1/runs/{RUN}/attestations",
                json={"type": "reproduced", "body": f"Attempt {n}."},
                headers={"Authorization": f"Bearer {secret}"},
                timeout=30,
            )
            statuses.append(response.status_code)
        assert Counter(statuses) == {201: limit, 429: 6}
        assert statuses[:limit] == [201] * limit
        with make_sessionmaker(engine)() as session:
            assert session.scalar(select(func.count()).select_from(Attestation)) == limit
    finally:
        for process, _ in workers:
            process.terminate()
            process.wait(timeout=10)
        engine.dispose()
