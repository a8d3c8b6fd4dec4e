"""Implementations (projects): the listing by slug, and one with its workloads on each GPU.

``/implementations/{slug}``, its JSON twin and ``/api/v1/implementations[/{slug}]`` read
this module: ``implementation_detail`` answers "its figures, per GPU and per source", and
``implementation_workloads_page`` / ``list_implementation_workloads`` "its best run on each
workload and GPU", one page at a time (a project such as KernelBench's PyTorch has thousands
of runs). Ranks come from ``common.rank_expression``, the SQL form of ``ranking.rank_group``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, case, func, or_, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Environment, Implementation, Run, Source, Workload
from kernelindex.store.common import (
    RankSpan,
    best_per_gpu,
    contains,
    group_sizes,
    name_by_ref,
    rank_expression,
    rank_span_fields,
    rank_spans,
)
from kernelindex.store.gpu_filter import gpu_named
from kernelindex.store.keyset import SLUG_ORDER, Expr, Position, SortKey, keyset_page, numbered_page
from kernelindex.store.manifests import implementation_manifest
from kernelindex.store.reads import eligible
from kernelindex.store.run_queries import run_fields
from kernelindex.store.runs import availability_text, environment_label
from kernelindex.store.schemas import (
    ImplementationDetail,
    ImplementationGpu,
    ImplementationItem,
    ImplementationRun,
    ImplementationSource,
    ImplementationWorkload,
    RevisionRuns,
    SourceRevisions,
)
from kernelindex.store.source_filter import source_named

# SOL-ExecBench publishes no code, only each submission's figures: its adapter labels an
# implementation "submission-<id>", one upload to the board. Such labels are submissions to a
# reader, not revisions of a published code base (a rerun's source hash, a library version).
SUBMISSION_LABEL = re.compile(r"submission-[0-9]+")


def list_implementations(
    session: Session, q: str | None, after: Position | None, limit: int
) -> tuple[list[ImplementationItem], Position | None]:
    stmt = select(func.min(Implementation.project).label("project")).group_by(Implementation.project_slug)
    if q:
        stmt = stmt.where(or_(contains(Implementation.project, q), contains(Implementation.project_slug, q)))
    rows, position = keyset_page(session, stmt, SLUG_ORDER, {"slug": Implementation.project_slug}, after, limit)
    return _implementation_items(session, [(row[-1], row.project) for row in rows]), position


def _implementation_items(session: Session, projects: list[tuple[str, str]]) -> list[ImplementationItem]:
    slugs = [slug for slug, _ in projects]
    stats = {
        row.slug: row
        for row in session.execute(
            select(
                Implementation.project_slug.label("slug"),
                func.count(func.distinct(Implementation.id)).label("revisions"),
                func.count(Run.id).label("runs"),
                func.coalesce(func.sum(case((eligible(), 1), else_=0)), 0).label("eligible_runs"),
                func.count(func.distinct(Run.workload_id)).label("workloads"),
                func.count(func.distinct(Environment.gpu_slug)).label("gpus"),
                func.max(Run.observed_at).label("last_observed_at"),
            )
            .outerjoin(Run, Run.implementation_id == Implementation.id)
            .outerjoin(Environment, Run.environment_id == Environment.id)
            .where(Implementation.project_slug.in_(slugs))
            .group_by(Implementation.project_slug)
        )
    }
    return [
        ImplementationItem(
            slug=slug,
            project=project,
            revisions=stats[slug].revisions,
            runs=stats[slug].runs,
            eligible_runs=stats[slug].eligible_runs,
            workloads=stats[slug].workloads,
            gpus=stats[slug].gpus,
            last_observed_at=stats[slug].last_observed_at,
            url=urls.implementation(slug),
            api_url=urls.api_implementation(slug),
        )
        for slug, project in projects
    ]


def implementation_detail(session: Session, ref: str) -> ImplementationDetail | None:
    """By project slug, or by the digest of any of its revisions' manifests: its figures, its runs
    and workloads per GPU and per source, and ``first_places``, the comparison groups where one
    of its runs ranks #1. Its workloads are listed page by page (``implementation_workloads_page``,
    ``list_implementation_workloads``)."""
    slug: str | None = ref.lower()
    if ref.startswith("sha256:"):
        name = name_by_ref(session, Implementation, "Implementation", ref)
        slug = session.scalar(select(Implementation.project_slug).where(Implementation.name == name))
    project = session.scalar(select(func.min(Implementation.project)).where(Implementation.project_slug == slug))
    if slug is None or project is None:
        return None
    item = _implementation_items(session, [(slug, project)])[0]
    first_places = session.scalar(
        select(func.count(func.distinct(Run.comparison_key))).where(
            Run.implementation_id.in_(_revision_ids(slug)), eligible(), rank_expression() == 1
        )
    )
    revisions = session.scalars(
        select(Implementation.revision).where(Implementation.project_slug == slug).order_by(Implementation.name)
    )
    return ImplementationDetail(
        **item.model_dump(),
        runs_url=urls.api_runs(implementation=slug),
        revision_list=list(revisions),
        revisions_by_source=revisions_by_source(session, slug),
        first_places=first_places or 0,
        by_gpu=_by_gpu(session, slug),
        by_source=_by_source(session, slug),
    )


def revisions_by_source(session: Session, slug: str) -> list[SourceRevisions]:
    """A project's revisions grouped by the source whose runs name them, each group labelled
    with what the source means by them; sources by name, revisions by label."""
    rows = session.execute(
        select(Source.slug, Source.name, Implementation, func.count(Run.id))
        .select_from(Implementation)
        .outerjoin(Run, Run.implementation_id == Implementation.id)
        .outerjoin(Source, Source.id == Run.source_id)
        .where(Implementation.project_slug == slug)
        .group_by(Source.slug, Source.name, Implementation.id)
        .order_by(Source.name, Implementation.revision, Implementation.name)
    )
    names: dict[str | None, str | None] = {}
    revisions: dict[str | None, list[RevisionRuns]] = defaultdict(list)
    for source, source_name, implementation, runs in rows:
        names[source] = source_name
        title = implementation_manifest(implementation).metadata.title
        revisions[source].append(
            RevisionRuns(revision=implementation.revision, implementation=implementation.name, title=title, runs=runs)
        )
    return [
        SourceRevisions(
            source=source,
            source_name=names[source],
            unit="submission" if all(SUBMISSION_LABEL.fullmatch(r.revision) for r in listed) else "revision",
            revisions=listed,
        )
        for source, listed in revisions.items()
    ]


def _revision_ids(slug: str) -> Select[int]:
    """The ids of the project's revisions, as a subquery."""
    return select(Implementation.id).where(Implementation.project_slug == slug)


