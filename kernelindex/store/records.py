"""Record history as the pages and feeds see it (PRODUCT.md §5).

A record is a moment when the #1 of a comparison group changed, computed per group (never
across groups) by the rule of ``kernelindex.ranking.record_history``.

The catalogue-wide list asks the database for the newest record-setting runs directly
(an anti-join on the leaderboard index, walked newest first and stopped after a page), so
its cost follows the page size, not the catalogue; a workload's history reads the facts of
its runs (``record_history``). Then, in both, the display columns of the record-setting
runs only. The interface is what a write-maintained record table would serve, so the
computation can move behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.orm import Session, aliased

from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Workload
from kernelindex.ranking import RecordBreak, RunFacts, record_history
from kernelindex.store.manifests import StoredText
from kernelindex.store.reads import eligible
from kernelindex.store.runs import environment_label, evaluation_stack
from kernelindex.store.spreads import interval_high, stored_uncertainty

# Bound parameters per IN (…) list; well under SQLite's and PostgreSQL's limits.
_IN_CHUNK = 500


@dataclass(frozen=True)
class RecordEntry:
    """One change of the #1 in one comparison group."""

    workload_slug: str
    workload_title: str
    comparison_key: str
    gpu: str  # Environment.gpu_product, e.g. "NVIDIA B200"
    environment_title: str
    environment_label: str  # ``store.runs.environment_label``
    protocol_title: str
    run_name: str
    implementation: str  # Implementation.project
    latency_ns: int
    observed_at: datetime
    previous_run_name: str | None
    previous_latency_ns: int | None
    improvement: float | None  # previous latency ÷ this latency; None for a group's first record
    # The evaluation stack of the environment (the protocol's harness version where unknown).
    stack: str | None = None


@dataclass(frozen=True)
class WorkloadRef:
    id: int
    slug: str
    title: str
    updated_at: datetime


def find_workload(session: Session, slug: str) -> WorkloadRef | None:
    row = session.execute(
        select(Workload.id, Workload.name, Workload.title, Workload.updated_at).where(Workload.name == slug)
    ).one_or_none()
    return None if row is None else WorkloadRef(id=row.id, slug=row.name, title=row.title, updated_at=row.updated_at)


