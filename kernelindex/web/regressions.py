"""``/regressions`` and its JSON twin: where a newer version of a framework measured slower than
an older one, on one workload, case and GPU, by more than the source's noise."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.store.gpu_filter import GpuFilterError
from kernelindex.store.regression_list import (
    RegressionFilters,
    RegressionItem,
    UnknownFrameworkFilter,
    UnknownRegressionFilter,
    checked_filters,
    count_regressions,
    noise_notes,
    regression_facets,
    regressions_page,
)
from kernelindex.web import params
from kernelindex.web.case_part import percent
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest
from kernelindex.web.format import latency
from kernelindex.web.pages import PageContext, Part, page_route, render_page

router = APIRouter()
PAGE_SIZE = 50


class RegressionRow(Part):
    workload: str
    workload_title: str
    workload_url: str  # the workload's per-case ranking at this case, on this GPU's group
    case_index: int
    case_label: str
    gpu: str
    gpu_product: str
    framework: str
    kernel: str
    workload_filter_url: str  # the regressions of this workload alone (the other filters kept)
    kernel_filter_url: str  # the regressions of this kernel alone (the other filters kept)
    newer_run: str
    newer_run_url: str
    newer_version: str
    newer_latency_ns: int
    newer_latency: str
    older_run: str
    older_run_url: str
    older_version: str
    older_latency_ns: int
    older_latency: str
    slowdown: float
    slowdown_text: str


class FilterChoice(Part):
    value: str | None  # None: every GPU or framework
    label: str
    count: int | None
    url: str
    selected: bool


class NoiseLine(Part):
    source: str
    source_url: str
    bound: float
    bound_text: str
    pairs: int
    estimated: bool
    method: str
    computed_at: datetime


class RegressionsPage(PageContext):
    template: ClassVar[str] = "regressions.html"

    gpu: str | None
    framework: str | None
    workload: str | None  # a workload's slug
    workload_title: str | None
    kernel: str | None
    clear_workload_url: str | None  # the same filters without the workload
    clear_kernel_url: str | None
    gpus: list[FilterChoice]
    frameworks: list[FilterChoice]
    noise: list[NoiseLine]
    total: int
    page: int
    page_count: int
    previous_url: str | None
    next_url: str | None
    regressions: list[RegressionRow]


def _row(item: RegressionItem, filters: RegressionFilters) -> RegressionRow:
    kept = {"gpu": filters.gpu, "framework": filters.framework, "workload": filters.workload, "kernel": filters.kernel}
    return RegressionRow(
        workload=item.workload,
        workload_title=item.workload_title,
        workload_url=urls.workload_group(item.workload, item.comparison_key, case=item.case_index) + "#case-ranking",
        case_index=item.case_index,
        case_label=", ".join(f"{name}={value}" for name, value in item.case_axes.items()) or str(item.case_index),
        gpu=item.gpu_slug,
        gpu_product=item.gpu_product,
        framework=item.framework,
        kernel=item.kernel,
        workload_filter_url=urls.regressions(**kept | {"workload": item.workload}),
        kernel_filter_url=urls.regressions(**kept | {"kernel": item.kernel}),
        newer_run=item.newer_run,
        newer_run_url=urls.run(item.newer_run),
        newer_version=item.newer_version,
        newer_latency_ns=item.newer_latency_ns,
        newer_latency=latency(item.newer_latency_ns),
        older_run=item.older_run,
        older_run_url=urls.run(item.older_run),
        older_version=item.older_version,
        older_latency_ns=item.older_latency_ns,
        older_latency=latency(item.older_latency_ns),
        slowdown=item.slowdown,
        slowdown_text=percent(item.slowdown),
    )


@page_route(router, "/regressions")
def regressions(
    request: Request,
    session: SessionDep,
    gpu: str | None = None,
    framework: str | None = None,
    page: str | None = None,
    workload: str | None = None,
    kernel: str | None = None,
) -> Response:
    number = params.page_number(page)
    try:
        filters = checked_filters(
            session,
            params.text("gpu", gpu, max_length=64),
            params.text("framework", framework, max_length=64),
            params.text("workload", workload, max_length=200),
            params.text("kernel", kernel, max_length=300),
        )
    except (GpuFilterError, UnknownFrameworkFilter, UnknownRegressionFilter) as exc:
        raise BadRequest(str(exc)) from None
    total = count_regressions(session, filters)
    page_count = max(1, -(-total // PAGE_SIZE))
    if number > page_count:
        raise BadRequest(f"page {number} is past the last page ({page_count}).")

    def url(
        gpu: str | None = filters.gpu,
        framework: str | None = filters.framework,
        page: int = 1,
        workload: str | None = filters.workload,
        kernel: str | None = filters.kernel,
    ) -> str:
        return urls.regressions(gpu=gpu, framework=framework, workload=workload, kernel=kernel, page=page)

    gpu_facets, framework_facets = regression_facets(session)
    rows = regressions_page(session, filters, number, PAGE_SIZE)
    workload_title = rows[0].workload_title if rows and filters.workload else filters.workload
    context = RegressionsPage(
        gpu=filters.gpu,
        framework=filters.framework,
        workload=filters.workload,
        workload_title=workload_title,
        kernel=filters.kernel,
        clear_workload_url=url(workload=None) if filters.workload else None,
        clear_kernel_url=url(kernel=None) if filters.kernel else None,
        gpus=[FilterChoice(value=None, label="All GPUs", count=None, url=url(gpu=None), selected=filters.gpu is None)]
        + [
            FilterChoice(
                value=f.value, label=f.label, count=f.count, url=url(gpu=f.value), selected=f.value == filters.gpu
            )
            for f in gpu_facets
        ],
        frameworks=[
            FilterChoice(
                value=None,
                label="All frameworks",
                count=None,
                url=url(framework=None),
                selected=filters.framework is None,
            )
        ]
        + [
            FilterChoice(
                value=f.value,
                label=f.label,
                count=f.count,
                url=url(framework=f.value),
                selected=f.value == filters.framework,
            )
            for f in framework_facets
        ],
        noise=[
            NoiseLine(
                source=note.source,
                source_url=urls.source(note.source_slug),
                bound=note.bound,
                bound_text=percent(note.bound),
                pairs=note.pairs,
                estimated=note.estimated,
                method=note.method,
                computed_at=note.computed_at,
            )
            for note in noise_notes(session)
        ],
        total=total,
        page=number,
        page_count=page_count,
        previous_url=url(page=number - 1) if number > 1 else None,
        next_url=url(page=number + 1) if number < page_count else None,
        regressions=[_row(item, filters) for item in rows],
    )
    return render_page(request, context)
