"""The home page: search, workloads by source and collection, newest records, sources."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.store import reads
from kernelindex.store.completeness import every_source_completeness
from kernelindex.store.gpu_filter import GpuFilterError, gpu_named, product_of
from kernelindex.store.records import catalogue_records
from kernelindex.store.schemas import SourceCompleteness, WorkloadItem
from kernelindex.store.tallies import eligible_run_count
from kernelindex.store.workloads import catalogue_by_source
from kernelindex.web import params
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest
from kernelindex.web.pages import PageContext, Part, page_route, render_page
from kernelindex.web.workloads import GpuOption, gpu_options

router = APIRouter()
NEWEST_RECORDS = 8


class BestRunPart(Part):
    run: str
    url: str
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    implementation: str
    environment: str
    evidence: EvidenceLevel


class WorkloadPart(Part):
    slug: str
    url: str
    title: str
    cases: int
    eligible_runs: int
    best: BestRunPart | None
    runs_on_gpu: int | None  # filtered by GPU, its runs there (0: not measured on it); else None


class CollectionPart(Part):
    name: str
    workload_count: int
    measured_on_gpu: int | None  # filtered by GPU, its workloads with a run there; else None
    url: str
    workloads: list[WorkloadPart]


class SourceSection(Part):
    """A source's workloads, by collection, with its figures and the credit they are shown with."""

    slug: str
    name: str
    url: str
    website: str
    attribution: str
    workload_count: int
    eligible_runs: int
    workloads_url: str
    collections: list[CollectionPart]


class SourcePart(Part):
    slug: str
    name: str
    url: str
    last_observed_at: datetime | None
    completeness: SourceCompleteness


class RecordPart(Part):
    observed_at: datetime
    workload: str
    workload_url: str
    group: str
    implementation: str
    run: str
    url: str
    latency_ns: int
    improvement: float | None


class GpuPart(Part):
    """The GPU the catalogue's figures are on, with its page and the whole list filtered by it."""

    slug: str
    product: str
    url: str
    workloads_url: str


class HomePage(PageContext):
    template: ClassVar[str] = "home.html"

    workload_count: int
    eligible_run_count: int  # in the whole catalogue, on every GPU
    gpus: list[GpuOption]  # the GPU filter's choices
    gpu: GpuPart | None  # filtered by GPU: each workload's figures are on it
    catalogue: list[SourceSection]
    newest_records: list[RecordPart]
    sources: list[SourcePart]


def _workload_part(w: WorkloadItem) -> WorkloadPart:
    return WorkloadPart(
        slug=w.slug,
        url=w.url,
        title=w.title,
        cases=w.case_count,
        eligible_runs=w.eligible_runs,
        runs_on_gpu=w.runs_on_gpu,
        best=None
        if w.fastest is None
        else BestRunPart(
            run=w.fastest.run,
            url=urls.run(w.fastest.run),
            latency_ns=w.fastest.latency_ns,
            primary_statistic=w.fastest.primary_statistic,
            sol_score=w.fastest.sol_score,
            implementation=w.fastest.project,
            environment=w.fastest.environment_label,
            evidence=w.fastest.evidence,
        ),
    )


@page_route(router, "/")
def home(request: Request, session: SessionDep, gpu: str | None = None) -> Response:
    chosen = params.text("gpu", gpu)
    try:
        slug = gpu_named(session, chosen) if chosen else None
    except GpuFilterError as exc:
        raise BadRequest(str(exc)) from None
    groups = catalogue_by_source(session, slug)
    catalogue = [
        SourceSection(
            slug=group.slug,
            name=group.name,
            url=urls.source(group.slug),
            website=group.website,
            attribution=group.attribution,
            workload_count=group.workload_count,
            eligible_runs=group.eligible_runs,
            workloads_url=urls.workloads(source=group.slug, gpu=slug),
            collections=[
                CollectionPart(
                    name=collection.name,
                    workload_count=collection.workload_count,
                    measured_on_gpu=collection.measured_on_gpu,
                    url=urls.workloads(source=group.slug, collection=collection.name, gpu=slug),
                    workloads=[_workload_part(w) for w in collection.busiest],
                )
                for collection in group.collections
            ],
        )
        for group in groups
    ]
    completeness = every_source_completeness(session)
    context = HomePage(
        workload_count=sum(section.workload_count for section in catalogue),
        eligible_run_count=eligible_run_count(session),
        gpus=gpu_options(session, slug),
        gpu=None
        if slug is None
        else GpuPart(
            slug=slug,
            product=product_of(session, slug),
            url=urls.gpu(slug),
            workloads_url=urls.workloads(gpu=slug),
        ),
        catalogue=catalogue,
        newest_records=[
            RecordPart(
                observed_at=entry.observed_at,
                workload=entry.workload_title,
                workload_url=urls.workload(entry.workload_slug),
                group=f"{entry.gpu} · stack {entry.stack}" if entry.stack else entry.gpu,
                implementation=entry.implementation,
                run=entry.run_name,
                url=urls.run(entry.run_name),
                latency_ns=entry.latency_ns,
                improvement=entry.improvement,
            )
            for entry in catalogue_records(session, limit=NEWEST_RECORDS)
        ],
        sources=[
            SourcePart(
                slug=s.slug,
                name=s.name,
                url=urls.source(s.slug),
                last_observed_at=s.last_observed_at,
                completeness=completeness[s.slug],
            )
            for s in reads.sources(session)
        ],
    )
    return render_page(request, context)
