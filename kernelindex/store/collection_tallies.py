"""Collection tallies (``kernelindex.db.tally_tables.CollectionTally``), kept exact by the
transactions that change a collection's workloads or their runs.

Home shows every collection with its workload count, its eligible runs and its busiest workloads
(on a GPU, when one is chosen). Ranking every workload of the catalogue on each render costs tens
of milliseconds at 17,000 workloads, so each writing transaction recomputes the rows of the
collections it touched, just before it commits and after the workload tallies it reads
(``kernelindex.store.tallies`` calls ``recount_noted``): the collections of the workloads whose
tallies it recounted, of workloads it added, moved, renamed or deleted, or every collection
when it cannot tell. The GPU pages read their per-source coverage from the same rows.

Each collection's rows come from a few index walks (``ix_workload_tally_busiest``, which copies
each workload's collection and name into its tallies), not from reading its workloads: an
ingest that adds workloads to a collection of 17,000 recounts it on every commit.

On PostgreSQL two transactions changing one source's collections at once must not each rank a
collection without the other's workloads: each takes a transaction-scoped advisory lock per
source (in id order, after its workload locks, so two never wait on each other in a circle) and
reads after it, when, at READ COMMITTED, the other's committed rows are seen.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from itertools import chain
from typing import Any

from sqlalchemy import and_, delete, event, func, insert, inspect, or_, select, text
from sqlalchemy.orm import Session, UOWTransaction

from kernelindex.db.tables import Workload
from kernelindex.db.tally_tables import EVERY_GPU, CollectionTally, WorkloadTally
from kernelindex.store.common import in_code_point_order
from kernelindex.store.version import confined_workloads, hidden_writes

# The busiest workloads kept per collection and GPU: as many as home shows.
BUSIEST_KEPT = 12
_DIRTY = "kernelindex.collections_dirty"  # (source id, collection) pairs
# The first key of the two-key advisory locks on a source's collection tallies (PostgreSQL).
_LOCK_CLASS = 0x4B49  # "KI"
_LOCK = text("SELECT pg_advisory_xact_lock(:class, :source)")
# Pairs per statement: well inside every backend's limit on bound parameters.
_CHUNK = 400

CollectionKey = tuple[int, str]  # (source id, collection name)
# What places a workload in a collection and in its order: the workload tallies copy these, and a
# change to one recounts both.
PLACING_COLUMNS = ("source_id", "collection", "name")


def recount(session: Session, keys: Collection[CollectionKey] | None = None) -> None:
    """Recompute the rows of the collections ``keys`` (of every collection without) in the
    session's transaction, from the workloads and their tallies."""
    if session.get_bind().dialect.name == "postgresql":
        every_source = select(Workload.source_id).distinct()
        sources = {source for source, _ in keys} if keys is not None else set(session.scalars(every_source))
        for source in sorted(sources):
            session.execute(_LOCK, {"class": _LOCK_CLASS, "source": source})
    if keys is None:
        session.execute(delete(CollectionTally))
        _write(session, None)
        return
    ordered = sorted(keys)
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        session.execute(delete(CollectionTally).where(_in_collections(CollectionTally, chunk)))
        _write(session, chunk)


def recount_noted(session: Session, recounted: Iterable[int] | None) -> None:
    """Recount the collections this transaction touched: those of the workloads whose tallies it
    recounted (``None``: every workload's) and of the workloads it added, moved or deleted."""
    noted = session.info.pop(_DIRTY, set())
    if "workload" in hidden_writes(session):  # workloads written in bulk: those the writes were confined to
        confined = confined_workloads(session)
        recounted = None if confined is None or recounted is None else {*recounted, *confined}
    if recounted is None:
        recount(session)
        return
    ids = sorted(set(recounted))
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        of_chunk = select(Workload.source_id, Workload.collection).where(Workload.id.in_(chunk))
        noted.update((source, collection) for source, collection in session.execute(of_chunk))
    if noted:
        recount(session, noted)


