"""Workloads as every list shows them: filtered, sorted, with their figures (PRODUCT.md §6).

``/workloads``, its JSON twin, home and ``/api/v1/workloads`` all read this module, so a
filter, a sort and a figure mean the same wherever they are shown. The figures of a
workload (eligible runs, best SOL score, fastest run, last record) are computed in SQL
by the rules of ``kernelindex.ranking``: ``eligible()`` is ``ineligibility_reasons``,
the fastest run is ``fastest_reported`` and the last record is the moment the current
#1 of one of its groups set it (``record_history``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, Text, and_, cast, func, or_, select
from sqlalchemy.orm import Session, joinedload

from kernelindex import urls
from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.slugs import slugify
from kernelindex.store.catalog import origin_model_spellings
from kernelindex.store.common import contains, fastest_eligible_runs, name_by_ref
from kernelindex.store.keyset import Expr, Position, SortKey, keyset_page, numbered_page
from kernelindex.store.reads import eligible
from kernelindex.store.runs import evaluation_stack
from kernelindex.store.schemas import FastestRun, WorkloadItem

WORKLOAD_SORTS: dict[str, tuple[SortKey, ...]] = {
    "name": (SortKey("name", str),),
    "runs": (SortKey("runs", int), SortKey("name", str)),
    "-runs": (SortKey("runs", int, descending=True), SortKey("name", str)),
    "best_sol": (SortKey("best_sol", float, descending=True, nullable=True), SortKey("name", str)),
    "last_record": (SortKey("last_record", datetime, descending=True, nullable=True), SortKey("name", str)),
}


COLLECTION_ORDER = ("L1", "L2", "Quant", "FlashInfer-Bench")


@dataclass(frozen=True)
class WorkloadFilters:
    collection: str | None = None
    tag: str | None = None
    model: str | None = None  # an origin model's name or slug
    gpu: str | None = None  # a GPU slug: workloads measured on it
    q: str | None = None  # a substring of the slug, title, origin model or description


def _last_record_subquery(ids: Sequence[int] | None = None) -> Any:
    """Per workload, when the #1 of one of its groups last changed.

    The last record of a group is set by its current #1: the fastest eligible run, the
    earliest observed among equals (the rule of ``ranking.record_history``).
    """
    scope = [eligible()] + ([Run.workload_id.in_(ids)] if ids is not None else [])
    best = (
        select(Run.workload_id, Run.comparison_key, func.min(Run.latency_ns).label("best"))
        .where(*scope)
        .group_by(Run.workload_id, Run.comparison_key)
        .subquery()
    )
    holder = (
        select(best.c.workload_id, func.min(Run.observed_at).label("at"))
        .join(
            Run,
            and_(
                Run.workload_id == best.c.workload_id,
                Run.comparison_key == best.c.comparison_key,
                Run.latency_ns == best.c.best,
            ),
        )
        .where(eligible())
        .group_by(best.c.workload_id, best.c.comparison_key)
        .subquery()
    )
    return select(holder.c.workload_id, func.max(holder.c.at).label("at")).group_by(holder.c.workload_id).subquery()


def _eligible_stats_subquery(ids: Sequence[int] | None = None) -> Any:
    scope = [eligible()] + ([Run.workload_id.in_(ids)] if ids is not None else [])
    return (
        select(Run.workload_id, func.count().label("runs"), func.max(Run.sol_score).label("best_sol"))
        .where(*scope)
        .group_by(Run.workload_id)
        .subquery()
    )


def _conditions(session: Session, filters: WorkloadFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.collection:
        conditions.append(func.lower(Workload.collection) == filters.collection.lower())
    if filters.tag:
        # Tags are a JSON list of strings: match one quoted element of its text.
        conditions.append(contains(cast(Workload.tags, Text), json.dumps(filters.tag.lower())))
    if filters.model:
        conditions.append(Workload.origin_model.in_(origin_model_spellings(session, slugify(filters.model))))
    if filters.gpu:
        measured = select(Run.workload_id).join(Environment, Run.environment_id == Environment.id)
        conditions.append(Workload.id.in_(measured.where(Environment.gpu_slug == filters.gpu.lower())))
    if filters.q:
        conditions.append(
            or_(
                contains(Workload.name, filters.q),
                contains(Workload.title, filters.q),
                contains(func.coalesce(Workload.origin_model, ""), filters.q),
                contains(Workload.description, filters.q),
            )
        )
    return conditions


def _listing(session: Session, filters: WorkloadFilters, sort: str) -> tuple[Select[Any], dict[str, Expr]]:
    """The SELECT of the matching workloads and the expressions their sort keys name."""
    stmt = select(Workload).where(*_conditions(session, filters))
    exprs: dict[str, Expr] = {"name": Workload.name}
    if sort in ("runs", "-runs", "best_sol"):
        stats = _eligible_stats_subquery()
        stmt = stmt.outerjoin(stats, stats.c.workload_id == Workload.id)
        exprs["runs"] = func.coalesce(stats.c.runs, 0)
        exprs["best_sol"] = stats.c.best_sol
    elif sort == "last_record":
        last = _last_record_subquery()
        stmt = stmt.outerjoin(last, last.c.workload_id == Workload.id)
        exprs["last_record"] = last.c.at
    return stmt, exprs


def list_workloads(
    session: Session, filters: WorkloadFilters, sort: str, after: Position | None, limit: int
) -> tuple[list[WorkloadItem], Position | None]:
    """One page after a position (the API's cursor), and the position the next page starts after."""
    stmt, exprs = _listing(session, filters, sort)
    rows, position = keyset_page(session, stmt, WORKLOAD_SORTS[sort], exprs, after, limit)
    return workload_items(session, [row[0] for row in rows]), position


def workloads_page(
    session: Session, filters: WorkloadFilters, sort: str, number: int, size: int
) -> tuple[list[WorkloadItem], int]:
    """Page ``number`` (from 1) of ``size`` for the HTML list and its twin, and how many match in all.

    The same listing as ``list_workloads``, paged by number because a page says "page 2 of 5".
    """
    stmt, exprs = _listing(session, filters, sort)
    rows, total = numbered_page(session, stmt, WORKLOAD_SORTS[sort], exprs, (number - 1) * size, size)
    return workload_items(session, [row[0] for row in rows]), total


def every_workload(session: Session) -> list[WorkloadItem]:
    """The whole catalogue by slug, with figures, as home lists it by collection."""
    return workload_items(session, list(session.scalars(select(Workload).order_by(Workload.name))), whole=True)


def by_collection(items: Sequence[WorkloadItem]) -> list[tuple[str, list[WorkloadItem]]]:
    """``items`` grouped by collection, the source's own collections first, in its order."""
    order = {name: position for position, name in enumerate(COLLECTION_ORDER)}
    names = sorted({item.collection for item in items}, key=lambda name: (order.get(name, len(order)), name))
    return [(name, [item for item in items if item.collection == name]) for name in names]


def _fastest_runs(session: Session, ids: Sequence[int] | None) -> dict[int, Run]:
    """Each workload's fastest eligible run, its headline (``ranking.fastest_reported``)."""
    scope = [Run.workload_id.in_(ids)] if ids is not None else []
    return {run.workload_id: run for run in fastest_eligible_runs(session, (Run.workload_id,), *scope)}


def fastest_run(run: Run) -> FastestRun:
    return FastestRun(
        run=run.name,
        latency_ns=run.latency_ns,
        primary_statistic=run.primary_statistic,
        sol_score=run.sol_score,
        implementation=run.implementation.project_slug,
        project=run.implementation.project,
        observed_at=run.observed_at,
        gpu=run.environment.gpu_slug,
        gpu_product=run.environment.gpu_product,
        environment=run.environment.name,
        environment_title=run.environment.title,
        stack=evaluation_stack(run.environment),
        evidence=run.evidence,
    )


def workload_items(session: Session, workloads: Sequence[Workload], whole: bool = False) -> list[WorkloadItem]:
    """``workloads`` with their figures, in the order given; ``whole`` when they are the whole catalogue."""
    ids = None if whole else [w.id for w in workloads]
    stats = {row.workload_id: row for row in session.execute(select(_eligible_stats_subquery(ids)))}
    last = {row.workload_id: row.at for row in session.execute(select(_last_record_subquery(ids)))}
    fastest = _fastest_runs(session, ids)
    items = []
    for workload in workloads:
        figures = stats.get(workload.id)
        top = fastest.get(workload.id)
        items.append(
            WorkloadItem(
                slug=workload.name,
                title=workload.title,
                collection=workload.collection,
                tags=[str(tag) for tag in workload.tags],
                origin_model=workload.origin_model,
                model_slug=slugify(workload.origin_model) if workload.origin_model else None,
                case_count=workload.case_count,
                eligible_runs=figures.runs if figures else 0,
                best_sol_score=figures.best_sol if figures else None,
                fastest=fastest_run(top) if top else None,
                last_record_at=last.get(workload.id),
                digest=workload.digest,
                url=urls.workload(workload.name),
                api_url=urls.api_workload(workload.name),
            )
        )
    return items


def facet_values(session: Session) -> dict[str, list[str]]:
    """The values each workload filter can take, for the filter form."""
    collections = sorted(set(session.scalars(select(Workload.collection).distinct())))
    models = sorted({m for m in session.scalars(select(Workload.origin_model).distinct()) if m}, key=str.casefold)
    tags = sorted({tag for tags in session.scalars(select(Workload.tags)) for tag in tags})
    gpus = sorted(set(session.scalars(select(Environment.gpu_slug).distinct())))
    return {"collection": collections, "model": models, "tag": tags, "gpu": gpus}


def find_workload(session: Session, ref: str) -> Workload | None:
    """By slug, current digest or any earlier digest."""
    name = name_by_ref(session, Workload, "WorkloadSuite", ref)
    if name is None:
        return None
    return session.scalar(select(Workload).where(Workload.name == name).options(joinedload(Workload.source)))
