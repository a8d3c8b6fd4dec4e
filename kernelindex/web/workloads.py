"""Workload pages: the filterable list of all workloads, and each workload's leaderboard."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.store.gpu_filter import GpuFilterError, gpu_choices, product_of
from kernelindex.store.leaderboards import leaderboard as leaderboard_of
from kernelindex.store.leaderboards import workload_by_slug
from kernelindex.store.page_scopes import leaderboard_scopes
from kernelindex.store.schemas import WorkloadItem
from kernelindex.store.source_filter import UnknownSource
from kernelindex.store.workloads import (
    WORKLOAD_SORTS,
    WorkloadFilters,
    facet_values,
    gpu_coverage,
    source_facets,
    workloads_page,
)
from kernelindex.web import params
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.leaderboard import build_leaderboard
from kernelindex.web.pages import PageContext, Part, page_route, render_page
from kernelindex.web.response_cache import depends_on

router = APIRouter()
PAGE_SIZE = 50


@page_route(router, "/workloads/{slug}")
def leaderboard(
    request: Request,
    slug: str,
    session: SessionDep,
    group: str | None = None,
    sort: str | None = None,
    implementation: str | None = None,
    page: str | None = None,
    runs: str | None = None,
    case: str | None = None,
    framework: str | None = None,
    version: str | None = None,
    cases: str | None = None,
    matrix: str | None = None,
) -> Response:
    workload = workload_by_slug(session, slug)
    if workload is None:
        raise NotFound(f"No workload has the slug {slug!r}. Slugs look like l1-040-conv2d-residual-block.")
    board = leaderboard_of(session, workload)
    depends_on(request, leaderboard_scopes(session, board))
    context = build_leaderboard(
        session, board, group, sort, implementation, page, runs, case, framework, version, cases, matrix
    )
    return render_page(request, context)


class WorkloadRow(Part):
    slug: str
    url: str
    title: str
    source: str
    source_name: str
    collection: str
    tags: list[str]
    origin_model: str | None
    cases: int
    eligible_runs: int
    best_sol_score: float | None
    best_latency_ns: int | None
    best_run: str | None
    best_url: str | None
    best_gpu: str | None
    best_implementation: str | None
    best_environment: str | None
    runs_on_gpu: int | None  # filtered by GPU, its runs there (0: not measured on it); else None
    last_record_at: datetime | None


def workload_row(row: WorkloadItem, source_name: str) -> WorkloadRow:
    """A row of a workload list; its figures are those the store computed (on one GPU, if filtered by one)."""
    best = row.fastest
    return WorkloadRow(
        slug=row.slug,
        url=row.url,
        title=row.title,
        source=row.source_slug,
        source_name=source_name,
        collection=row.collection,
        tags=row.tags,
        origin_model=row.origin_model,
        cases=row.case_count,
        eligible_runs=row.eligible_runs,
        best_sol_score=row.best_sol_score,
        best_latency_ns=best.latency_ns if best else None,
        best_run=best.run if best else None,
        best_url=urls.run(best.run) if best else None,
        best_gpu=best.gpu_product if best else None,
        best_implementation=best.project if best else None,
        best_environment=best.environment_label if best else None,
        runs_on_gpu=row.runs_on_gpu,
        last_record_at=row.last_record_at,
    )


class FilterOption(Part):
    value: str
    selected: bool


class CountedOption(FilterOption):
    count: int


class SourceOption(CountedOption):
    """A source (``value`` its slug) with its collections: the collection filter's options are grouped under it."""

    label: str
    collections: list[CountedOption]


class GpuOption(FilterOption):
    """A GPU of the GPU filter (``value`` its slug)."""

    label: str


class MeasuredChoice(Part):
    """One choice of measured on the filtered GPU or not (``value`` None: both), with its count."""

    value: str | None
    label: str
    count: int
    url: str
    selected: bool


class GpuFilter(Part):
    """The GPU the figures are on: its name, its answer page, and the measured / not measured choice."""

    slug: str
    product: str
    url: str
    measured: int
    matching: int  # workloads matching the other filters, measured on it or not
    choices: list[MeasuredChoice]


class WorkloadsPage(PageContext):
    template: ClassVar[str] = "workloads.html"

    filters: dict[str, str | None]
    sources: list[SourceOption]
    options: dict[str, list[FilterOption]]
    gpus: list[GpuOption]  # the GPUs with runs, most workloads measured first
    gpu: GpuFilter | None  # filtered by GPU: every figure is on it
    sort: str
    sorts: list[str]
    total: int
    page: int
    page_count: int
    previous_url: str | None
    next_url: str | None
    workloads: list[WorkloadRow]


