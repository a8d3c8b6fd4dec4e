"""Read queries for the pages and the JSON permalinks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.tables import ManifestVersion, Run, Source, Workload

COLLECTION_ORDER = ("L1", "L2", "Quant", "FlashInfer-Bench")


def eligible_runs():  # type: ignore[no-untyped-def]
    """Runs that may be ranked (PRODUCT.md §5), as a reusable SELECT filter."""
    return (
        Run.status == "passed",
        Run.withdrawn_at.is_(None),
        Run.upstream_withdrawn.is_(False),
        Run.held_for_review.is_(False),
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
        session.execute(select(Run.workload_id, func.count()).where(*eligible_runs()).group_by(Run.workload_id)).all()
    )
    best: dict[int, Run] = {}
    runs = session.scalars(
        select(Run)
        .where(*eligible_runs())
        .options(joinedload(Run.implementation), joinedload(Run.environment))
        .order_by(Run.workload_id, Run.latency_ns, Run.name)
    )
    for run in runs:
        best.setdefault(run.workload_id, run)
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


def _pair(digest: str, manifest_json: str) -> dict[str, Any]:
    return {"digest": digest, "manifest": json.loads(manifest_json)}


def run_permalink(session: Session, name: str) -> dict[str, Any] | None:
    """A run and the four manifests it refers to, each with its digest; ``None`` if unknown."""
    run = session.scalar(
        select(Run)
        .where(Run.name == name)
        .options(
            joinedload(Run.workload),
            joinedload(Run.implementation),
            joinedload(Run.protocol),
            joinedload(Run.environment),
        )
    )
    if run is None:
        return None
    history = session.scalars(
        select(ManifestVersion)
        .where(ManifestVersion.kind == "BenchmarkRun", ManifestVersion.name == name)
        .order_by(ManifestVersion.recorded_at, ManifestVersion.id)
    )
    return {
        "name": run.name,
        "evidence": run.evidence,
        "comparisonKey": run.comparison_key,
        "eligible": run.status == "passed"
        and run.withdrawn_at is None
        and not run.upstream_withdrawn
        and not run.held_for_review,
        "heldForReview": run.held_for_review,
        "withdrawnUpstream": run.upstream_withdrawn_reason if run.upstream_withdrawn else None,
        "run": _pair(run.digest, run.manifest_json),
        "workload": _pair(run.workload.digest, run.workload.manifest_json),
        "implementation": _pair(run.implementation.digest, run.implementation.manifest_json),
        "protocol": _pair(run.protocol.digest, run.protocol.manifest_json),
        "environment": _pair(run.environment.digest, run.environment.manifest_json),
        "history": [
            {
                "digest": version.digest,
                "recordedAt": version.recorded_at.isoformat().replace("+00:00", "Z"),
                "supersededAt": version.superseded_at.isoformat().replace("+00:00", "Z")
                if version.superseded_at
                else None,
            }
            for version in history
        ],
    }
