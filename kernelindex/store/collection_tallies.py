"""Collection tallies (``kernelindex.db.tally_tables.CollectionTally``), kept exact by the
transactions that change a collection's workloads or their runs.

Home shows every collection with its workload count, its eligible runs and its busiest workloads
(on a GPU, when one is chosen). Ranking every workload of the catalogue on each render costs tens
of milliseconds at 17,000 workloads, so each writing transaction recomputes the rows of the
collections it touched, just before it commits and after the workload tallies it reads
(``kernelindex.store.tallies`` calls ``recount_noted``): the collections of the workloads whose
tallies it recounted, of workloads it added, moved, renamed, retagged or deleted, or every
collection when it cannot tell. The GPU pages read their per-source coverage from the same rows,
and the workload lists the tags they can be filtered by.

On PostgreSQL two transactions changing one source's collections at once must not each rank a
collection without the other's workloads: each takes a transaction-scoped advisory lock per
source (in id order, after its workload locks, so two never wait on each other in a circle) and
reads after it, when, at READ COMMITTED, the other's committed rows are seen.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Collection, Iterable
from itertools import chain
from typing import Any

from sqlalchemy import and_, delete, event, insert, inspect, or_, select, text
from sqlalchemy.orm import Session, UOWTransaction

from kernelindex.db.tables import Workload
from kernelindex.db.tally_tables import EVERY_GPU, CollectionTally, WorkloadTally
from kernelindex.ranking import most_measured_first
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


def recount(session: Session, keys: Collection[CollectionKey] | None = None) -> None:
    """Recompute the rows of the collections ``keys`` (of every collection without) in the
    session's transaction, from the workloads and their tallies."""
    if session.get_bind().dialect.name == "postgresql":
        sources = {source for source, _ in keys} if keys is not None else session.scalars(select(Workload.source_id))
        for source in sorted(set(sources)):
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
    members = select(Workload.id, Workload.source_id, Workload.collection, Workload.name, Workload.tags)
    counts = select(WorkloadTally.workload_id, WorkloadTally.gpu_slug, WorkloadTally.runs, WorkloadTally.eligible_runs)
    if keys is not None:
        members = members.where(_in_collections(Workload, keys))
        counts = counts.join(Workload, Workload.id == WorkloadTally.workload_id).where(_in_collections(Workload, keys))
    collections: dict[CollectionKey, list[tuple[int, str]]] = defaultdict(list)
    tags: dict[CollectionKey, set[str]] = defaultdict(set)
    for workload_id, source, collection, name, workload_tags in session.execute(members):
        collections[source, collection].append((workload_id, name))
        tags[source, collection].update(map(str, workload_tags))
    # Workload id → GPU slug (EVERY_GPU: all of them) → (runs, eligible runs).
    tallies: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
    for workload_id, gpu, runs, eligible in session.execute(counts):
        tallies[workload_id][gpu] = (runs, eligible)
    rows = list(
        chain.from_iterable(_rows(key, workloads, tallies, tags[key]) for key, workloads in collections.items())
    )
    if rows:
        session.execute(insert(CollectionTally), rows)


def _rows(
    key: CollectionKey,
    workloads: list[tuple[int, str]],
    tallies: dict[int, dict[str, tuple[int, int]]],
    tags: set[str],
) -> Iterable[dict[str, Any]]:
    source, collection = key
    gpus = sorted({gpu for workload_id, _ in workloads for gpu in tallies.get(workload_id, ())} - {EVERY_GPU})
    for gpu in (EVERY_GPU, *gpus):
        on_gpu = {workload_id: tallies.get(workload_id, {}).get(gpu, (0, 0)) for workload_id, _ in workloads}

        def order(workload: tuple[int, str], on_gpu: dict[int, tuple[int, int]] = on_gpu, gpu: str = gpu) -> Any:
            runs, eligible = on_gpu[workload[0]]
            # Over every GPU, no GPU is chosen: the runs on it do not order the workloads.
            return most_measured_first(eligible, runs if gpu else 0, workload[1])

        yield {
            "source_id": source,
            "collection": collection,
            "gpu_slug": gpu,
            "workloads": len(workloads),
            "runs": sum(runs for runs, _ in on_gpu.values()),
            "eligible_runs": sum(eligible for _, eligible in on_gpu.values()),
            "measured": sum(runs > 0 for runs, _ in on_gpu.values()),
            "busiest": [workload_id for workload_id, _ in heapq.nsmallest(BUSIEST_KEPT, workloads, key=order)],
            "first_by_name": [workload_id for workload_id, _ in heapq.nsmallest(BUSIEST_KEPT, workloads, key=_name)]
            if gpu == EVERY_GPU
            else None,
            "tags": sorted(tags) if gpu == EVERY_GPU else None,
        }


def _name(workload: tuple[int, str]) -> str:
    return workload[1]


def _note(session: Session, keys: Iterable[CollectionKey]) -> None:
    session.info.setdefault(_DIRTY, set()).update(keys)


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: UOWTransaction) -> None:
    changed = set(map(id, chain(session.new, session.deleted)))
    for row in chain(session.new, session.dirty, session.deleted):
        if getattr(row, "__tablename__", None) != "workload":
            continue
        attrs = inspect(row).attrs
        moved = [attrs[name].history for name in ("source_id", "collection", "name", "tags")]
        if id(row) not in changed and not any(history.has_changes() for history in moved):
            continue
        sources = [*(moved[0].deleted or ()), row.source_id]
        names = [*(moved[1].deleted or ()), row.collection]
        _note(session, ((source, name) for source in sources for name in names))


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_DIRTY, None)