def _in_collections(table: Any, keys: Iterable[CollectionKey]) -> Any:
    by_source: dict[int, list[str]] = defaultdict(list)
    for source, collection in keys:
        by_source[source].append(collection)
    return or_(*(and_(table.source_id == source, table.collection.in_(names)) for source, names in by_source.items()))


def _write(session: Session, keys: list[CollectionKey] | None) -> None:
    if keys is None:
        keys = sorted((source, name) for source, name in session.execute(_every_collection))
    rows = [row for key in keys for row in _rows(session, key)]
    if rows:
        session.execute(insert(CollectionTally), rows)


_every_collection = select(Workload.source_id, Workload.collection).distinct()


def _rows(session: Session, key: CollectionKey) -> list[dict[str, Any]]:
    """The rows of one collection: a few index walks, whatever its size (the AIConfigurator
    collection holds 17,000 workloads, and an ingest recounts it on every commit)."""
    source, collection = key
    in_collection = (Workload.source_id == source, Workload.collection == collection)
    workloads = session.scalar(select(func.count()).select_from(Workload).where(*in_collection)) or 0
    if not workloads:
        return []
    first_by_name = list(
        session.scalars(
            select(Workload.id)
            .where(*in_collection)
            .order_by(in_code_point_order(session, Workload.name))
            .limit(BUSIEST_KEPT)
        )
    )
    tallied = (WorkloadTally.source_id == source, WorkloadTally.collection == collection)
    counts = session.execute(
        select(
            WorkloadTally.gpu_slug,
            func.count(),
            func.sum(WorkloadTally.runs),
            func.sum(WorkloadTally.eligible_runs),
        )
        .where(*tallied)
        .group_by(WorkloadTally.gpu_slug)
    ).all()
    per_gpu = {gpu: (int(measured), int(runs), int(eligible)) for gpu, measured, runs, eligible in counts}
    rows = []
    for gpu in sorted({EVERY_GPU, *per_gpu}):
        measured, runs, eligible = per_gpu.get(gpu, (0, 0, 0))
        # The order of ``ranking.most_measured_first``, along ``ix_workload_tally_busiest``.
        ranked = list(
            session.scalars(
                select(WorkloadTally.workload_id)
                .where(*tallied, WorkloadTally.gpu_slug == gpu)
                .order_by(WorkloadTally.eligible_runs.desc(), WorkloadTally.runs.desc(), WorkloadTally.name)
                .limit(BUSIEST_KEPT)
            )
        )
        # Fewer measured than are kept: every measured one is ranked, and the others follow by name.
        unmeasured = [workload_id for workload_id in first_by_name if workload_id not in ranked]
        rows.append(
            {
                "source_id": source,
                "collection": collection,
                "gpu_slug": gpu,
                "workloads": workloads,
                "runs": runs,
                "eligible_runs": eligible,
                "measured": measured,
                "busiest": (ranked + unmeasured)[:BUSIEST_KEPT],
                "first_by_name": first_by_name if gpu == EVERY_GPU else None,
            }
        )
    return rows


def _note(session: Session, keys: Iterable[CollectionKey]) -> None:
    session.info.setdefault(_DIRTY, set()).update(keys)


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: UOWTransaction) -> None:
    changed = set(map(id, chain(session.new, session.deleted)))
    for row in chain(session.new, session.dirty, session.deleted):
        if getattr(row, "__tablename__", None) != "workload":
            continue
        attrs = inspect(row).attrs
        moved = [attrs[name].history for name in PLACING_COLUMNS]
        if id(row) not in changed and not any(history.has_changes() for history in moved):
            continue
        sources = [*(moved[0].deleted or ()), row.source_id]
        names = [*(moved[1].deleted or ()), row.collection]
        _note(session, ((source, name) for source in sources for name in names))


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_DIRTY, None)
