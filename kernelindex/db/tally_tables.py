"""Tallies kept on write: each workload's run counts (per GPU, over every GPU, per source of the
runs) and each collection's counts and busiest workloads.

Derived data: ``kernelindex.store.tallies`` recomputes the rows of every workload a transaction
changed, and ``kernelindex.store.collection_tallies`` those of their collections, in that
transaction, so that lists (home, ``/workloads``, GPU pages, search) read a row per workload or
collection instead of counting the run table on every render.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from kernelindex.db.base import Base

# ``gpu_slug`` of the row that counts a workload's runs on every GPU together.
EVERY_GPU = ""


# A workload's name as the tallies copy it: in code-point order on PostgreSQL too (its "C"
# collation; SQLite compares bytes), so an index walk yields a collection's busiest in the order
# ``ranking.most_measured_first`` gives them.
CODE_POINT_NAME = String(200, collation="C").with_variant(String(200), "sqlite")


class WorkloadTally(Base):
    __tablename__ = "workload_tally"
    __table_args__ = (
        # A GPU's workloads (its counts, its filter choices), without reading the others'.
        Index("ix_workload_tally_gpu_slug_workload_id", "gpu_slug", "workload_id"),
    )

    workload_id: Mapped[int] = mapped_column(ForeignKey("workload.id"), primary_key=True)
    gpu_slug: Mapped[str] = mapped_column(String(200), primary_key=True)  # EVERY_GPU: all of them
    runs: Mapped[int]  # every run, eligible or not
    eligible_runs: Mapped[int]  # runs that may be ranked (``kernelindex.store.reads.eligible``)
    best_sol: Mapped[float | None]  # the highest SOL score of an eligible run
    # The fastest eligible run (``ranking.fastest_reported``): the workload's headline there. Not a
    # foreign key: the tally is recounted in the transaction that changes its runs.
    fastest_run_id: Mapped[int | None]
    # The workload's source, collection and name, copied (and recounted when they change) so that
    # a collection's busiest workloads are an index walk (``ix_workload_tally_busiest``).
    source_id: Mapped[int]
    collection: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(CODE_POINT_NAME)


# A collection's workloads on a GPU, most measured first (``ranking.most_measured_first``).
Index(
    "ix_workload_tally_busiest",
    WorkloadTally.source_id,
    WorkloadTally.collection,
    WorkloadTally.gpu_slug,
    WorkloadTally.eligible_runs.desc(),
    WorkloadTally.runs.desc(),
    WorkloadTally.name,
)


class WorkloadSourceTally(Base):
    """How many runs each producer (the source that published them, or the registry's reruns)
    holds of each workload, per GPU and over every GPU: a controlled rerun measures another
    source's workload, so a source's stored runs are not its workloads' runs."""

    __tablename__ = "workload_source_tally"
    __table_args__ = (
        # A source's stored runs summed without reading the workloads of others.
        Index("ix_workload_source_tally_source_id_runs", "source_id", "runs"),
        # A GPU's runs per producer, without reading the other GPUs' rows.
        Index("ix_workload_source_tally_gpu_slug_source_id", "gpu_slug", "source_id"),
    )

    workload_id: Mapped[int] = mapped_column(ForeignKey("workload.id"), primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"), primary_key=True)  # the runs' producer
    gpu_slug: Mapped[str] = mapped_column(String(200), primary_key=True)  # EVERY_GPU: all of them
    runs: Mapped[int]


class CollectionTally(Base):
    """A collection's counts and its busiest workloads, over every GPU and on each GPU it has runs on.

    Derived from ``workload_tally`` and the workloads by ``kernelindex.store.collection_tallies``,
    in the transaction that changes either, so home reads a row per collection.
    """

    __tablename__ = "collection_tally"

    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"), primary_key=True)
    collection: Mapped[str] = mapped_column(String(64), primary_key=True)
    gpu_slug: Mapped[str] = mapped_column(String(200), primary_key=True)  # EVERY_GPU: all of them
    workloads: Mapped[int]  # in the collection, measured or not
    runs: Mapped[int]  # on the GPU, eligible or not
    eligible_runs: Mapped[int]  # on the GPU
    measured: Mapped[int]  # workloads with a run on the GPU
    busiest: Mapped[list[Any]]  # workload ids, most measured first (``ranking.most_measured_first``)
    # The EVERY_GPU row only (None on the others): the first workload ids by name, which are the
    # busiest on a GPU with no run in the collection.
    first_by_name: Mapped[list[Any] | None]
