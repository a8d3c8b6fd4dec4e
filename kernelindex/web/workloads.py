"""Workload pages: the filterable list of all workloads, and each workload's leaderboard."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.store.leaderboards import leaderboard as leaderboard_of
from kernelindex.store.leaderboards import workload_by_slug
from kernelindex.store.source_filter import UnknownSource
from kernelindex.store.workloads import (
    WORKLOAD_SORTS,
    WorkloadFilters,
    facet_values,
    source_facets,
    workloads_page,
)
from kernelindex.web import params
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.leaderboard import Part, build_leaderboard
from kernelindex.web.pages import PageContext, page_route, render_page

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
) -> Response:
    workload = workload_by_slug(session, slug)
    if workload is None:
        raise NotFound(f"No workload has the slug {slug!r}. Slugs look like l1-040-conv2d-residual-block.")
    context = build_leaderboard(session, leaderboard_of(session, workload), group, sort, implementation, page)
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
    best_gpu: str | None
    last_record_at: datetime | None


class FilterOption(Part):
    value: str
    selected: bool


class CountedOption(FilterOption):
    count: int


class SourceOption(CountedOption):
    """A source (``value`` its slug) with its collections: the collection filter's options are grouped under it."""

    label: str
    collections: list[CountedOption]


class WorkloadsPage(PageContext):
    template: ClassVar[str] = "workloads.html"

    filters: dict[str, str | None]
    sources: list[SourceOption]
    options: dict[str, list[FilterOption]]
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
    sort: str | None = None,
    page: str | None = None,
) -> Response:
    filters = WorkloadFilters(
        source=params.text("source", source, max_length=64),
        collection=params.text("collection", collection),
        tag=params.text("tag", tag),
        model=params.text("model", model),
        gpu=params.text("gpu", gpu),
        q=params.text("q", q, max_length=200),
    )
    chosen_sort = params.choice("sort", sort, WORKLOAD_SORTS, "name")
    number = params.page_number(page)
    try:
        rows, total = workloads_page(session, filters, chosen_sort, number, PAGE_SIZE)
    except UnknownSource as exc:
        raise BadRequest(str(exc)) from None
    page_count = max(1, -(-total // PAGE_SIZE))
    if number > page_count:
        raise BadRequest(f"page {number} is past the last page ({page_count}).")
    current = {
        "source": filters.source,
        "collection": filters.collection,
        "tag": filters.tag,
        "model": filters.model,
        "gpu": filters.gpu,
        "q": filters.q,
    }

    def url(page_number: int) -> str:
        sort_param = None if chosen_sort == "name" else chosen_sort
        return urls.workloads(**current, sort=sort_param, page=page_number)

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
        sort=chosen_sort,
        sorts=list(WORKLOAD_SORTS),
        total=total,
        page=number,
        page_count=page_count,
        previous_url=url(number - 1) if number > 1 else None,
        next_url=url(number + 1) if number < page_count else None,
        workloads=[
            WorkloadRow(
                slug=row.slug,
                url=urls.workload(row.slug),
                title=row.title,
                source=row.source_slug,
                source_name=source_names[row.source_slug],
                collection=row.collection,
                tags=row.tags,
                origin_model=row.origin_model,
                cases=row.case_count,
                eligible_runs=row.eligible_runs,
                best_sol_score=row.best_sol_score,
                best_latency_ns=row.fastest.latency_ns if row.fastest else None,
                best_run=row.fastest.run if row.fastest else None,
                best_gpu=row.fastest.gpu_product if row.fastest else None,
                last_record_at=row.last_record_at,
            )
            for row in rows
        ],
    )
    return render_page(request, context)
