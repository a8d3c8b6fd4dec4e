"""How complete the stored data of a workload or a source is, against its upstream.

A recorded snapshot may hold part of an upstream (SOL-ExecBench's holds the top submissions of
each kernel's first page), so every page that shows a source's figures says how many are
stored, of how many the upstream counts where it publishes a count, and where they were read:
the live upstream, or a snapshot of which date. ``/workloads/{slug}``, ``/sources/{slug}``,
the home page, their JSON twins, ``/api/v1/workloads/{ref}`` and ``/api/v1/sources[/{slug}]``
all read this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypedDict, cast

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import IngestionReport, Run, Source, Workload
from kernelindex.db.tally_tables import EVERY_GPU, CollectionTally, WorkloadSourceTally
from kernelindex.store.schemas import Completeness, ReadFromKind, SnapshotItem, SourceCompleteness

# Ingests that stored what they read; a failed or unfinished one says nothing of what is held.
STORING_STATUSES = ("succeeded", "partial")
SNAPSHOT_KINDS = ("snapshot", "bundled")
# A snapshot whose scope starts so holds part of the upstream (fixtures/*/snapshot.json).
PARTIAL_PREFIX = "partial"


def newest_readings(session: Session, source_ids: Sequence[int]) -> dict[int, IngestionReport]:
    """Source id → its newest ingest that stored what it read (by start, then id)."""
    newest = func.row_number().over(
        partition_by=IngestionReport.source_id,
        order_by=(IngestionReport.started_at.desc(), IngestionReport.id.desc()),
    )
    ranked = (
        select(IngestionReport.id, newest.label("position"))
        .where(IngestionReport.source_id.in_(source_ids), IngestionReport.status.in_(STORING_STATUSES))
        .subquery()
    )
    reports = session.scalars(
        select(IngestionReport).where(IngestionReport.id.in_(select(ranked.c.id).where(ranked.c.position == 1)))
    )
    return {report.source_id: report for report in reports}


def workload_completeness(session: Session, workload: Workload) -> Completeness:
    """How many of the upstream's results for ``workload`` are stored, and where they were read."""
    source = workload.source
    stored = (
        session.scalar(
            select(func.count(Run.id)).where(Run.workload_id == workload.id, Run.source_id == workload.source_id)
        )
        or 0
    )
    reading = newest_readings(session, [source.id]).get(source.id)
    return Completeness(
        stored=stored,
        noun=source.run_noun,
        upstream_total=workload.upstream_total,
        upstream_total_observed_at=workload.upstream_total_observed_at,
        **_reading_fields(source, reading),
        summary=_summary(stored, source.run_noun, reading, workload.upstream_total),
    )


def source_completeness(session: Session, sources: Sequence[Source]) -> dict[int, SourceCompleteness]:
    """Source id → how much of its upstream is stored: its results, and of the workloads whose
    upstream count was recorded, how many of the counted results are stored."""
    ids = [source.id for source in sources]
    stored = dict(
        session.execute(
            select(WorkloadSourceTally.source_id, func.sum(WorkloadSourceTally.runs))
            .where(WorkloadSourceTally.source_id.in_(ids), WorkloadSourceTally.gpu_slug == EVERY_GPU)
            .group_by(WorkloadSourceTally.source_id)
        ).all()
    )
    # Workloads from the collection tallies; the upstream counts from the few workloads that
    # carry one, along ``ix_workload_source_id_upstream_total``.
    workloads_of: dict[int, Any] = dict(
        session.execute(
            select(CollectionTally.source_id, func.sum(CollectionTally.workloads))
            .where(CollectionTally.source_id.in_(ids), CollectionTally.gpu_slug == EVERY_GPU)
            .group_by(CollectionTally.source_id)
        ).all()
    )
    defined = {
        row.source_id: row
        for row in session.execute(
            select(
                Workload.source_id,
                func.count().label("counted"),
                func.sum(Workload.upstream_total).label("total"),
                func.max(Workload.upstream_total_observed_at).label("counted_at"),
            )
            .where(Workload.source_id.in_(ids), Workload.upstream_total.is_not(None))
            .group_by(Workload.source_id)
        )
    }
    # Driven from the counted workloads, each counted along the leaderboard index: a join from the
    # runs would read every run's row of a source whose workloads carry no upstream count.
    runs_of_own_source = (
        select(func.count(Run.id))
        .where(Run.workload_id == Workload.id, Run.source_id == Workload.source_id)
        .scalar_subquery()
    )
    in_counted: dict[int, Any] = dict(
        session.execute(
            select(Workload.source_id, func.sum(runs_of_own_source))
            .where(Workload.source_id.in_(ids), Workload.upstream_total.is_not(None))
            .group_by(Workload.source_id)
        ).all()
    )
    readings = newest_readings(session, ids)
    answers = {}
    for source in sources:
        row = defined.get(source.id)
        workloads, counted = int(workloads_of.get(source.id) or 0), row.counted if row else 0
        total = int(row.total) if row and row.total is not None else None
        runs, runs_counted = int(stored.get(source.id) or 0), int(in_counted.get(source.id) or 0)
        reading = readings.get(source.id)
        summary = _summary(runs, source.run_noun, reading, None, workloads=(counted, workloads, runs_counted, total))
        answers[source.id] = SourceCompleteness(
            stored=runs,
            noun=source.run_noun,
            upstream_total=total,
            upstream_total_observed_at=row.counted_at if row else None,
            **_reading_fields(source, reading),
            summary=summary,
            workloads=workloads,
            counted_workloads=counted,
            stored_in_counted=runs_counted,
        )
    return answers


