"""Version regressions: where a newer version of a framework measured slower than an older one.

Derived data, like the search index: ``kernelindex.store.regressions`` computes it from the
runs' per-case results when a source is ingested and can recompute it at any time, so that
the pages read a table instead of every case result of every run.

- ``version_regression``: one case of one workload on one GPU where a framework's kernel in a
  newer version is slower than in its fastest older version by more than the source's noise.
- ``regression_noise``: per source, the noise bound the regressions were found with and how
  it was estimated.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from kernelindex.db.base import Base
from kernelindex.db.tables import DIGEST


class VersionRegression(Base):
    __tablename__ = "version_regression"
    __table_args__ = (
        # The per-case ranking's flags: one workload's regressions at one case.
        Index("ix_version_regression_workload_id_case_index", "workload_id", "case_index"),
        # /regressions: the largest slowdowns first, of all, on one GPU or of one framework, read
        # in index order however deep the page; the GPU and framework choices are counted from them.
        Index("ix_version_regression_slowdown_id", "slowdown", "id"),
        Index("ix_version_regression_gpu_slug_slowdown_id", "gpu_slug", "slowdown", "id"),
        Index("ix_version_regression_framework_slowdown_id", "framework", "slowdown", "id"),
        Index("ix_version_regression_gpu_slug_framework_slowdown_id", "gpu_slug", "framework", "slowdown", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"), index=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workload.id"))
    comparison_key: Mapped[str] = mapped_column(DIGEST)
    gpu_slug: Mapped[str] = mapped_column(String(200))
    framework: Mapped[str] = mapped_column(String(64))
    kernel: Mapped[str] = mapped_column(String(300))
    case_index: Mapped[int]
    newer_run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    newer_version: Mapped[str] = mapped_column(String(300))
    newer_latency_ns: Mapped[int] = mapped_column(BigInteger)
    older_run_id: Mapped[int] = mapped_column(ForeignKey("run.id"))
    older_version: Mapped[str] = mapped_column(String(300))
    older_latency_ns: Mapped[int] = mapped_column(BigInteger)
    slowdown: Mapped[float]  # newer ÷ older − 1: 0.12 for 12 % slower


class RegressionNoise(Base):
    __tablename__ = "regression_noise"

    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"), primary_key=True)
    bound: Mapped[float]  # a fraction: 0.05 for 5 %
    pairs: Mapped[int]
    estimated: Mapped[bool] = mapped_column(Boolean)  # False: too few pairs, the fixed bound
    method: Mapped[str] = mapped_column(Text)
    # "repeats" (cases the source measured twice) or "frameworks" (two frameworks running one
    # library function); only the former measures a figure's own noise (``store.spreads``).
    basis: Mapped[str | None] = mapped_column(String(16))
    computed_at: Mapped[datetime]