def _by_gpu(session: Session, slug: str) -> list[ImplementationGpu]:
    rows = session.execute(
        select(
            Environment.gpu_slug,
            func.min(Environment.gpu_product).label("product"),
            func.count(Run.id).label("runs"),
            func.count(func.distinct(Run.workload_id)).label("workloads"),
        )
        .join(Environment, Run.environment_id == Environment.id)
        .where(Run.implementation_id.in_(_revision_ids(slug)))
        .group_by(Environment.gpu_slug)
        .order_by(Environment.gpu_slug)
    )
    return [
        ImplementationGpu(gpu=row.gpu_slug, gpu_product=row.product, runs=row.runs, workloads=row.workloads)
        for row in rows
    ]


def _by_source(session: Session, slug: str) -> list[ImplementationSource]:
    rows = session.execute(
        select(
            Source.slug,
            Source.name,
            func.count(Run.id).label("runs"),
            func.count(func.distinct(Run.workload_id)).label("workloads"),
        )
        .join(Source, Run.source_id == Source.id)
        .where(Run.implementation_id.in_(_revision_ids(slug)))
        .group_by(Source.slug, Source.name)
    )
    entries = [
        ImplementationSource(source=row.slug, source_name=row.name, runs=row.runs, workloads=row.workloads)
        for row in rows
    ]
    return sorted(entries, key=lambda entry: (entry.source_name.casefold(), entry.source))


# --- Its workloads, one row per workload and GPU -------------------------------------

WORKLOAD_GPU_ORDER = (SortKey("slug", str), SortKey("gpu", str))


@dataclass(frozen=True)
class ImplementationWorkloadFilters:
    gpu: str | None = None  # a GPU slug: only its rows (``UnknownGpu`` if no GPU has it)
    source: str | None = None  # a source's slug: only the runs it published (``UnknownSource`` if none)


