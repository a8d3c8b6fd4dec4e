"""Pages of the things runs are grouped by: implementations, GPUs, origin models, sources.

Each page asks the store the question its API endpoint asks (``gpu_catalogue``,
``gpu_detail`` and ``gpu_workloads_page``, ``implementation_detail``, ``model_detail``,
``every_source`` and ``source_detail``) and maps the typed answer to its view; it
computes no figure of its own, only writes shares as percentages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.store.gpu_filter import GpuFilterError
from kernelindex.store.gpus import GpuWorkloadFilters, gpu_catalogue, gpu_detail, gpu_workloads_page
from kernelindex.store.implementations import (
    ImplementationWorkloadFilters,
    implementation_detail,
    implementation_workloads_page,
)
from kernelindex.store.models import model_detail
from kernelindex.store.schemas import (
    BestOnGpu,
    CollectionCount,
    DatasheetItem,
    GpuItem,
    ImplementationWorkload,
    IngestionReportItem,
    SourceCompleteness,
    SourceItem,
    SourceRevisions,
)
from kernelindex.store.source_filter import UnknownSource
from kernelindex.store.sources import errors_and_warnings, every_source, source_detail
from kernelindex.store.workloads import facet_values, gpu_coverage, source_facets
from kernelindex.web import params
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.format import latency, one_unit, significant
from kernelindex.web.pages import PageContext, Part, page_route, render_page
from kernelindex.web.rank_part import UncertaintyPart, range_fields

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
    # Its place as a range given the intervals (``web.rank_part``); None where not ranked.
    rank_range: list[int] | None = None
    rank_text: str | None = None
    distinct_from_best: bool | None = None
    uncertainty: UncertaintyPart | None = None


def _best_line(workload_slug: str, workload_title: str, best: BestOnGpu) -> RunLine:
    """A workload's best run on a GPU: the fastest eligible there, so #1 of its own group."""
    return RunLine(
        run=best.run,
        url=urls.run(best.run),
        workload=workload_title,
        workload_url=urls.workload(workload_slug),
        implementation=best.project,
        implementation_url=urls.implementation(best.implementation),
        environment=best.environment_label,
        latency_ns=best.latency_ns,
        latency=latency(best.latency_ns),
        statistic=best.primary_statistic,
        rank=1,
        **range_fields(best.rank_range, False if best.rank_range else None, best.uncertainty),
        group_size=best.group_eligible_runs,
        evidence=best.evidence,
        availability=best.availability,
        observed_at=best.observed_at,
    )


# --- Implementations ---------------------------------------------------------------


IMPLEMENTATION_PAGE_SIZE = 50


class ImplementationWorkloadLine(Part):
    """One workload on one GPU: the implementation's runs there and its best eligible one."""

    slug: str
    url: str
    title: str
    gpu: str
    gpu_product: str
    gpu_url: str
    runs: int  # its runs of the workload on this GPU, eligible or not
    revision: str | None  # the best run's revision
    best: RunLine | None  # None: none of its runs there is eligible


class FilterChoice(Part):
    """One choice of a filter (``value`` None: no filter), with the runs it keeps."""

    value: str | None
    name: str
    runs: int
    url: str
    selected: bool


class ImplementationPage(PageContext):
    template: ClassVar[str] = "implementation.html"

    slug: str
    project: str
    revisions: list[str]
    revisions_by_source: list[SourceRevisions]
    run_count: int
    workload_count: int
    gpu_count: int
    first_places: int
    gpu: str | None  # the GPU filter, as a slug
    source: str | None  # the source filter, as a slug
    gpus: list[FilterChoice]  # empty when it has runs on one GPU only
    sources: list[FilterChoice]  # empty when one source published all its runs
    workloads: list[ImplementationWorkloadLine]  # page ``page`` of its (workload, GPU) rows, by slug then GPU
    total: int  # rows matching the filters
    page: int
    page_count: int
    previous_url: str | None
    next_url: str | None


def _implementation_line(row: ImplementationWorkload) -> ImplementationWorkloadLine:
    best = row.best
    return ImplementationWorkloadLine(
        slug=row.workload,
        url=row.url,
        title=row.title,
        gpu=row.gpu,
        gpu_product=row.gpu_product,
        gpu_url=urls.gpu(row.gpu),
        runs=row.runs,
        revision=best.revision if best else None,
        best=RunLine(
            run=best.name,
            url=best.url,
            workload=row.title,
            workload_url=row.url,
            implementation=best.project,
            implementation_url=urls.implementation(best.implementation),
            environment=best.environment_label,
            latency_ns=best.latency_ns,
            latency=latency(best.latency_ns),
            statistic=best.primary_statistic,
            rank=best.rank,
            **range_fields(best.rank_range, best.distinct_from_best, best.uncertainty),
            group_size=best.group_size,
            evidence=best.evidence,
            availability=best.availability,
            observed_at=best.observed_at,
        )
        if best
        else None,
    )