@page_route(router, "/workloads")
def workloads(
    request: Request,
    session: SessionDep,
    source: str | None = None,
    collection: str | None = None,
    tag: str | None = None,
    model: str | None = None,
    gpu: str | None = None,
    q: str | None = None,
    measured: str | None = None,
    sort: str | None = None,
    page: str | None = None,
) -> Response:
    chosen_measured = params.choice("measured", measured, ("true", "false"), "")
    try:
        filters = WorkloadFilters(
            source=params.text("source", source, max_length=64),
            collection=params.text("collection", collection),
            tag=params.text("tag", tag),
            model=params.text("model", model),
            gpu=params.text("gpu", gpu),
            q=params.text("q", q, max_length=200),
            measured={"true": True, "false": False}.get(chosen_measured),
        )
        chosen_sort = params.choice("sort", sort, WORKLOAD_SORTS, "name")
        number = params.page_number(page)
        rows, total = workloads_page(session, filters, chosen_sort, number, PAGE_SIZE)
        coverage = gpu_coverage(session, filters) if filters.gpu else None
    except (UnknownSource, GpuFilterError) as exc:
        raise BadRequest(str(exc)) from None
    page_count = max(1, -(-total // PAGE_SIZE))
    if number > page_count:
        raise BadRequest(f"page {number} is past the last page ({page_count}).")
    current = {
        "source": filters.source,
        "collection": filters.collection,
        "tag": filters.tag,
        "model": filters.model,
        "gpu": coverage.gpu if coverage else None,
        "q": filters.q,
        "measured": chosen_measured or None,
    }

    def url(page_number: int, **changed: str | None) -> str:
        sort_param = None if chosen_sort == "name" else chosen_sort
        return urls.workloads(**(current | changed), sort=sort_param, page=page_number)

    def chosen(name: str, value: str) -> bool:
        given = current[name]
        return given is not None and given.lower() == value.lower()

    facets, sources = facet_values(session), source_facets(session)
    source_names = {facet.slug: facet.name for facet in sources}
    context = WorkloadsPage(
        filters=current,
        sources=[
            SourceOption(
                value=facet.slug,
                label=facet.name,
                count=facet.count,
                selected=chosen("source", facet.slug),
                collections=[
                    CountedOption(
                        value=collection.name,
                        count=collection.count,
                        selected=chosen("collection", collection.name),
                    )
                    for collection in facet.collections
                ],
            )
            for facet in sources
        ],
        options={
            name: [FilterOption(value=value, selected=value == current[name]) for value in values]
            for name, values in facets.items()
        },
        gpus=gpu_options(session, current["gpu"]),
        gpu=None
        if coverage is None
        else GpuFilter(
            slug=coverage.gpu,
            product=product_of(session, coverage.gpu),
            url=urls.gpu(coverage.gpu),
            measured=coverage.measured,
            matching=coverage.measured + coverage.not_measured,
            choices=[
                MeasuredChoice(
                    value=value,
                    label=label,
                    count=count,
                    url=url(1, measured=value),
                    selected=value == current["measured"],
                )
                for value, label, count in (
                    (None, "Both", coverage.measured + coverage.not_measured),
                    ("true", "Measured on it", coverage.measured),
                    ("false", "Not measured on it", coverage.not_measured),
                )
            ],
        ),
        sort=chosen_sort,
        sorts=list(WORKLOAD_SORTS),
        total=total,
        page=number,
        page_count=page_count,
        previous_url=url(number - 1) if number > 1 else None,
        next_url=url(number + 1) if number < page_count else None,
        workloads=[workload_row(row, source_names[row.source_slug]) for row in rows],
    )
    return render_page(request, context)


def gpu_options(session: Session, chosen: str | None) -> list[GpuOption]:
    """A GPU filter's options: the GPUs with runs, and the chosen one if it has none (a tracked GPU)."""
    options = [
        GpuOption(value=c.slug, label=f"{c.product} · {c.workloads}", selected=c.slug == chosen)
        for c in gpu_choices(session)
    ]
    if chosen and not any(option.selected for option in options):
        options.append(GpuOption(value=chosen, label=f"{product_of(session, chosen)} · 0", selected=True))
    return options
