"""Pages of the things runs are grouped by: implementations, GPUs, origin models, sources."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import func, select

from kernelindex.db.tables import Run, Workload
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.ranking import rank_by_group
from kernelindex.store import catalog
from kernelindex.store.runs import RunView, run_views_query, to_view
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import NotFound
from kernelindex.web.format import latency
from kernelindex.web.leaderboard import Part
from kernelindex.web.pages import PageContext, page_route, render_page

router = APIRouter()


class RunLine(Part):
    run: str
    url: str
    workload: str
    workload_url: str
    implementation: str
    implementation_url: str
    environment: str
    latency_ns: int
    latency: str
    statistic: str
    rank: int | None
    group_size: int
    evidence: str
    availability: str
    observed_at: datetime


def _run_lines(session: Any, views: list[RunView]) -> list[RunLine]:
    """Runs with their rank inside their own comparison group (loaded whole, so ranks are true)."""
    keys = {view.comparison_key for view in views}
    members = [to_view(run) for run in session.scalars(run_views_query().where(Run.comparison_key.in_(keys))).unique()]
    ranks = rank_by_group(member.facts for member in members)
    rank_of = {ranked.run.name: ranked.rank for group in ranks.values() for ranked in group}
    return [
        RunLine(
            run=view.name,
            url=f"/runs/{view.name}",
            workload=view.workload_title,
            workload_url=f"/workloads/{view.workload_slug}",
            implementation=view.project,
            implementation_url=f"/implementations/{view.project_slug}",
            environment=view.environment_title,
            latency_ns=view.latency_ns,
            latency=latency(view.latency_ns),
            statistic=view.primary_statistic,
            rank=rank_of.get(view.name),
            group_size=len(ranks.get(view.comparison_key, [])),
            evidence=view.evidence,
            availability=view.availability,
            observed_at=view.observed_at,
        )
        for view in views
    ]


# --- Implementations ---------------------------------------------------------------


class ImplementationPage(PageContext):
    template: ClassVar[str] = "implementation.html"

    slug: str
    project: str
    revisions: list[str]
    workload_count: int
    first_places: int
    runs: list[RunLine]


@page_route(router, "/implementations/{slug}")
def implementation(request: Request, slug: str, session: SessionDep) -> Response:
    revisions = catalog.implementations_of_project(session, slug)
    if not revisions:
        raise NotFound(f"No implementation has the slug {slug!r}.")
    views = [
        to_view(run)
        for run in session.scalars(
            run_views_query()
            .where(Run.implementation_id.in_([r.id for r in revisions]))
            .order_by(Run.observed_at.desc())
        ).unique()
    ]
    lines = _run_lines(session, views)
    context = ImplementationPage(
        slug=slug,
        project=revisions[0].project,
        revisions=[r.revision for r in revisions],
        workload_count=len({line.workload_url for line in lines}),
        first_places=sum(line.rank == 1 for line in lines),
        runs=sorted(lines, key=lambda line: (line.rank or 10**9, line.workload, line.run)),
    )
    return render_page(request, context)


# --- GPUs --------------------------------------------------------------------------


class GpuLine(Part):
    slug: str
    url: str
    product: str
    architecture: str | None
    measured_workloads: int
    runs: int
    gaps: int


class GpusPage(PageContext):
    template: ClassVar[str] = "gpus.html"

    workload_count: int
    gpus: list[GpuLine]


def _gpu_catalogue(session: Any) -> tuple[list[GpuLine], int]:
    coverage = catalog.gpu_coverage(session)
    total = session.scalar(select(func.count()).select_from(Workload)) or 0
    lines = {
        gpu.slug: GpuLine(
            slug=gpu.slug,
            url=f"/gpus/{gpu.slug}",
            product=gpu.product,
            architecture=gpu.architecture,
            measured_workloads=0,
            runs=0,
            gaps=total,
        )
        for gpu in TRACKED_GPUS
    }
    for slug, item in coverage.items():
        lines[slug] = GpuLine(
            slug=slug,
            url=f"/gpus/{slug}",
            product=item.product,
            architecture=item.architecture,
            measured_workloads=item.measured_workloads,
            runs=item.runs,
            gaps=total - item.measured_workloads,
        )
    return sorted(lines.values(), key=lambda line: (-line.runs, line.product)), total


@page_route(router, "/gpus")
def gpus(request: Request, session: SessionDep) -> Response:
    lines, total = _gpu_catalogue(session)
    return render_page(request, GpusPage(workload_count=total, gpus=lines))


class GapLine(Part):
    slug: str
    url: str
    title: str
    collection: str


class GpuPage(PageContext):
    template: ClassVar[str] = "gpu.html"

    gpu: GpuLine
    best_runs: list[RunLine]
    gaps: list[GapLine]
    gap_total: int


@page_route(router, "/gpus/{slug}")
def gpu(request: Request, slug: str, session: SessionDep) -> Response:
    lines, _ = _gpu_catalogue(session)
    line = next((line for line in lines if line.slug == slug), None)
    if line is None:
        raise NotFound(f"No GPU has the slug {slug!r}. Known GPUs: {', '.join(x.slug for x in lines)}.")
    views = [
        to_view(run) for run in session.scalars(run_views_query().where(Run.environment.has(gpu_slug=slug))).unique()
    ]
    lines_by_run = _run_lines(session, views)
    best = [run for run in lines_by_run if run.rank == 1]
    gaps, gap_total = catalog.workloads_without_gpu(session, slug)
    context = GpuPage(
        gpu=line,
        best_runs=sorted(best, key=lambda run: (run.workload, run.environment)),
        gaps=[GapLine(slug=w.name, url=f"/workloads/{w.name}", title=w.title, collection=w.collection) for w in gaps],
        gap_total=gap_total,
    )
    return render_page(request, context)


# --- Origin models -----------------------------------------------------------------


class ModelPage(PageContext):
    template: ClassVar[str] = "model.html"

    slug: str
    name: str
    workloads: list[GapLine]
    best_runs: list[RunLine]


@page_route(router, "/models/{slug}")
def model(request: Request, slug: str, session: SessionDep) -> Response:
    names = catalog.origin_model_spellings(session, slug)
    if not names:
        raise NotFound(f"No origin model has the slug {slug!r}.")
    workloads = catalog.workloads_of_model(session, names)
    views = [
        to_view(run)
        for run in session.scalars(run_views_query().where(Run.workload_id.in_([w.id for w in workloads]))).unique()
    ]
    best = [run for run in _run_lines(session, views) if run.rank == 1]
    context = ModelPage(
        slug=slug,
        name=names[0],
        workloads=[
            GapLine(slug=w.name, url=f"/workloads/{w.name}", title=w.title, collection=w.collection) for w in workloads
        ],
        best_runs=sorted(best, key=lambda run: (run.workload, run.environment)),
    )
    return render_page(request, context)


# --- Sources -----------------------------------------------------------------------


class ReportLine(Part):
    id: int
    origin: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    counts: dict[str, Any]
    errors: list[Any]
    drift: list[Any]


class SourcePage(PageContext):
    template: ClassVar[str] = "source.html"

    slug: str
    name: str
    url: str
    description: str
    licence: str
    last_observed_at: datetime | None
    workload_count: int
    run_count: int
    reports: list[ReportLine]


@page_route(router, "/sources/{slug}")
def source(request: Request, slug: str, session: SessionDep) -> Response:
    found = catalog.source_by_slug(session, slug)
    if found is None:
        raise NotFound(f"No source has the slug {slug!r}.")
    workloads, runs = catalog.source_counts(session, found.id)
    context = SourcePage(
        slug=found.slug,
        name=found.name,
        url=found.url,
        description=found.description,
        licence=found.licence,
        last_observed_at=found.last_observed_at,
        workload_count=workloads,
        run_count=runs,
        reports=[
            ReportLine.model_validate(report, from_attributes=True)
            for report in catalog.ingestion_reports(session, found.id)
        ],
    )
    return render_page(request, context)