def _workload_listing(
    session: Session, slug: str, filters: ImplementationWorkloadFilters
) -> tuple[Select[*tuple[Any, ...]], dict[str, Expr], list[ColumnElement[bool]]]:
    """The SELECT of the (workload, GPU) pairs the project's runs matching ``filters`` cover,
    each with its number of runs there; its sort expressions; and the conditions on ``Run``
    (and its ``Environment``) that the filters make."""
    conditions: list[ColumnElement[bool]] = [Run.implementation_id.in_(_revision_ids(slug))]
    if filters.gpu:
        conditions.append(Environment.gpu_slug == gpu_named(session, filters.gpu))
    if filters.source:
        conditions.append(Run.source_id == source_named(session, filters.source).id)
    stmt = (
        select(
            Run.workload_id,
            Workload.name.label("workload"),
            Workload.title,
            Environment.gpu_slug.label("gpu"),
            func.min(Environment.gpu_product).label("gpu_product"),
            func.count(Run.id).label("runs"),
        )
        .join(Workload, Run.workload_id == Workload.id)
        .join(Environment, Run.environment_id == Environment.id)
        .where(*conditions)
        .group_by(Run.workload_id, Workload.name, Workload.title, Environment.gpu_slug)
    )
    return stmt, {"slug": Workload.name, "gpu": Environment.gpu_slug}, conditions


def _workload_rows(
    session: Session, rows: Sequence[Any], conditions: list[ColumnElement[bool]]
) -> list[ImplementationWorkload]:
    """The listing's rows as items, each with the project's fastest eligible run there (among
    the runs the filters keep), its rank in its comparison group and that group's size."""
    if not rows:
        return []
    pairs = {(row.workload_id, row.gpu) for row in rows}
    best = {
        key: run
        for key, run in best_per_gpu(
            session,
            *conditions,
            Run.workload_id.in_(sorted({workload_id for workload_id, _ in pairs})),
            Environment.gpu_slug.in_(sorted({gpu for _, gpu in pairs})),
        ).items()
        if key in pairs
    }
    ranks = dict(
        session.execute(select(Run.id, rank_expression()).where(Run.id.in_([run.id for run in best.values()]))).all()
    )
    sizes = group_sizes(session, {(run.workload_id, run.comparison_key) for run in best.values()})
    spans = rank_spans(session, [run.name for run in best.values()])
    items = []
    for row in rows:
        run = best.get((row.workload_id, row.gpu))
        items.append(
            ImplementationWorkload(
                workload=row.workload,
                title=row.title,
                gpu=row.gpu,
                gpu_product=row.gpu_product,
                runs=row.runs,
                best=_ranked(run, ranks[run.id], sizes.get(run.comparison_key, 0), spans.get(run.name))
                if run
                else None,
                url=urls.workload(row.workload),
                api_url=urls.api_workload(row.workload),
            )
        )
    return items


def _ranked(run: Run, rank: int, group_size: int, span: RankSpan | None) -> ImplementationRun:
    return ImplementationRun(
        **run_fields(run),
        rank=rank,
        **rank_span_fields(span),
        environment_title=run.environment.title,
        environment_label=environment_label(run.environment),
        availability=availability_text(
            run.implementation.license, run.implementation.source_available, run.implementation.has_install_recipe
        ),
        group_size=group_size,
    )


def list_implementation_workloads(
    session: Session, slug: str, filters: ImplementationWorkloadFilters, after: Position | None, limit: int
) -> tuple[list[ImplementationWorkload], Position | None]:
    """One page of the project's (workload, GPU) rows after a position (the API's cursor), and
    the next page's position."""
    stmt, exprs, conditions = _workload_listing(session, slug, filters)
    rows, position = keyset_page(session, stmt, WORKLOAD_GPU_ORDER, exprs, after, limit)
    return _workload_rows(session, rows, conditions), position


def implementation_workloads_page(
    session: Session, slug: str, filters: ImplementationWorkloadFilters, number: int, size: int
) -> tuple[list[ImplementationWorkload], int]:
    """Page ``number`` (from 1) of ``size`` of the same rows, for the HTML page and its twin, and
    how many match in all."""
    stmt, exprs, conditions = _workload_listing(session, slug, filters)
    rows, total = numbered_page(session, stmt, WORKLOAD_GPU_ORDER, exprs, (number - 1) * size, size)
    return _workload_rows(session, rows, conditions), total
