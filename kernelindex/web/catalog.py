"""Pages of the things runs are grouped by: implementations, GPUs, origin models, sources.

Each page asks the store the question its API endpoint asks (``gpu_catalogue`` and
``gpu_detail``, ``implementation_detail``, ``model_detail``, ``source_detail``) and maps
the typed answer to its view; it computes no figure of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.store.gpus import gpu_catalogue, gpu_detail
from kernelindex.store.implementations import implementation_detail
from kernelindex.store.models import model_detail
from kernelindex.store.schemas import BestOnGpu, GpuItem, ImplementationRun, IngestionReportItem
from kernelindex.store.sources import source_detail
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
    evidence: EvidenceLevel
    availability: str
    observed_at: datetime


def _best_line(workload_slug: str, workload_title: str, best: BestOnGpu) -> RunLine:
    """A workload's best run on a GPU: the fastest eligible there, so #1 of its own group."""
    return RunLine(
        run=best.run,
        url=urls.run(best.run),
        workload=workload_title,
        workload_url=urls.workload(workload_slug),
        implementation=best.project,
        implementation_url=urls.implementation(best.implementation),
        environment=best.environment_title,
        latency_ns=best.latency_ns,
        latency=latency(best.latency_ns),
        statistic=best.primary_statistic,
        rank=1,
        group_size=best.group_eligible_runs,
        evidence=best.evidence,
        availability=best.availability,
        observed_at=best.observed_at,
    )


# --- Implementations ---------------------------------------------------------------


class ImplementationPage(PageContext):
    template: ClassVar[str] = "implementation.html"

    slug: str
    project: str
    revisions: list[str]
    workload_count: int
    first_places: int
    runs: list[RunLine]


def _run_line(workload_title: str, run: ImplementationRun) -> RunLine:
    return RunLine(
        run=run.name,
        url=run.url,
        workload=workload_title,
        workload_url=urls.workload(run.workload),
        implementation=run.project,
        implementation_url=urls.implementation(run.implementation),
        environment=run.environment_title,
        latency_ns=run.latency_ns,
        latency=latency(run.latency_ns),
        statistic=run.primary_statistic,
        rank=run.rank,
        group_size=run.group_size,
        evidence=run.evidence,
        availability=run.availability,
        observed_at=run.observed_at,
    )


@page_route(router, "/implementations/{slug}")
def implementation(request: Request, slug: str, session: SessionDep) -> Response:
    detail = implementation_detail(session, slug)
    if detail is None:
        raise NotFound(f"No implementation has the slug {slug!r}.")
    lines = [_run_line(result.title, run) for result in detail.workload_results for run in result.runs]
    context = ImplementationPage(
        slug=detail.slug,
        project=detail.project,
        revisions=detail.revision_list,
        workload_count=detail.workloads,
        first_places=detail.first_places,
        # Shown best ranks first; the store groups them by workload.
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


def _gpu_line(gpu: GpuItem) -> GpuLine:
    return GpuLine(
        slug=gpu.slug,
        url=gpu.url,
        product=gpu.product,
        architecture=gpu.architecture,
        measured_workloads=gpu.workloads,
        runs=gpu.runs,
        gaps=gpu.gaps,
    )


class GpusPage(PageContext):
    template: ClassVar[str] = "gpus.html"

    workload_count: int
    gpus: list[GpuLine]


@page_route(router, "/gpus")
def gpus(request: Request, session: SessionDep) -> Response:
    catalogue = gpu_catalogue(session)
    # Shown most measured first; the store lists them by slug.
    lines = sorted((_gpu_line(gpu) for gpu in catalogue.gpus), key=lambda line: (-line.runs, line.product))
    return render_page(request, GpusPage(workload_count=catalogue.workload_count, gpus=lines))


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
    detail = gpu_detail(session, slug)
    if detail is None:
        raise NotFound(f"No GPU has the slug {slug!r}.")
    best = [_best_line(w.workload, w.title, w.best) for w in detail.measured if w.best is not None]
    context = GpuPage(
        gpu=_gpu_line(detail),
        # Shown by workload title; the store lists them by slug.
        best_runs=sorted(best, key=lambda run: (run.workload, run.environment)),
        gaps=[GapLine(slug=g.slug, url=g.url, title=g.title, collection=g.collection) for g in detail.gap_list],
        gap_total=detail.gaps,
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
    detail = model_detail(session, slug)
    if detail is None:
        raise NotFound(f"No origin model has the slug {slug!r}.")
    best = [_best_line(w.slug, w.title, run) for w in detail.workload_list for run in w.best_by_gpu]
    context = ModelPage(
        slug=detail.slug,
        name=detail.name,
        workloads=[
            GapLine(slug=w.slug, url=urls.workload(w.slug), title=w.title, collection=w.collection)
            for w in detail.workload_list
        ],
        # Shown by workload title; the store lists them by slug.
        best_runs=sorted(best, key=lambda run: (run.workload, run.environment)),
    )
    return render_page(request, context)


# --- Sources -----------------------------------------------------------------------


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
    reports: list[IngestionReportItem]  # as the API serves them


@page_route(router, "/sources/{slug}")
def source(request: Request, slug: str, session: SessionDep) -> Response:
    detail = source_detail(session, slug)
    if detail is None:
        raise NotFound(f"No source has the slug {slug!r}.")
    context = SourcePage(
        slug=detail.slug,
        name=detail.name,
        url=detail.website,
        description=detail.description,
        licence=detail.licence,
        last_observed_at=detail.last_observed_at,
        workload_count=detail.workloads,
        run_count=detail.runs,
        reports=detail.reports,
    )
    return render_page(request, context)
