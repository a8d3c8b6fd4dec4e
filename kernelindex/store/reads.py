"""Read queries for the pages and the JSON permalinks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.tables import Run, Source, Workload

COLLECTION_ORDER = ("L1", "L2", "Quant", "FlashInfer-Bench")


def eligible(run: Any = Run) -> ColumnElement[bool]:
    """Runs that may be ranked (PRODUCT.md §5), as a SELECT filter on ``Run`` or an alias of it.

    The SQL form of ``kernelindex.ranking.ineligibility_reasons``: the two must agree.
    """
    return and_(
        run.status == "passed",
        run.withdrawn_at.is_(None),
        run.upstream_withdrawn.is_(False),
        run.held_for_review.is_(False),
    )


@dataclass(frozen=True)
class BestRun:
    name: str
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    implementation: str
    gpu: str
    environment: str
    evidence: str


@dataclass(frozen=True)
class WorkloadSummary:
    slug: str
    title: str
    collection: str
    case_count: int
    run_count: int
    best: BestRun | None


@dataclass(frozen=True)
class SourceSummary:
    slug: str
    name: str
    url: str
    last_observed_at: datetime | None


def workloads_with_best_run(session: Session) -> list[WorkloadSummary]:
    """Every workload with its number of eligible runs and its fastest eligible run.

    "Fastest" here spans comparison groups on purpose (it answers "what is the best
    known number for this workload"); the label names the GPU and stack it was on.
    """
    counts = dict(
        session.execute(select(Run.workload_id, func.count()).where(eligible()).group_by(Run.workload_id)).all()
    )
    # The database picks each workload's fastest eligible run; only those are loaded.
    position = (
        func.row_number().over(partition_by=Run.workload_id, order_by=(Run.latency_ns, Run.name)).label("position")
    )
    ranked = select(Run.id, position).where(eligible()).subquery()
    runs = session.scalars(
        select(Run)
        .where(Run.id.in_(select(ranked.c.id).where(ranked.c.position == 1)))
        .options(joinedload(Run.implementation), joinedload(Run.environment))
    )
    best: dict[int, Run] = {run.workload_id: run for run in runs}
    summaries = []
    for workload in session.scalars(select(Workload).order_by(Workload.name)):
        run = best.get(workload.id)
        summaries.append(
            WorkloadSummary(
                slug=workload.name,
                title=workload.title,
                collection=workload.collection,
                case_count=workload.case_count,
                run_count=counts.get(workload.id, 0),
                best=None
                if run is None
                else BestRun(
                    name=run.name,
                    latency_ns=run.latency_ns,
                    primary_statistic=run.primary_statistic,
                    sol_score=run.sol_score,
                    implementation=run.implementation.project,
                    gpu=run.environment.gpu_product,
                    environment=run.environment.title,
                    evidence=run.evidence,
                ),
            )
        )
    return summaries


def by_collection(summaries: list[WorkloadSummary]) -> list[tuple[str, list[WorkloadSummary]]]:
    order = {name: position for position, name in enumerate(COLLECTION_ORDER)}
    names = sorted({s.collection for s in summaries}, key=lambda name: (order.get(name, len(order)), name))
    return [(name, [s for s in summaries if s.collection == name]) for name in names]


def sources(session: Session) -> list[SourceSummary]:
    return [
        SourceSummary(slug=s.slug, name=s.name, url=s.url, last_observed_at=s.last_observed_at)
        for s in session.scalars(select(Source).order_by(Source.name))
    ]


def store_is_empty(session: Session) -> bool:
    return session.scalar(select(func.count()).select_from(Workload)) == 0
