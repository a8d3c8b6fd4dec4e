"""Workloads for the API: the filtered, sorted listing, and one workload with its comparison groups."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Text, and_, cast, func, or_, select
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.ranking import rank_group
from kernelindex.slugs import slugify
from kernelindex.store.catalog import origin_model_spellings
from kernelindex.store.common import contains, group_best, history, name_by_ref, source_ref
from kernelindex.store.keyset import Expr, Position, SortKey, keyset_page
from kernelindex.store.reads import eligible
from kernelindex.store.runs import run_facts, stack_text, with_references
from kernelindex.store.schemas import ComparisonGroupItem, WorkloadDetail, WorkloadItem, WorkloadManifest

WORKLOAD_SORTS: dict[str, tuple[SortKey, ...]] = {
    "name": (SortKey("name", str),),
    "runs": (SortKey("runs", int), SortKey("name", str)),
    "-runs": (SortKey("runs", int, descending=True), SortKey("name", str)),
    "best_sol": (SortKey("best_sol", float, descending=True, nullable=True), SortKey("name", str)),
    "last_record": (SortKey("last_record", datetime, descending=True, nullable=True), SortKey("name", str)),
}


@dataclass(frozen=True)
class WorkloadFilters:
    collection: str | None = None
    tag: str | None = None
    model: str | None = None
    gpu: str | None = None
    q: str | None = None


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


def _workload_conditions(session: Session, filters: WorkloadFilters) -> list[ColumnElement[bool]]:
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
            )
        )
    return conditions


def list_workloads(
    session: Session, filters: WorkloadFilters, sort: str, after: Position | None, limit: int
) -> tuple[list[WorkloadItem], Position | None]:
    stmt = select(Workload).where(*_workload_conditions(session, filters))
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
    rows, position = keyset_page(session, stmt, WORKLOAD_SORTS[sort], exprs, after, limit)
    return _workload_items(session, [row[0] for row in rows]), position


def _workload_items(session: Session, workloads: list[Workload]) -> list[WorkloadItem]:
    ids = [w.id for w in workloads]
    stats_q = _eligible_stats_subquery(ids)
    stats = {row.workload_id: row for row in session.execute(select(stats_q))}
    last_q = _last_record_subquery(ids)
    last = {row.workload_id: row.at for row in session.execute(select(last_q))}
    return [_workload_item(w, stats.get(w.id), last.get(w.id)) for w in workloads]


def _workload_item(workload: Workload, stats: Any, last_record_at: datetime | None) -> WorkloadItem:
    return WorkloadItem(
        slug=workload.name,
        title=workload.title,
        collection=workload.collection,
        tags=[str(tag) for tag in workload.tags],
        origin_model=workload.origin_model,
        model_slug=slugify(workload.origin_model) if workload.origin_model else None,
        case_count=workload.case_count,
        eligible_runs=stats.runs if stats else 0,
        best_sol_score=stats.best_sol if stats else None,
        last_record_at=last_record_at,
        digest=workload.digest,
        url=f"/workloads/{workload.name}",
        api_url=f"/api/v1/workloads/{workload.name}",
    )


def find_workload(session: Session, ref: str) -> Workload | None:
    """By slug, current digest or any earlier digest."""
    name = name_by_ref(session, Workload, "WorkloadSuite", ref)
    if name is None:
        return None
    return session.scalar(select(Workload).where(Workload.name == name).options(joinedload(Workload.source)))


def workload_detail(session: Session, workload: Workload) -> WorkloadDetail:
    item = _workload_items(session, [workload])[0]
    runs = session.scalars(with_references(select(Run).where(Run.workload_id == workload.id))).all()
    by_group: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_group[run.comparison_key].append(run)
    groups = []
    for key, members in by_group.items():
        sample = members[0]
        ranked = rank_group(run_facts(run) for run in members)
        by_name = {run.name: run for run in members}
        groups.append(
            ComparisonGroupItem(
                comparison_key=key,
                gpu=sample.environment.gpu_slug,
                gpu_product=sample.environment.gpu_product,
                environment=sample.environment.name,
                environment_title=sample.environment.title,
                stack=stack_text(sample.environment.manifest_json),
                protocol=sample.protocol.name,
                protocol_title=sample.protocol.title,
                runs=len(members),
                eligible_runs=len(ranked),
                best=group_best(by_name[ranked[0].run.name]) if ranked else None,
                runs_url=f"/api/v1/runs?workload={workload.name}&comparison_key={key}",
            )
        )
    groups.sort(key=lambda g: (g.best is None, g.best.latency_ns if g.best else 0, g.environment, g.protocol))
    return WorkloadDetail(
        **item.model_dump(),
        description=workload.description,
        sol_aggregate_ms=workload.sol_aggregate_ms,
        source=source_ref(workload.source),
        external_id=workload.external_id,
        missing_since=workload.missing_since,
        groups=groups,
        manifest=WorkloadManifest(digest=workload.digest, manifest=json.loads(workload.manifest_json)),
        history=history(session, "WorkloadSuite", workload.name),
    )