@page_route(router, "/implementations/{slug}")
def implementation(
    request: Request,
    slug: str,
    session: SessionDep,
    gpu: str | None = None,
    source: str | None = None,
    page: str | None = None,
) -> Response:
    detail = implementation_detail(session, slug)
    if detail is None:
        raise NotFound(f"No implementation has the slug {slug!r}.")
    chosen_gpu = params.text("gpu", gpu, max_length=200)
    chosen_source = params.text("source", source, max_length=64)
    filters = ImplementationWorkloadFilters(
        gpu=chosen_gpu.lower() if chosen_gpu else None, source=chosen_source.lower() if chosen_source else None
    )
    number = params.page_number(page)
    try:
        rows, total = implementation_workloads_page(session, detail.slug, filters, number, IMPLEMENTATION_PAGE_SIZE)
    except (UnknownSource, GpuFilterError) as exc:
        raise BadRequest(str(exc)) from None
    page_count = max(1, -(-total // IMPLEMENTATION_PAGE_SIZE))
    if number > page_count:
        raise BadRequest(f"page {number} is past the last page ({page_count}).")

    def url(gpu: str | None, source: str | None, number: int = 1) -> str:
        return urls.implementation(detail.slug, gpu=gpu, source=source, page=number)

    def choices(
        entries: list[tuple[str, str, int]], chosen: str | None, every: str, link: Callable[[str | None], str]
    ) -> list[FilterChoice]:
        """The filter's choices, none when there is nothing to choose between (and none chosen)."""
        if len(entries) < 2 and chosen is None:
            return []
        return [
            FilterChoice(value=None, name=every, runs=detail.runs, url=link(None), selected=chosen is None),
            *(
                FilterChoice(value=value, name=name, runs=runs, url=link(value), selected=value == chosen)
                for value, name, runs in entries
            ),
        ]

    context = ImplementationPage(
        slug=detail.slug,
        project=detail.project,
        revisions=detail.revision_list,
        revisions_by_source=detail.revisions_by_source,
        run_count=detail.runs,
        workload_count=detail.workloads,
        gpu_count=detail.gpus,
        first_places=detail.first_places,
        gpu=filters.gpu,
        source=filters.source,
        gpus=choices(
            [(entry.gpu, entry.gpu_product, entry.runs) for entry in detail.by_gpu],
            filters.gpu,
            "Every GPU",
            lambda value: url(value, filters.source),
        ),
        sources=choices(
            [(entry.source, entry.source_name, entry.runs) for entry in detail.by_source],
            filters.source,
            "Every source",
            lambda value: url(filters.gpu, value),
        ),
        workloads=[_implementation_line(row) for row in rows],
        total=total,
        page=number,
        page_count=page_count,
        previous_url=url(filters.gpu, filters.source, number - 1) if number > 1 else None,
        next_url=url(filters.gpu, filters.source, number + 1) if number < page_count else None,
    )
    return render_page(request, context)


# --- GPUs --------------------------------------------------------------------------

GPU_PAGE_SIZE = 50


def share(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a whole percentage; never "0%" for some, nor "100%" for not all."""
    if whole == 0:
        return "–"
    percent = 100 * part / whole
    if 0 < percent < 1:
        return "<1%"
    if 99 < percent < 100:
        return ">99%"
    return f"{percent:.0f}%"


class SourceCoverageLine(Part):
    """A source whose (current) workloads have runs on the GPU, by whoever measured them."""

    source: str
    name: str
    url: str  # the source's page: what it is, and its workloads
    workloads: int
    source_workloads: int
    superseded_workloads: int  # older revisions of its problems measured on the GPU
    share: str


class ProducerLine(Part):
    """A producer with runs on the GPU: the source that published them, or the registry's reruns."""

    source: str
    name: str
    url: str  # the GPU page filtered to what this producer measured
    runs: int
    gpu_naming: str  # where the producer's name for the GPU comes from


class GpuLine(Part):
    slug: str
    url: str
    product: str
    architecture: str | None
    measured_workloads: int
    runs: int
    gaps: int
    share: str  # of every current workload in the catalogue
    by_source: list[SourceCoverageLine]
    by_producer: list[ProducerLine]


def _gpu_line(gpu: GpuItem) -> GpuLine:
    return GpuLine(
        slug=gpu.slug,
        url=gpu.url,
        product=gpu.product,
        architecture=gpu.architecture,
        measured_workloads=gpu.workloads,
        runs=gpu.runs,
        gaps=gpu.gaps,
        share=share(gpu.workloads, gpu.workloads + gpu.gaps),
        by_source=[
            SourceCoverageLine(
                source=entry.source,
                name=entry.source_name,
                url=urls.source(entry.source),
                workloads=entry.workloads,
                source_workloads=entry.source_workloads,
                superseded_workloads=entry.superseded_workloads,
                share=share(entry.workloads, entry.source_workloads),
            )
            for entry in gpu.by_source
            if entry.workloads or entry.superseded_workloads
        ],
        by_producer=[
            ProducerLine(
                source=entry.source,
                name=entry.source_name,
                url=urls.gpu(gpu.slug, source=entry.source),
                runs=entry.runs,
                gpu_naming=entry.gpu_naming,
            )
            for entry in gpu.by_producer
        ],
    )


class GpusPage(PageContext):
    template: ClassVar[str] = "gpus.html"

    workload_count: int
    gpus: list[GpuLine]  # those measured on first, most runs first; then those tracked, not measured yet


@page_route(router, "/gpus")
def gpus(request: Request, session: SessionDep) -> Response:
    catalogue = gpu_catalogue(session)
    # Shown most measured first; the store lists them by slug.
    lines = sorted((_gpu_line(gpu) for gpu in catalogue.gpus), key=lambda line: (-line.runs, line.product))
    return render_page(request, GpusPage(workload_count=catalogue.workload_count, gpus=lines))


class GpuWorkloadLine(Part):
    slug: str
    url: str
    title: str
    collection: str
    source: str
    source_name: str
    runs: int  # on this GPU; 0 for a gap
    best: RunLine | None


class SourceChoice(Part):
    """One choice of the source filter: every source, or one producer with runs on the GPU
    (``source`` None: all)."""

    source: str | None
    name: str
    url: str
    selected: bool


class CoverageTab(Part):
    """The measured workloads or the gaps, under the chosen source."""

    measured: bool
    label: str
    count: int
    url: str
    selected: bool


class DatasheetLine(Part):
    """One source's datasheet figures for the GPU, written for a reader."""

    source_name: str
    figures: list[tuple[str, str]]  # (what, value with its unit)
    reference: str | None


def _datasheet_line(item: DatasheetItem) -> DatasheetLine:
    figures = item.figures
    shown: list[tuple[str, str]] = []
    if (bandwidth := figures.get("memory_bandwidth_bytes_per_s")) is not None:
        shown.append(("Memory bandwidth", f"{significant(bandwidth / 1e12)} TB/s"))
    if (memory := figures.get("memory_bytes")) is not None:
        shown.append(("Memory", f"{significant(memory / 2**30)} GiB"))
    for name, value in sorted(figures.items()):
        if name.endswith("_tensor_flops_per_s"):
            dtype = name.removesuffix("_tensor_flops_per_s").upper().replace("BFLOAT16", "BF16")
            shown.append((f"{dtype} tensor peak (dense)", f"{significant(value / 1e12)} TFLOP/s"))
    if (power := figures.get("power_w")) is not None:
        shown.append(("Power", f"{significant(power)} W"))
    if (sm := figures.get("sm_version")) is not None:
        shown.append(("Compute capability", f"sm_{int(sm)}"))
    return DatasheetLine(source_name=item.source_name, figures=shown, reference=item.reference)


class GpuPage(PageContext):
    template: ClassVar[str] = "gpu.html"

    gpu: GpuLine
    datasheets: list[DatasheetLine]
    source: str | None
    measured: bool
    filters: dict[str, str | None]  # collection, tag and text, as given
    collections: list[str]  # the collection filter's choices (the chosen source's, or every source's)
    tags: list[str]
    matching: int  # workloads matching the source, collection, tag and text, measured on it or not
    sources: list[SourceChoice]
    tabs: list[CoverageTab]
    workloads: list[GpuWorkloadLine]  # page ``page`` of the chosen tab, by slug
    total: int
    page: int
    page_count: int
    previous_url: str | None
    next_url: str | None


@page_route(router, "/gpus/{slug}")
def gpu(
    request: Request,
    slug: str,
    session: SessionDep,
    source: str | None = None,
    collection: str | None = None,
    tag: str | None = None,
    q: str | None = None,
    measured: str | None = None,
    page: str | None = None,
) -> Response:
    detail = gpu_detail(session, slug)
    if detail is None:
        raise NotFound(f"No GPU has the slug {slug!r}. The GPUs are listed at {urls.gpus()}.")
    chosen = params.text("source", source, max_length=64)
    source_slug = chosen.lower() if chosen else None
    narrowed = {
        "collection": params.text("collection", collection),
        "tag": params.text("tag", tag),
        "q": params.text("q", q, max_length=200),
    }
    filters = GpuWorkloadFilters(
        source=source_slug, collection=narrowed["collection"], tag=narrowed["tag"], q=narrowed["q"]
    )
    number = params.page_number(page)
    try:
        coverage = gpu_coverage(session, filters.workload_filters(detail.slug))
        counts = {True: coverage.measured, False: coverage.not_measured}
        default = "true" if counts[True] else "false"
        show_measured = params.choice("measured", measured, ("true", "false"), default) == "true"
        rows, total = gpu_workloads_page(
            session, detail.slug, replace(filters, measured=show_measured), number, GPU_PAGE_SIZE
        )
    except UnknownSource as exc:
        raise BadRequest(str(exc)) from None
    page_count = max(1, -(-total // GPU_PAGE_SIZE))
    if number > page_count:
        raise BadRequest(f"page {number} is past the last page ({page_count}).")

    def url(source: str | None, measured: bool | None, number: int = 1) -> str:
        shown = None if measured is None else "true" if measured else "false"
        # Another source has other collections: choosing one drops the collection chosen.
        kept = narrowed if source == source_slug else narrowed | {"collection": None}
        return urls.gpu(detail.slug, source=source, **kept, measured=shown, page=number)

    facets = source_facets(session)
    # A producer with no workloads of its own (the reruns) measures any source's collections.
    origin = source_slug if any(f.slug == source_slug for f in facets) else None
    collections = [c.name for f in facets if origin in (None, f.slug) for c in f.collections]
    names = {entry.source: entry.source_name for entry in detail.by_source}
    names |= {entry.source: entry.source_name for entry in detail.by_producer}
    context = GpuPage(
        gpu=_gpu_line(detail),
        datasheets=[_datasheet_line(item) for item in detail.datasheets],
        source=source_slug,
        measured=show_measured,
        filters=narrowed,
        collections=list(dict.fromkeys(collections)),
        tags=facet_values(session)["tag"],
        matching=counts[True] + counts[False],
        sources=[
            SourceChoice(source=None, name="Every source", url=url(None, None), selected=source_slug is None),
            *(
                SourceChoice(
                    source=entry.source,
                    name=entry.source_name,
                    url=url(entry.source, None),
                    selected=entry.source == source_slug,
                )
                for entry in detail.by_producer
            ),
        ],
        tabs=[
            CoverageTab(
                measured=kind,
                label="Measured" if kind else "Not measured",
                count=counts[kind],
                url=url(source_slug, kind),
                selected=kind == show_measured,
            )
            for kind in (True, False)
        ],
        workloads=[
            GpuWorkloadLine(
                slug=row.workload,
                url=row.url,
                title=row.title,
                collection=row.collection,
                source=row.source,
                source_name=names.get(row.source, row.source),
                runs=row.runs,
                best=_best_line(row.workload, row.title, row.best) if row.best else None,
            )
            for row in rows
        ],
        total=total,
        page=number,
        page_count=page_count,
        previous_url=url(source_slug, show_measured, number - 1) if number > 1 else None,
        next_url=url(source_slug, show_measured, number + 1) if number < page_count else None,
    )
    return render_page(request, context)


# --- Origin models -----------------------------------------------------------------


class WorkloadLine(Part):
    slug: str
    url: str
    title: str
    collection: str


class ModelPage(PageContext):
    template: ClassVar[str] = "model.html"

    slug: str
    name: str
    workloads: list[WorkloadLine]
    best_runs: list[RunLine]


@page_route(router, "/models/{slug}")
def model(request: Request, slug: str, session: SessionDep) -> Response:
    detail = model_detail(session, slug)
    if detail is None:
        raise NotFound(f"No origin model has the slug {slug!r}.")
    best = one_unit(
        [_best_line(w.slug, w.title, run) for w in detail.workload_list for run in w.best_by_gpu],
        "latency_ns",
        "latency",
    )
    context = ModelPage(
        slug=detail.slug,
        name=detail.name,
        workloads=[
            WorkloadLine(slug=w.slug, url=urls.workload(w.slug), title=w.title, collection=w.collection)
            for w in detail.workload_list
        ],
        # Shown by workload title; the store lists them by slug.
        best_runs=sorted(best, key=lambda run: (run.workload, run.environment)),
    )
    return render_page(request, context)


# --- Sources -----------------------------------------------------------------------


class IngestLine(Part):
    id: int
    origin: str
    read_from: str
    snapshot_observed_at: datetime | None
    snapshot_scope: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None


class SourceLine(Part):
    slug: str
    name: str
    url: str
    website: str
    licence: str
    attribution: str
    last_observed_at: datetime | None
    workload_count: int
    superseded_workloads: int  # of them, older revisions of a revised problem
    workloads_measured: int
    run_count: int
    gpu_count: int
    implementation_count: int
    workloads_url: str
    last_ingest: IngestLine | None
    completeness: SourceCompleteness


def _source_line(source: SourceItem) -> SourceLine:
    return SourceLine(
        slug=source.slug,
        name=source.name,
        url=source.url,
        website=source.website,
        licence=source.licence,
        attribution=source.attribution,
        last_observed_at=source.last_observed_at,
        workload_count=source.workloads,
        superseded_workloads=source.superseded_workloads,
        workloads_measured=source.workloads_measured,
        run_count=source.runs,
        gpu_count=source.gpus,
        implementation_count=source.implementations,
        workloads_url=urls.workloads(source=source.slug),
        last_ingest=IngestLine(**source.last_ingest.model_dump()) if source.last_ingest else None,
        completeness=source.completeness,
    )


class SourcesPage(PageContext):
    template: ClassVar[str] = "sources.html"

    sources: list[SourceLine]  # by name


@page_route(router, "/sources")
def sources(request: Request, session: SessionDep) -> Response:
    lines = sorted(
        (_source_line(source) for source in every_source(session)), key=lambda s: (s.name.casefold(), s.slug)
    )
    return render_page(request, SourcesPage(sources=lines))


# The tables an ingest writes, in the order a batch writes them; a count of another table follows them.
WRITTEN_TABLES = ("protocol", "environment", "workload", "implementation", "run")
OUTCOMES = ("added", "updated", "unchanged")


class OutcomeRow(Part):
    """How many records of one table an ingest added, updated and found unchanged."""

    table: str
    added: int
    updated: int
    unchanged: int


class CountRow(Part):
    group: str  # skipped, flags, units, ...
    name: str
    count: int


class ReportView(IngestLine):
    outcomes: list[OutcomeRow]
    other_counts: list[CountRow]
    errors: list[str]
    warnings: list[str]
    drift: list[str]


def _report_view(report: IngestionReportItem) -> ReportView:
    counts = {group: values for group, values in report.counts.items() if isinstance(values, dict)}
    tables = {table for outcome in OUTCOMES for table in counts.get(outcome, {})}
    ordered = [t for t in WRITTEN_TABLES if t in tables] + sorted(tables - set(WRITTEN_TABLES))
    errors, warnings = errors_and_warnings(report.errors)
    return ReportView(
        id=report.id,
        origin=report.origin,
        read_from=report.read_from,
        snapshot_observed_at=report.snapshot_observed_at,
        snapshot_scope=report.snapshot_scope,
        status=report.status,
        started_at=report.started_at,
        finished_at=report.finished_at,
        outcomes=[
            OutcomeRow(table=table, **{outcome: int(counts.get(outcome, {}).get(table, 0)) for outcome in OUTCOMES})
            for table in ordered
        ],
        other_counts=[
            CountRow(group=group, name=name, count=int(count))
            for group, values in sorted(counts.items())
            if group not in OUTCOMES
            for name, count in sorted(values.items())
        ],
        errors=errors,
        warnings=warnings,
        drift=[str(field) for field in report.drift],
    )


class SourcePage(PageContext):
    template: ClassVar[str] = "source.html"

    slug: str
    name: str
    url: str
    description: str
    licence: str
    attribution: str
    last_observed_at: datetime | None
    workload_count: int
    superseded_workloads: int  # of them, older revisions of a revised problem
    workloads_measured: int
    run_count: int
    gpu_count: int
    implementation_count: int
    workloads_url: str
    completeness: SourceCompleteness
    collections: list[CollectionCount]
    last_report: ReportView | None
    report_count: int
    reports: list[IngestionReportItem]  # newest first, as the API serves them


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
        attribution=detail.attribution,
        last_observed_at=detail.last_observed_at,
        workload_count=detail.workloads,
        superseded_workloads=detail.superseded_workloads,
        workloads_measured=detail.workloads_measured,
        run_count=detail.runs,
        gpu_count=detail.gpus,
        implementation_count=detail.implementations,
        workloads_url=urls.workloads(source=detail.slug),
        completeness=detail.completeness,
        collections=detail.collections,
        last_report=_report_view(detail.reports[0]) if detail.reports else None,
        report_count=detail.report_count,
        reports=detail.reports,
    )
    return render_page(request, context)
