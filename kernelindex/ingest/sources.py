"""Building an ingest of SOL-ExecBench from the live API or from a recorded snapshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.ingest.http import JsonFetcher
from kernelindex.ingest.runner import IngestSummary, Progress, run_ingest
from kernelindex.ingest.snapshot import SNAPSHOT_BASE_URL, observed_at, snapshot_transport, verify_checksums
from kernelindex.ingest.sol_execbench import SolExecBench
from kernelindex.settings import Settings


def ingest_sol_execbench(
    sessions: sessionmaker[Session],
    settings: Settings,
    *,
    base_url: str | None = None,
    snapshot: Path | None = None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] | None = None,
) -> IngestSummary:
    """Ingest SOL-ExecBench from ``snapshot`` (a folder) if given, else from the live API.

    A snapshot is checked against its ``MANIFEST.sha256`` first (``SnapshotError`` on
    any mismatch) and read through the same client and parsing code as the live API.
    """
    if snapshot is not None:
        verify_checksums(snapshot)
        client = httpx.Client(transport=snapshot_transport(snapshot), base_url=SNAPSHOT_BASE_URL)
        # The folder name only: a server path is nobody else's business.
        origin, observed = f"snapshot {snapshot.resolve().name}", observed_at(snapshot)
    else:
        url = (base_url or settings.sol_execbench_url).rstrip("/") + "/"
        client = httpx.Client(
            base_url=url,
            timeout=settings.http_timeout_s,
            headers={"User-Agent": "KernelIndex ingest (+https://kernelindex.dev)"},
            follow_redirects=True,
        )
        origin, observed = url, None
    with client:
        fetcher = (
            JsonFetcher(client, retries=settings.http_retries, sleep=sleep)
            if sleep
            else JsonFetcher(client, retries=settings.http_retries)
        )
        return run_ingest(SolExecBench(fetcher), sessions, origin=origin, observed_at=observed, progress=progress)
