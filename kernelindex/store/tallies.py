"""Workload tallies (``kernelindex.db.tally_tables``: runs per GPU and per source of the runs), kept
exact by the transactions that write runs.

A transaction that writes runs notes their workloads: run rows it flushes name theirs (and a
workload it moves or renames, its own: a tally copies them), and a write whose rows are not
seen (a multi-row UPDATE, the bulk path) names the workloads its transaction confined its writes
to (``version.confine_writes``), or else every workload. Just before it commits, the
transaction recomputes the tallies of those workloads from their runs, so the counts become
visible exactly with the runs they count.

Two transactions that change the same workload at once on PostgreSQL must not each count
without the other's runs: each first locks the workload rows it recounts (in id order, so two
never wait on each other in a circle) and counts after the lock, when, at READ COMMITTED, the
other's committed runs are seen. The lock (``FOR NO KEY UPDATE``) does not conflict with the
key-share locks that inserting a run takes on its workload. SQLite runs one writer at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from sqlalchemy import ColumnElement, case, delete, event, func, insert, inspect, literal, or_, select, union_all
from sqlalchemy.orm import Session, UOWTransaction

from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.db.tally_tables import EVERY_GPU, CollectionTally, WorkloadSourceTally, WorkloadTally
from kernelindex.store import collection_tallies, revisions
from kernelindex.store.reads import eligible
from kernelindex.store.version import confined_workloads, hidden_writes

_DIRTY = "kernelindex.tallies_dirty"  # workload ids to recount, or None for every workload
_EVERY_WORKLOAD = None
# Tables whose rows the tallies count or copy: runs, the environments that give a run its GPU, and
# the workloads whose source, collection and name they copy.
_COUNTED_TABLES = frozenset({"run", "environment", "workload"})
# Ids per statement: well inside every backend's limit on bound parameters.
_CHUNK = 1000


def eligible_stats(ids: Sequence[int] | None = None, gpu: str | None = None) -> Any:
    """Per workload with eligible runs (on ``gpu``, given one): ``runs``, their count, ``best_sol``
    and ``fastest_run_id``, its headline there (``ranking.fastest_reported``)."""
    conditions = [WorkloadTally.gpu_slug == (gpu or EVERY_GPU), WorkloadTally.eligible_runs > 0]
    if ids is not None:
        conditions.append(WorkloadTally.workload_id.in_(ids))
    return (
        select(
            WorkloadTally.workload_id,
            WorkloadTally.eligible_runs.label("runs"),
            WorkloadTally.best_sol.label("best_sol"),
            WorkloadTally.fastest_run_id,
        )
        .where(*conditions)
        .subquery()
    )


def runs_on_gpu(gpu: str, ids: Sequence[int] | None = None) -> Any:
    """Per workload measured on ``gpu``: ``runs``, its runs there, eligible or not."""
    conditions = [WorkloadTally.gpu_slug == gpu]
    if ids is not None:
        conditions.append(WorkloadTally.workload_id.in_(ids))
    return select(WorkloadTally.workload_id, WorkloadTally.runs.label("runs")).where(*conditions).subquery()


def eligible_run_count(session: Session) -> int:
    """The runs that may be ranked in the whole catalogue, on every GPU (summed over the collections)."""
    total = select(func.sum(CollectionTally.eligible_runs)).where(CollectionTally.gpu_slug == EVERY_GPU)
    return int(session.scalar(total) or 0)


def workloads_per_gpu(session: Session) -> dict[str, int]:
    """Each GPU with runs and how many workloads have a run on it (summed over the collections)."""
    rows = session.execute(
        select(CollectionTally.gpu_slug, func.sum(CollectionTally.measured))
        .where(CollectionTally.gpu_slug != EVERY_GPU)
        .group_by(CollectionTally.gpu_slug)
    )
    return {slug: int(count) for slug, count in rows}


def recount(session: Session, workload_ids: Iterable[int] | None = None, *, producers: bool = True) -> None:
    """Recompute the tallies of ``workload_ids`` (of every workload without) in the session's
    transaction; without ``producers``, all but the runs per producer (``WorkloadSourceTally``),
    for a migration older than their present form."""
    if workload_ids is None:
        _recount(session, None, producers)
        return
    ids = sorted(set(workload_ids))
    for start in range(0, len(ids), _CHUNK):
        _recount(session, ids[start : start + _CHUNK], producers)


def _recount(session: Session, ids: list[int] | None, producers: bool) -> None:
    of_ids: list[ColumnElement[bool]] = [] if ids is None else [Run.workload_id.in_(ids)]
    if session.get_bind().dialect.name == "postgresql":
        locked = select(Workload.id).order_by(Workload.id).with_for_update(key_share=True)
        session.execute(locked if ids is None else locked.where(Workload.id.in_(ids))).all()
    session.execute(delete(WorkloadTally).where(*([] if ids is None else [WorkloadTally.workload_id.in_(ids)])))
    if producers:
        session.execute(
            delete(WorkloadSourceTally).where(*([] if ids is None else [WorkloadSourceTally.workload_id.in_(ids)]))
        )
    counted = (
        func.count().label("runs"),
        func.sum(case((eligible(), 1), else_=0)).label("eligible_runs"),
        func.max(case((eligible(), Run.sol_score))).label("best_sol"),
    )
    per_gpu = (
        select(Run.workload_id, Environment.gpu_slug, *counted)
        .join(Environment, Environment.id == Run.environment_id)
        .where(*of_ids)
        .group_by(Run.workload_id, Environment.gpu_slug)
    )
    every_gpu = select(Run.workload_id, literal(EVERY_GPU), *counted).where(*of_ids).group_by(Run.workload_id)
    counts = union_all(per_gpu, every_gpu).subquery()
    rows = select(
        *counts.c, _fastest(counts).label("fastest_run_id"), Workload.source_id, Workload.collection, Workload.name
    ).join(Workload, Workload.id == counts.c.workload_id)
    if ids is not None:
        # Said again of the workloads, so that PostgreSQL reads them by key: joined on the counts
        # alone it hashed every workload of the catalogue.
        rows = rows.where(Workload.id.in_(ids))
    columns = [
        *("workload_id", "gpu_slug", "runs", "eligible_runs", "best_sol", "fastest_run_id"),
        *collection_tallies.PLACING_COLUMNS,  # the workload's, copied
    ]
    session.execute(insert(WorkloadTally).from_select(columns, rows))
    if producers:
        _recount_producers(session, of_ids)


def _recount_producers(session: Session, of_ids: list[ColumnElement[bool]]) -> None:
    per_source_gpu = (
        select(Run.workload_id, Run.source_id, Environment.gpu_slug, func.count())
        .join(Environment, Environment.id == Run.environment_id)
        .where(*of_ids)
        .group_by(Run.workload_id, Run.source_id, Environment.gpu_slug)
    )
    per_source = (
        select(Run.workload_id, Run.source_id, literal(EVERY_GPU), func.count())
        .where(*of_ids)
        .group_by(Run.workload_id, Run.source_id)
    )
    session.execute(
        insert(WorkloadSourceTally).from_select(
            ["workload_id", "source_id", "gpu_slug", "runs"], union_all(per_source_gpu, per_source)
        )
    )


def _fastest(counts: Any) -> Any:
    """The fastest eligible run of each row of ``counts`` (a workload on one GPU, or on every GPU),
    by the rule of ``ranking.fastest_reported``: equal latencies go by name.

    A subquery per row, along the workload's runs (``ix_run_leaderboard``): whatever the
    planner estimates, it reads only those runs. Joined to per-group window ranks instead, it
    was planned as a nested loop over every pair of rows when it misjudged their number.
    """
    return (
        select(Run.id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(
            Run.workload_id == counts.c.workload_id,
            or_(counts.c.gpu_slug == EVERY_GPU, Environment.gpu_slug == counts.c.gpu_slug),
            eligible(),
        )
        .order_by(Run.latency_ns, Run.name)
        .limit(1)
        .correlate(counts)
        .scalar_subquery()
    )


def _note(session: Session, workload_ids: Iterable[int] | None) -> None:
    if workload_ids is None:
        session.info[_DIRTY] = _EVERY_WORKLOAD
        return
    dirty = session.info.setdefault(_DIRTY, set())
    if dirty is not _EVERY_WORKLOAD:
        dirty.update(workload_ids)


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: UOWTransaction) -> None:
    new = set(map(id, session.new))
    for row in chain(session.new, session.dirty, session.deleted):
        table = getattr(row, "__tablename__", None)
        if table == "run":
            moved = inspect(row).attrs.workload_id.history
            _note(session, [row.workload_id, *(moved.deleted or ())])
        elif table == "environment" and id(row) not in new and inspect(row).attrs.gpu_slug.history.has_changes():
            _note(session, None)  # runs moved between GPUs
        elif table == "workload" and id(row) not in new:
            attrs = inspect(row).attrs
            if any(attrs[name].history.has_changes() for name in collection_tallies.PLACING_COLUMNS):
                _note(session, [row.id])


# Inserted first: the tallies are written before ``version`` numbers the transaction, so every
# writer takes the workload locks before the sequence row's lock, never the other way round.
@event.listens_for(Session, "before_commit", insert=True)
def _before_commit(session: Session) -> None:
    session.flush()
    if _COUNTED_TABLES & hidden_writes(session):
        _note(session, confined_workloads(session))
    dirty = session.info.pop(_DIRTY, set())
    # A revision's runs decide which revision is current (``revisions.current_revision``).
    new_revisions = revisions.note_new_revisions(session)
    if dirty is _EVERY_WORKLOAD or dirty or new_revisions:
        revisions.mark_revisions(session, None if dirty is _EVERY_WORKLOAD else {*dirty, *new_revisions})
        session.flush()
    recount(session, dirty)
    # After the workload tallies, which the collections' are derived from.
    collection_tallies.recount_noted(session, dirty)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_DIRTY, None)