def every_source_completeness(session: Session) -> dict[str, SourceCompleteness]:
    """Source slug → ``source_completeness``, for every source."""
    sources = list(session.scalars(select(Source)))
    answers = source_completeness(session, sources)
    return {source.slug: answers[source.id] for source in sources}


def _partial(report: IngestionReport | None) -> bool:
    scope = report.snapshot_scope if report is not None else None
    return report is not None and report.read_from in SNAPSHOT_KINDS and (scope or "").startswith(PARTIAL_PREFIX)


def _read_at(report: IngestionReport) -> datetime | None:
    """A snapshot's own date (unknown when it states none), or when a live ingest or import ran."""
    return report.snapshot_observed_at if report.read_from in SNAPSHOT_KINDS else report.started_at


class _Reading(TypedDict):
    """The fields of ``Completeness`` that say where the data was read."""

    read_from: ReadFromKind | None
    live: bool
    read_at: datetime | None
    snapshot: SnapshotItem | None
    refresh_command: str | None


def _reading_fields(source: Source, report: IngestionReport | None) -> _Reading:
    snapshot = report is not None and report.read_from in SNAPSHOT_KINDS
    return {
        "read_from": cast(ReadFromKind, report.read_from) if report else None,
        "live": report is not None and report.read_from == "live",
        "read_at": _read_at(report) if report else None,
        "snapshot": SnapshotItem(
            observed_at=report.snapshot_observed_at,
            scope=report.snapshot_scope,
            partial=_partial(report),
            bundled=report.read_from == "bundled",
        )
        if report is not None and snapshot
        else None,
        # Only sources read through ``kernelindex ingest`` have a live upstream to read instead.
        "refresh_command": f"kernelindex ingest {source.slug}" if snapshot else None,
    }


def _where(report: IngestionReport) -> str:
    """Where the data was read, as the end of "… from ___"."""
    read_at = _read_at(report)
    day = read_at.strftime("%Y-%m-%d") if read_at else None
    if report.read_from == "live":
        return f"the live upstream, read on {day}"
    if report.read_from == "import":
        return f"imported files, the last imported on {day}"
    partial = "partial " if _partial(report) else ""
    dated = f"of {day}" if day else "(its date not recorded)"
    if report.read_from == "bundled":
        return f"the {partial}bundled snapshot {dated}"
    return f"a {partial}snapshot {dated}"


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun.removesuffix('s') if count == 1 else noun}"


def _summary(
    stored: int,
    noun: str,
    report: IngestionReport | None,
    total: int | None,
    workloads: tuple[int, int, int, int | None] | None = None,
) -> str:
    """The one line pages show. ``total`` is a workload's upstream count; ``workloads`` a source's
    (workloads counted, workloads, results stored in the counted ones, their upstream total)."""
    if report is None:
        return f"{_counted(stored, noun)} stored; no ingest that stored them is recorded."
    where = _where(report)
    if total is not None:
        return f"{stored:,} of {total:,} upstream {noun}, from {where}."
    line = f"{_counted(stored, noun)} from {where}"
    if workloads is not None and workloads[0] and workloads[3] is not None:
        counted, defined, stored_counted, counted_total = workloads
        return (
            f"{line}; upstream's count is recorded for {counted:,} of {defined:,} workloads "
            f"({stored_counted:,} of {counted_total:,} {noun} there)."
        )
    return f"{line}; upstream's count was not recorded." if _partial(report) else f"{line}."
