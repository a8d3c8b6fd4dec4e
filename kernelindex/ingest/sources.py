"""Every source the registry ingests, and one way to ingest any of them.

A source is registered here with its facts (``SourceInfo``), the folder of its bundled
snapshot (what a fresh install loads) and an opener that builds its adapter either on a
recorded snapshot or on the live upstream, with that source's fetch settings. Adding a source
is one adapter module plus one line below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from kernelindex.ingest import aiconfigurator, aiter, kernelbench, liger_kernel, sol_execbench
from kernelindex.ingest.bounds import Budget
from kernelindex.ingest.reading import Opened, Reading, Sleep, bounds_of
from kernelindex.ingest.runner import IngestSummary, Progress, run_ingest
from kernelindex.ingest.snapshot import snapshot_facts, verify_checksums
from kernelindex.paths import BUNDLED_DATA
from kernelindex.settings import Settings
from kernelindex.store.batch import LIVE, ReadFrom, SourceInfo


@dataclass(frozen=True)
class RegisteredSource:
    info: SourceInfo
    bundled: Path
    open: Callable[[Reading], Opened]


SOURCES: dict[str, RegisteredSource] = {
    source.info.slug: source
    for source in (
        RegisteredSource(sol_execbench.SOURCE, BUNDLED_DATA / "sol-execbench", sol_execbench.open_source),
        RegisteredSource(kernelbench.SOURCE, BUNDLED_DATA / "kernelbench", kernelbench.open_source),
        RegisteredSource(liger_kernel.SOURCE, BUNDLED_DATA / "liger-kernel", liger_kernel.open_source),
        RegisteredSource(aiconfigurator.SOURCE, BUNDLED_DATA / "aiconfigurator", aiconfigurator.open_source),
        RegisteredSource(aiter.SOURCE, BUNDLED_DATA / "aiter-slice", aiter.open_source),
    )
}


@contextmanager
def _opened(source: RegisteredSource, reading: Reading) -> Iterator[Opened]:
    if reading.snapshot is not None:
        verify_checksums(reading.snapshot)
    opened = source.open(reading)
    with ExitStack() as stack:
        for client in opened.clients:
            stack.enter_context(client)
        yield opened


def ingest(
    sessions: sessionmaker[Session],
    settings: Settings,
    slug: str,
    *,
    snapshot: Path | None = None,
    options: Mapping[str, str | None] | None = None,
    progress: Progress | None = None,
    sleep: Sleep | None = None,
) -> IngestSummary:
    """Ingest source ``slug`` from ``snapshot`` (a folder) if given, else from its live upstream.

    A snapshot is checked against its ``MANIFEST.sha256`` first (``SnapshotError`` on any
    mismatch) and read through the same clients and parsing code as the live upstream. The
    ingest runs within the bounds ``settings`` give (``kernelindex/ingest/bounds.py``).
    """
    source = SOURCES[slug]
    budget = Budget(bounds_of(settings))
    with _opened(source, Reading(settings, snapshot, options or {}, sleep, budget)) as opened:
        return run_ingest(
            opened.adapter,
            sessions,
            origin=opened.origin,
            observed_at=opened.observed_at,
            progress=progress,
            read_from=_read_from(source, snapshot),
            budget=budget,
        )


def _read_from(source: RegisteredSource, snapshot: Path | None) -> ReadFrom:
    """Live, or a snapshot (the bundled one or another) with its own date and scope."""
    if snapshot is None:
        return LIVE
    facts = snapshot_facts(snapshot)
    kind = "bundled" if snapshot.resolve() == source.bundled.resolve() else "snapshot"
    return ReadFrom(kind, facts.observed_at, facts.scope)