def catalogue_records(
    session: Session, limit: int = 50, before: datetime | None = None, after: str | None = None
) -> list[RecordEntry]:
    """The newest record changes across the catalogue, newest first, runs observed at one moment
    in descending order of name. At most ``limit`` entries.

    ``before`` and ``after`` are a keyset cursor: only entries observed strictly before ``before``
    (a timezone-aware timestamp) are returned or, given ``after`` (a run name), also those observed
    at ``before`` whose run comes after ``after`` in this order. Pass the last entry's
    ``observed_at`` and ``run_name`` to get the next page: however many records share one moment
    (an ingest of a whole package observes all of its runs at once), none is skipped or repeated
    and a page never grows past ``limit``.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if after is not None and before is None:
        raise ValueError("after needs before")
    # Newest first, the database walks runs back in time along ix_run_observed_at_name and keeps
    # those that set a record, stopping after ``limit``: the cost follows the page, not the size
    # of the catalogue. Both keys descend, so the index is read backwards without a sort.
    rows = session.execute(
        _record_setters(before, after).order_by(_RUN.observed_at.desc(), _RUN.name.desc()).limit(limit)
    ).all()
    previous = _previous_records(session, rows)
    # Kept in the database's order: the cursor compares names by the database's collation.
    return _entries(session, [RecordBreak(run=_facts(row), previous=previous[row.name]) for row in rows])


_RUN, _EARLIER = aliased(Run), aliased(Run)


def _earlier(run: Any, other: Any) -> ColumnElement[bool]:
    """``other`` comes before ``run`` in the order ``record_history`` reads a group in."""
    return or_(
        other.observed_at < run.observed_at,
        and_(
            other.observed_at == run.observed_at,
            or_(
                other.latency_ns < run.latency_ns,
                and_(other.latency_ns == run.latency_ns, other.name < run.name),
            ),
        ),
    )


def _record_setters(
    before: datetime | None = None, after: str | None = None
) -> Select[str, int, str, int, datetime, str | None, int | None, int | None]:
    """Eligible runs whose interval lies entirely below that of every earlier eligible run of their
    group (``ranking.record_history``): the records."""

    def matched_earlier(*reaches: ColumnElement[bool]) -> Any:
        return (
            select(_EARLIER.id)
            .where(
                _EARLIER.workload_id == _RUN.workload_id,
                _EARLIER.comparison_key == _RUN.comparison_key,
                *reaches,
                eligible(_EARLIER),
                _earlier(_RUN, _EARLIER),
            )
            .exists()
        )

    # Not beaten beyond the noise: an earlier interval reaches down to the new one. Asked as two
    # ranges, runs with an interval (``ix_run_spread_low``) and without (``ix_run_leaderboard``).
    high = interval_high(_RUN)
    with_interval = matched_earlier(_EARLIER.spread_low_ns <= high)
    without = matched_earlier(_EARLIER.spread_low_ns.is_(None), _EARLIER.latency_ns <= high)
    stmt = select(
        _RUN.name,
        _RUN.workload_id,
        _RUN.comparison_key,
        _RUN.latency_ns,
        _RUN.observed_at,
        _RUN.spread_kind,
        _RUN.spread_low_ns,
        _RUN.spread_high_ns,
    ).where(eligible(_RUN), ~with_interval, ~without)
    if before is None:
        return stmt
    if after is None:
        return stmt.where(_RUN.observed_at < before)
    return stmt.where(or_(_RUN.observed_at < before, and_(_RUN.observed_at == before, _RUN.name < after)))


def _facts(row: Any) -> RunFacts:
    return RunFacts(
        name=row.name,
        comparison_key=row.comparison_key,
        latency_ns=row.latency_ns,
        observed_at=row.observed_at,
        uncertainty=stored_uncertainty(row.spread_kind, row.spread_low_ns, row.spread_high_ns),
    )


def _order(row: Any) -> tuple[datetime, int, str]:
    """The order ``record_history`` reads a group in (``_earlier`` in SQL)."""
    return (row.observed_at, row.latency_ns, row.name)


def _previous_records(session: Session, rows: Sequence[Any]) -> dict[str, RunFacts | None]:
    """The record each record-setting row broke, by name (``None`` for a group's first record).

    That is the record set just before it in its group: the record setters of the rows'
    workloads are read in one statement per chunk, not one per row.
    """
    workload_ids = sorted({row.workload_id for row in rows})
    setters: dict[tuple[int, str], list[Any]] = {}
    for start in range(0, len(workload_ids), _IN_CHUNK):
        chunk = workload_ids[start : start + _IN_CHUNK]
        for setter in session.execute(_record_setters().where(_RUN.workload_id.in_(chunk))):
            setters.setdefault((setter.workload_id, setter.comparison_key), []).append(setter)
    previous: dict[str, RunFacts | None] = {}
    for row in rows:
        earlier = [s for s in setters.get((row.workload_id, row.comparison_key), []) if _order(s) < _order(row)]
        previous[row.name] = _facts(max(earlier, key=_order)) if earlier else None
    return previous


def workload_records(session: Session, workload_id: int) -> list[RecordEntry]:
    """Every record change of every comparison group of one workload, newest first."""
    return _entries(session, _newest_first(_breaks(session, [Run.workload_id == workload_id])))


def _breaks(session: Session, where: Sequence[Any]) -> list[RecordBreak]:
    # Only eligible runs can set records, and filtering them in SQL keeps the rows few and
    # narrow; the facts built here are therefore all eligible, as ``record_history`` checks.
    rows = session.execute(
        select(
            Run.name,
            Run.comparison_key,
            Run.latency_ns,
            Run.observed_at,
            Run.spread_kind,
            Run.spread_low_ns,
            Run.spread_high_ns,
        ).where(eligible(), *where)
    )
    groups: dict[str, list[RunFacts]] = {}
    for row in rows:
        groups.setdefault(row.comparison_key, []).append(_facts(row))
    return [brk for facts in groups.values() for brk in record_history(facts)]


def _newest_first(breaks: Iterable[RecordBreak]) -> list[RecordBreak]:
    # The name breaks ties so that equal timestamps always list in the same order.
    ordered = sorted(breaks, key=lambda brk: brk.run.name)
    return sorted(ordered, key=lambda brk: brk.run.observed_at, reverse=True)


def _entries(session: Session, breaks: Sequence[RecordBreak]) -> list[RecordEntry]:
    names = [brk.run.name for brk in breaks]
    details: dict[str, Any] = {}
    stacks: dict[str, str | None] = {}
    labels: dict[str, str] = {}
    for start in range(0, len(names), _IN_CHUNK):
        rows = session.execute(
            select(
                Run.name,
                Workload.name.label("workload_slug"),
                Workload.title.label("workload_title"),
                Environment.name.label("environment_name"),
                Environment.gpu_product,
                Environment.title.label("environment_title"),
                Environment.digest.label("environment_digest"),
                Environment.manifest_json.label("environment_manifest"),
                Protocol.title.label("protocol_title"),
                Protocol.harness_version,
                Implementation.project,
            )
            .join(Workload, Run.workload_id == Workload.id)
            .join(Environment, Run.environment_id == Environment.id)
            .join(Protocol, Run.protocol_id == Protocol.id)
            .join(Implementation, Run.implementation_id == Implementation.id)
            .where(Run.name.in_(names[start : start + _IN_CHUNK]))
        )
        for row in rows:
            details[row.name] = row
            if row.environment_name not in stacks:
                stored = StoredText(row.environment_digest, row.environment_manifest)
                stacks[row.environment_name] = evaluation_stack(stored)
                labels[row.environment_name] = environment_label(stored)
    entries = []
    for brk in breaks:
        row = details[brk.run.name]
        entries.append(
            RecordEntry(
                workload_slug=row.workload_slug,
                workload_title=row.workload_title,
                comparison_key=brk.run.comparison_key,
                gpu=row.gpu_product,
                environment_title=row.environment_title,
                environment_label=labels[row.environment_name],
                protocol_title=row.protocol_title,
                run_name=brk.run.name,
                implementation=row.project,
                latency_ns=brk.run.latency_ns,
                observed_at=brk.run.observed_at,
                previous_run_name=brk.previous.name if brk.previous else None,
                previous_latency_ns=brk.previous.latency_ns if brk.previous else None,
                improvement=brk.improvement,
                stack=stacks[row.environment_name] or row.harness_version,
            )
        )
    return entries
