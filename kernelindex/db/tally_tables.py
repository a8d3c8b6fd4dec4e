"""Workload tallies: each workload's run counts, per GPU and over every GPU, kept on write.

Derived data: ``kernelindex.store.tallies`` recomputes the rows of every workload a transaction
changed, in that transaction, so that lists (home, ``/workloads``, GPU pages, search) read a row
per workload instead of counting the run table on every render.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from kernelindex.db.base import Base

# ``gpu_slug`` of the row that counts a workload's runs on every GPU together.
EVERY_GPU = ""


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
