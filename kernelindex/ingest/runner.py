"""The source framework: what an adapter implements, and the runner that drives any of them.

An adapter discovers its units (a SOL-ExecBench kernel, a KernelBench problem, a Liger-Kernel
sweep: one workload each), fetches one, and maps what it fetched to manifests (a ``Batch``).
The runner writes each unit atomically (a savepoint each, committed a group of units at a
time): one unit's failure is reported and the others go on, and a crash leaves every
committed unit whole and the rest untouched, so running again completes the work. Every run
leaves an ``ingestion_report`` row.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, TypeVar, runtime_checkable

from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.figure_gate import Refusals
from kernelindex.ingest.bounds import MAX_NOTES, BoundHit, Budget, kept_notes
from kernelindex.ingest.http import UpstreamError
from kernelindex.ingest.identities import Identities
from kernelindex.ingest.pipeline import UNREPORTED, failure_line, mapped_units
from kernelindex.store.batch import LIVE, Batch, ReadFrom, SourceInfo, UnitFailure
from kernelindex.store.ingest import (
    apply_batch,
    apply_new_batches,
    begin_writing,
    ensure_source,
    finish_report,
    mark_missing_workloads,
    source_by_id,
    start_report,
    stored_run_names,
    stored_units,
    workload_ids,
)
from kernelindex.store.planner import GrowthStatistics, vacuum_after_bulk_write
from kernelindex.store.regressions import refresh_regressions
from kernelindex.store.source_files import record_datasheets, record_files, stored_files

logger = logging.getLogger(__name__)

# Fetched units are written a group at a time, one transaction per group and a savepoint per
# unit: a commit per unit made a first load of ten thousand runs several times slower, and no
# transaction is held open while the upstream is being read. A group is also written once it
# has waited GROUP_SECONDS, so against a slow upstream progress shows and a crash loses at most
# a few seconds of fetching; every committed unit is whole, so running again completes the work.
GROUP_UNITS = 256
GROUP_RUNS = 4_000
GROUP_SECONDS = 1.0


@dataclass
class Discovery:
    """What an adapter found upstream: its units and what it could not use while looking.

    ``complete`` is false when part of the upstream could not be read (one of several files
    failed): then no stored workload is marked missing upstream for not being listed.
    ``skipped`` counts upstream entries that are not results (by reason); ``errors`` are the
    per-file failures, each naming its file; ``warnings`` name what was skipped inside a file
    that was read (a malformed row), without failing the file.
    """

    units: list[str]
    complete: bool = True
    skipped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Figures the gate refused while listing (a row of a listing file), each named where it stood.
    refused: Refusals = field(default_factory=Refusals)
    # Rows counted by what became of them (read, mapped, unchanged), for sources read as tables.
    rows: Counter[str] = field(default_factory=Counter)
    # Files read whole (path → (sha256, rows)): recorded when the ingest succeeds, so that the
    # next one may skip them unchanged (``FileAware``).
    files: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Datasheet figures the source publishes, by GPU slug: (figures, the source's reference).
    datasheets: dict[str, tuple[dict[str, float | int], str | None]] = field(default_factory=dict)


Fetched = TypeVar("Fetched")


@runtime_checkable
class FileAware(Protocol):
    """An adapter that reads whole files and skips those an earlier ingest stored unchanged:
    the runner hands it their digests (path → sha256) before ``discover``."""

    known_files: Mapping[str, str]


class Adapter(Protocol[Fetched]):
    """One source. ``discover`` and ``fetch`` raise ``UpstreamError`` (or ``UnitFailure``) when
    the upstream cannot be read; ``map`` raises ``UnitFailure`` when what was read cannot be
    mapped. ``drift`` collects upstream fields the adapter does not know."""

    source: SourceInfo
    drift: set[str]

    def discover(self) -> Discovery: ...

    def fetch(self, unit: str) -> Fetched: ...

    def map(self, unit: str, fetched: Fetched) -> Batch: ...


@dataclass
class IngestSummary:
    """What one ingest did; the same figures are stored in its ``ingestion_report``."""

    report_id: int
    status: str
    started_at: datetime
    finished_at: datetime
    counts: dict[str, object]
    errors: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)

    @property
    def wrote_records(self) -> bool:
        added, updated = self.counts.get("added", {}), self.counts.get("updated", {})
        assert isinstance(added, dict) and isinstance(updated, dict)
        flags = self.counts.get("flags", {})
        assert isinstance(flags, dict)
        return any(added.values()) or any(updated.values()) or bool(flags.get("missing_upstream"))


Progress = Callable[[str, int, int], None]


def connection_lost(exc: Exception) -> bool:
    """Whether ``exc`` is the database gone (its connection lost), not a fault of the batch being
    written: nothing more can be written, so the ingest stops there (the command says so)."""
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def _nested(counts: Counter[str]) -> dict[str, dict[str, int]]:
    nested: dict[str, dict[str, int]] = {}
    for key, value in sorted(counts.items()):
        group, _, name = key.partition(".")
        nested.setdefault(group, {})[name] = value
    return nested


def run_ingest(
    adapter: Adapter[Fetched],
    sessions: sessionmaker[Session],
    origin: str,
    observed_at: datetime | None = None,
    progress: Progress | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    read_from: ReadFrom = LIVE,
    budget: Budget | None = None,
) -> IngestSummary:
    """Ingest everything the adapter lists; see the module docstring for the guarantees.
    ``read_from`` says whether it reads the live upstream or a snapshot (recorded in the report).

    The ingest runs within ``budget`` (``kernelindex/ingest/bounds.py``): a listing of more units
    than it allows is refused; once its deadline passes, its memory ceiling is reached or the
    upstream rate-limits it past either, no further unit is read, the units written stay, and
    the report says which bound stopped it (status ``partial``, or ``failed`` if nothing was
    read). The report keeps at most ``MAX_NOTES`` error lines and drift notes."""
    budget = budget or Budget()
    started = clock()
    observed = observed_at or started
    with sessions.begin() as session:
        source = ensure_source(session, adapter.source)
        report_id = start_report(session, source, origin, started, read_from).id
        source_id = source.id
        if isinstance(adapter, FileAware):
            adapter.known_files = stored_files(session, source_id)
        statistics = GrowthStatistics(session.get_bind().engine)

    counts: Counter[str] = Counter()
    errors: list[str] = []
    drift: set[str] = set()
    status = "succeeded"
    try:
        discovery = adapter.discover()
    except (UnitFailure, UpstreamError, BoundHit) as exc:
        discovery, status = Discovery(units=[], complete=False), "failed"
        errors.append(f"could not list {adapter.source.name}'s units: {exc}")
    except UNREPORTED as exc:
        discovery, status = Discovery(units=[], complete=False), "failed"
        errors.append(failure_line(f"could not list {adapter.source.name}'s units", exc))
    if len(discovery.units) > budget.bounds.max_listed:
        errors.append(
            f"{adapter.source.name} lists {len(discovery.units)} units, more than the {budget.bounds.max_listed} "
            "an ingest reads (KERNELINDEX_INGEST_MAX_LISTED); nothing was read: check the upstream, or raise the cap"
        )
        discovery, status = Discovery(units=[], complete=False), "failed"
    units = discovery.units
    errors.extend(discovery.errors)
    errors.extend(f"warning: {text}" for text in discovery.warnings)
    counts.update({f"skipped.{reason}": n for reason, n in discovery.skipped.items()})
    counts.update({f"refused.{reason}": n for reason, n in discovery.refused.counts.items()})
    errors.extend(f"warning: {line}" for line in discovery.refused.lines())
    counts.update({f"rows.{what}": n for what, n in discovery.rows.items()})
    counts["units.listed"] = len(units)
    if discovery.errors:
        counts["files.failed"] += len(discovery.errors)

    written: set[str] = set()  # external ids of the workloads whose records were written
    identities = Identities()

    def record(batch: Batch, wrote: bool) -> None:
        if wrote:
            written.add(batch.external_id)
        counts["units.ingested"] += 1
        counts["submissions.stored"] += len(batch.runs)
        counts.update({f"skipped.{reason}": n for reason, n in batch.skipped.items()})
        counts.update({f"anomalies.{name}": n for name, n in batch.anomalies.items()})
        errors.extend(f"warning: {text}" for text in batch.warnings)
        counts.update({f"refused.{reason}": n for reason, n in batch.refused.counts.items()})
        errors.extend(f"warning: {batch.unit}: {line}" for line in batch.refused.lines())

    def write(group: list[Batch]) -> None:
        """Write fetched batches in one transaction. Workloads the store does not hold yet are
        written together; the others each under a savepoint of its own, so a batch the store
        refuses is rolled back alone and reported, the others are kept."""
        with sessions.begin() as session:
            begin_writing(session)
            source = source_by_id(session, source_id)
            named = Counter(batch.external_id for batch in group)
            held = stored_units(session, source, list(named))
            new = [batch for batch in group if batch.external_id not in held and named[batch.external_id] == 1]
            # A new workload listing a run the store holds under another goes through ``apply_batch``,
            # which refuses to move it, rather than failing the group's inserts.
            taken = stored_run_names(session, [run.stored.name for batch in new for run in batch.runs])
            new = [batch for batch in new if not any(run.stored.name in taken for run in batch.runs)]
            if new:
                try:
                    with session.begin_nested():
                        counts.update(apply_new_batches(session, source, new, observed))
                except (SQLAlchemyError, ValueError) as exc:
                    if connection_lost(exc):
                        raise
                    logger.exception("ingest: %d new workloads could not be stored together", len(new))
                    new = []  # each is tried alone below, so the one at fault is named
                    # Rows read inside the savepoint are not expired with it, and SQLite gives
                    # the ids it rolled back to the next rows inserted: read them afresh.
                    session.expire_all()
                for batch in new:
                    record(batch, wrote=True)
            written_together = {id(batch) for batch in new}
            for batch in group:
                if id(batch) in written_together:
                    continue
                try:
                    with session.begin_nested():
                        written_here = apply_batch(session, source, batch, observed)
                except (SQLAlchemyError, ValueError) as exc:
                    if connection_lost(exc):
                        raise
                    # The report is public (/sources/...): one plain line there, the statement and
                    # its parameters only in the server's log.
                    logger.exception("ingest: %s could not be stored", batch.unit)
                    session.expire_all()
                    errors.append(
                        f"{batch.unit}: could not be stored (a database error; the server log has the details)"
                    )
                    counts["units.failed"] += 1
                    continue
                counts.update(written_here)
                record(batch, wrote=any(n for key, n in written_here.items() if key.startswith(("added.", "updated."))))
        statistics.after_commit(counts["added.run"])
        identities.written(group)

    pending: list[Batch] = []
    pending_runs = 0
    pending_since = time.monotonic()
    done = 0
    stopped: BoundHit | None = budget.stopped
    mapped = mapped_units(adapter, units if stopped is None else [])
    for done, (unit, batch) in enumerate(mapped, start=1):
        if progress:
            progress(unit, done, len(units))
        if isinstance(batch, str):
            errors.append(batch)
            counts["units.failed"] += 1
        with suppress(BoundHit):  # a bound met is kept as ``budget.stopped``
            budget.check(f"{adapter.source.name}, after {done} of {len(units)} units")
        if budget.stopped is not None:
            stopped = budget.stopped
            if not isinstance(batch, str):
                pending.append(batch)  # read whole before the bound: kept
            break
        if isinstance(batch, str):
            continue
        drift |= batch.drift
        identities.admit(batch)
        pending.append(batch)
        pending_runs += len(batch.runs)
        waited = time.monotonic() - pending_since
        if len(pending) >= GROUP_UNITS or pending_runs >= GROUP_RUNS or waited >= GROUP_SECONDS:
            write(pending)
            pending, pending_runs, pending_since = [], 0, time.monotonic()
    mapped.close()  # stops the mapping processes, if any, at once
    if pending:
        write(pending)
    if stopped is not None and units:
        not_read = len(units) - done
        counts["units.not_read"] += not_read
        errors.append(f"stopped: {stopped}" + (f" ({not_read} units were not read)" if not_read else ""))

    drift |= adapter.drift
    finished = clock()
    with sessions.begin() as session:
        source = source_by_id(session, source_id)
        if discovery.complete and stopped is None and units and counts["units.failed"] < len(units):
            counts["flag.missing_workloads"] += mark_missing_workloads(session, source, set(units), observed)
            if source.last_observed_at != observed:
                source.last_observed_at = observed
        troubled = stopped is not None or counts["units.failed"] or discovery.errors
        if troubled and (status != "failed" or stopped is not None):
            status = "partial" if counts["units.ingested"] else "failed"
        if status == "succeeded":
            record_files(session, source_id, discovery.files, finished)
        if adapter.source.compares_versions and written:
            # An ingest that wrote most of the source (its first full load over a bundled slice, a
            # new upstream release) estimates the source's noise again from every workload; a
            # smaller one keeps the stored estimate and compares only what it wrote.
            every = 2 * len(written) >= len(units)
            counts["regressions.found"] = refresh_regressions(
                session, source_id, None if every else workload_ids(session, source_id, written)
            ).regressions
            finished = clock()  # the report's time includes the refresh
        record_datasheets(session, source_id, discovery.datasheets, finished)
        nested = _nested(counts)
        nested.setdefault("flag", {})
        nested["flags"] = nested.pop("flag")
        errors = kept_notes(errors)
        notes = kept_notes(sorted(drift), MAX_NOTES, "unknown upstream fields")
        finish_report(session, report_id, status, finished, nested, errors, notes)
        engine = session.get_bind().engine
    vacuum_after_bulk_write(engine, counts["added.run"])
    return IngestSummary(
        report_id=report_id,
        status=status,
        started_at=started,
        finished_at=finished,
        counts=dict(nested),
        errors=errors,
        drift=notes,
    )
