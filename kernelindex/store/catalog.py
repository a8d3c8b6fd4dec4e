"""Catalogue listings: workloads with their figures, and the GPU, model, implementation
and source pages' queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, SQLColumnExpression, String, and_, cast, exists, func, select, true
from sqlalchemy.orm import Session

from kernelindex.db.tables import Environment, Implementation, IngestionReport, Run, Source, Workload
from kernelindex.slugs import slugify
from kernelindex.store.reads import eligible

WORKLOAD_SORTS = ("name", "runs", "best_sol", "last_record")


@dataclass(frozen=True)
class WorkloadListing:
    slug: str
    title: str
    collection: str
    tags: list[str]
    origin_model: str | None
    case_count: int
    eligible_runs: int
    best_sol_score: float | None
    best_latency_ns: int | None
    last_record_at: datetime | None


@dataclass(frozen=True)
class WorkloadFilters:
    collection: str | None = None
    tag: str | None = None
    model: str | None = None
    gpu: str | None = None
    text: str | None = None


def _like_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def list_workloads(
    session: Session, filters: WorkloadFilters, sort: str, offset: int, limit: int
) -> tuple[list[WorkloadListing], int]:
    """One page of workloads with their eligible-run figures, and the total that match."""
    figures = (
        select(
            Run.workload_id.label("workload_id"),
            func.count(Run.id).label("eligible_runs"),
            func.max(Run.sol_score).label("best_sol"),
            func.min(Run.latency_ns).label("best_latency"),
            func.max(Run.observed_at).label("last_record"),
        )
        .where(eligible())
        .group_by(Run.workload_id)
        .subquery()
    )
    conditions: list[ColumnElement[bool]] = []
    if filters.collection:
        conditions.append(func.lower(Workload.collection) == filters.collection.lower())
    if filters.tag:
        conditions.append(cast(Workload.tags, String).like(f'%"{_like_literal(filters.tag)}"%', escape="\\"))
    if filters.model:
        conditions.append(func.lower(Workload.origin_model) == filters.model.lower())
    if filters.gpu:
        conditions.append(
            exists(
                select(Run.id)
                .join(Environment, Environment.id == Run.environment_id)
                .where(Run.workload_id == Workload.id, Environment.gpu_slug == filters.gpu)
            )
        )
    if filters.text:
        pattern = f"%{_like_literal(filters.text.lower())}%"
        conditions.append(
            func.lower(Workload.title).like(pattern, escape="\\")
            | func.lower(Workload.name).like(pattern, escape="\\")
            | func.lower(Workload.description).like(pattern, escape="\\")
        )
    where = and_(*conditions) if conditions else true()
    total = session.scalar(select(func.count()).select_from(Workload).where(where)) or 0
    orders: dict[str, list[SQLColumnExpression[Any]]] = {
        "name": [Workload.name],
        "runs": [func.coalesce(figures.c.eligible_runs, 0).desc(), Workload.name],
        "best_sol": [func.coalesce(figures.c.best_sol, -1.0).desc(), Workload.name],
        "last_record": [func.coalesce(figures.c.last_record, datetime(1970, 1, 1)).desc(), Workload.name],
    }
    order = orders[sort]
    rows = session.execute(
        select(Workload, figures.c.eligible_runs, figures.c.best_sol, figures.c.best_latency, figures.c.last_record)
        .outerjoin(figures, figures.c.workload_id == Workload.id)
        .where(where)
        .order_by(*order)
        .offset(offset)
        .limit(limit)
    ).all()
    return [
        WorkloadListing(
            slug=workload.name,
            title=workload.title,
            collection=workload.collection,
            tags=list(workload.tags),
            origin_model=workload.origin_model,
            case_count=workload.case_count,
            eligible_runs=count or 0,
            best_sol_score=best_sol,
            best_latency_ns=best_latency,
            last_record_at=last_record,
        )
        for workload, count, best_sol, best_latency, last_record in rows
    ], total


def facet_values(session: Session) -> dict[str, list[str]]:
    """The values each workload filter can take, for the filter form."""
    collections = sorted(set(session.scalars(select(Workload.collection).distinct())))
    models = sorted({m for m in session.scalars(select(Workload.origin_model).distinct()) if m}, key=str.casefold)
    tags = sorted({tag for tags in session.scalars(select(Workload.tags)) for tag in tags})
    gpus = sorted(set(session.scalars(select(Environment.gpu_slug).distinct())))
    return {"collection": collections, "model": models, "tag": tags, "gpu": gpus}


@dataclass(frozen=True)
class GpuCoverage:
    slug: str
    product: str
    architecture: str | None
    measured_workloads: int
    runs: int


def gpu_coverage(session: Session) -> dict[str, GpuCoverage]:
    """Per GPU seen in any environment (all stacks together): workloads measured and runs."""
    rows = session.execute(
        select(
            Environment.gpu_slug,
            func.min(Environment.gpu_product),
            func.min(Environment.architecture),
            func.count(Run.id),
            func.count(func.distinct(Run.workload_id)),
        )
        .outerjoin(Run, Run.environment_id == Environment.id)
        .group_by(Environment.gpu_slug)
    ).all()
    return {
        slug: GpuCoverage(slug=slug, product=product, architecture=arch, measured_workloads=workloads, runs=runs)
        for slug, product, arch, runs, workloads in rows
    }


def workloads_without_gpu(session: Session, gpu_slug: str, limit: int = 500) -> tuple[list[Workload], int]:
    """Workloads nobody has measured on a GPU: the gaps."""
    measured = (
        select(Run.workload_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(Environment.gpu_slug == gpu_slug)
    )
    condition = Workload.id.not_in(measured)
    total = session.scalar(select(func.count()).select_from(Workload).where(condition)) or 0
    rows = list(session.scalars(select(Workload).where(condition).order_by(Workload.name).limit(limit)))
    return rows, total


def implementations_of_project(session: Session, project_slug: str) -> list[Implementation]:
    return list(
        session.scalars(
            select(Implementation).where(Implementation.project_slug == project_slug).order_by(Implementation.name)
        )
    )


def workloads_of_model(session: Session, model_slug_matches: list[str]) -> list[Workload]:
    return list(
        session.scalars(select(Workload).where(Workload.origin_model.in_(model_slug_matches)).order_by(Workload.name))
    )


def origin_models(session: Session) -> list[str]:
    return sorted({m for m in session.scalars(select(Workload.origin_model).distinct()) if m}, key=str.casefold)


def origin_model_spellings(session: Session, slug: str) -> list[str]:
    """The origin-model names that slug alike to ``slug``: one model, however its workloads spell it."""
    return [name for name in origin_models(session) if slugify(name) == slug]


def source_by_slug(session: Session, slug: str) -> Source | None:
    return session.scalar(select(Source).where(Source.slug == slug))


def ingestion_reports(session: Session, source_id: int, limit: int = 50) -> list[IngestionReport]:
    return list(
        session.scalars(
            select(IngestionReport)
            .where(IngestionReport.source_id == source_id)
            .order_by(IngestionReport.started_at.desc(), IngestionReport.id.desc())
            .limit(limit)
        )
    )


def source_counts(session: Session, source_id: int) -> tuple[int, int]:
    workloads = session.scalar(select(func.count()).select_from(Workload).where(Workload.source_id == source_id))
    runs = session.scalar(select(func.count()).select_from(Run).where(Run.source_id == source_id))
    return workloads or 0, runs or 0
