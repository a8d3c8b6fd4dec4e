"""GPUs: those measured on and those tracked, and one with its workloads measured or not.

``/gpus``, ``/gpus/{slug}``, their JSON twins and ``/api/v1/gpus[/{slug}[/workloads]]`` all
read this module: ``gpu_catalogue`` answers "which GPUs, with how much coverage, of which
source's workloads", ``gpu_detail`` "this GPU's figures and environments", and
``gpu_workloads_page`` / ``list_gpu_workloads`` "its workloads, measured or not", one page
at a time. A source's coverage on a GPU is of that source's own current workloads (the current
revision of each problem), whoever ran them; runs are credited to their producer (a controlled
rerun of a SOL-ExecBench workload covers a SOL-ExecBench workload, and is the reruns' run).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, case, func, select
from sqlalchemy.orm import Session, load_only

from kernelindex import urls
from kernelindex.db.tables import Environment, GpuDatasheet, Run, Source, Workload
from kernelindex.db.tally_tables import EVERY_GPU, WorkloadSourceTally, WorkloadTally
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.store.common import group_sizes, name_by_ref
from kernelindex.store.keyset import SLUG_ORDER, Expr, Position, keyset_page, numbered_page, page_of
from kernelindex.store.manifests import environment_manifest
from kernelindex.store.runs import stack_text
from kernelindex.store.schemas import (
    BestOnGpu,
    DatasheetItem,
    EnvironmentItem,
    GpuDetail,
    GpuItem,
    GpuProducerRuns,
    GpuSourceCoverage,
    GpuWorkload,
)
from kernelindex.store.tallies import runs_on_gpu
from kernelindex.store.workloads import WorkloadFilters, headlines, workload_conditions


@dataclass(frozen=True)
class GpuCatalogue:
    gpus: list[GpuItem]  # by slug
    workload_count: int  # workloads in the catalogue: measured + gaps, for any GPU


@dataclass(frozen=True)
class _Credits:
    """Per GPU slug: the coverage of each source's workloads and the runs of each producer."""

    coverage: dict[str, list[GpuSourceCoverage]]
    producers: dict[str, list[GpuProducerRuns]]
    unmeasured: list[GpuSourceCoverage]  # a GPU nobody measured on
    current_workloads: int  # in the catalogue, every source's


def _credits(session: Session, slug: str | None) -> _Credits:
    """GPU slug → how many of each source's current workloads have a run on it (whoever ran
    them), and how many runs each producer holds on it: a controlled rerun of a KernelBench
    workload covers a KernelBench workload and is credited to the reruns."""
    on_gpu = WorkloadTally.gpu_slug == slug if slug else WorkloadTally.gpu_slug != EVERY_GPU
    current = Workload.superseded_by_id.is_(None)
    measured = (
        select(
            WorkloadTally.gpu_slug,
            WorkloadTally.source_id,
            func.sum(case((current, 1), else_=0)).label("current"),
            func.sum(case((current, 0), else_=1)).label("superseded"),
        )
        .join(Workload, Workload.id == WorkloadTally.workload_id)
        .where(on_gpu)
        .group_by(WorkloadTally.gpu_slug, WorkloadTally.source_id)
    )
    totals = {
        source_id: int(count)
        for source_id, count in session.execute(
            select(Workload.source_id, func.count()).where(current).group_by(Workload.source_id)
        )
    }
    by_gpu = WorkloadSourceTally.gpu_slug == slug if slug else WorkloadSourceTally.gpu_slug != EVERY_GPU
    produced = session.execute(
        select(WorkloadSourceTally.gpu_slug, WorkloadSourceTally.source_id, func.sum(WorkloadSourceTally.runs))
        .where(by_gpu)
        .group_by(WorkloadSourceTally.gpu_slug, WorkloadSourceTally.source_id)
    ).all()
    named = {source_id for _, source_id, _ in produced} | set(totals)
    sources = sorted(
        session.scalars(select(Source).where(Source.id.in_(sorted(named)))), key=lambda s: (s.name.casefold(), s.slug)
    )
    figures: dict[str, dict[int, tuple[int, int]]] = defaultdict(dict)
    for row in session.execute(measured):
        figures[row.gpu_slug][row.source_id] = (int(row.current), int(row.superseded))
    runs: dict[str, dict[int, int]] = defaultdict(dict)
    for gpu_slug, source_id, count in produced:
        runs[gpu_slug][source_id] = int(count)

    def per_source(on_gpu: dict[int, tuple[int, int]]) -> list[GpuSourceCoverage]:
        return [
            GpuSourceCoverage(
                source=source.slug,
                source_name=source.name,
                workloads=on_gpu.get(source.id, (0, 0))[0],
                gaps=totals[source.id] - on_gpu.get(source.id, (0, 0))[0],
                source_workloads=totals[source.id],
                superseded_workloads=on_gpu.get(source.id, (0, 0))[1],
            )
            for source in sources
            if source.id in totals
        ]

    def per_producer(counts: dict[int, int]) -> list[GpuProducerRuns]:
        return [
            GpuProducerRuns(
                source=source.slug, source_name=source.name, runs=counts[source.id], gpu_naming=source.gpu_naming
            )
            for source in sources
            if counts.get(source.id)
        ]

    return _Credits(
        coverage={gpu: per_source(on_gpu) for gpu, on_gpu in figures.items()},
        producers={gpu: per_producer(counts) for gpu, counts in runs.items()},
        unmeasured=per_source({}),
        current_workloads=sum(totals.values()),
    )


def gpu_catalogue(session: Session, slug: str | None = None) -> GpuCatalogue:
    """Every GPU by slug (only ``slug``'s, given one): those measured on, from environments,
    and those tracked but not measured yet; each with its runs (per producer), current workloads
    measured and gaps (current workloads not measured on it), all stacks together, and the same
    per source of workloads. And the catalogue's count of current workloads.
    """
    environments = session.scalars(
        select(Environment).where(Environment.gpu_slug == slug) if slug else select(Environment)
    ).all()
    credits = _credits(session, slug)
    total = credits.current_workloads
    by_slug: dict[str, list[Environment]] = defaultdict(list)
    for environment in environments:
        by_slug[environment.gpu_slug].append(environment)
    gpus = {}
    for gpu_slug, members in by_slug.items():
        first = min(members, key=lambda e: e.name)
        per_source = credits.coverage.get(gpu_slug, credits.unmeasured)
        producers = credits.producers.get(gpu_slug, [])
        # Each workload has one source, so the per-source counts of distinct workloads add up.
        measured = sum(entry.workloads for entry in per_source)
        gpus[gpu_slug] = GpuItem(
            slug=gpu_slug,
            product=first.gpu_product,
            vendor=environment_manifest(first).spec.hardware.vendor,
            architecture=first.architecture,
            environments=len(members),
            runs=sum(entry.runs for entry in producers),
            workloads=measured,
            gaps=total - measured,
            by_source=per_source,
            by_producer=producers,
            url=urls.gpu(gpu_slug),
            api_url=urls.api_gpu(gpu_slug),
        )
    # GPUs the registry tracks are listed before anyone measures on them.
    for tracked in TRACKED_GPUS:
        if tracked.slug not in gpus and slug in (None, tracked.slug):
            gpus[tracked.slug] = GpuItem(
                slug=tracked.slug,
                product=tracked.product,
                vendor=tracked.vendor,
                architecture=tracked.architecture,
                environments=0,
                runs=0,
                workloads=0,
                gaps=total,
                by_source=credits.unmeasured,
                by_producer=[],
                url=urls.gpu(tracked.slug),
                api_url=urls.api_gpu(tracked.slug),
            )
    return GpuCatalogue(gpus=[gpus[key] for key in sorted(gpus)], workload_count=total)


def list_gpus(session: Session, after: Position | None, limit: int) -> tuple[list[GpuItem], Position | None]:
    """One page of ``gpu_catalogue`` after a position, and the position the next page starts after."""
    return page_of([(gpu.slug, gpu) for gpu in gpu_catalogue(session).gpus], after, limit)


def best_on_gpus(
    session: Session, workload_ids: Sequence[int], gpu: str | None = None
) -> dict[tuple[int, str], BestOnGpu]:
    """(workload id, GPU slug) → the fastest eligible run of that workload on that GPU (on
    ``gpu`` alone, given one), across stacks and protocols (the workload tallies'
    ``fastest_run_id``), with the size of the comparison group it leads."""
    on_gpu = WorkloadTally.gpu_slug == gpu if gpu else WorkloadTally.gpu_slug != EVERY_GPU
    run_ids = session.scalars(
        select(WorkloadTally.fastest_run_id).where(
            WorkloadTally.workload_id.in_(sorted(workload_ids)), on_gpu, WorkloadTally.fastest_run_id.is_not(None)
        )
    ).all()
    best = {
        (headline.workload_id, headline.fastest.gpu): headline
        for headline in headlines(session, [*filter(None, run_ids)])
    }
    sizes = group_sizes(session, {(headline.workload_id, headline.comparison_key) for headline in best.values()})
    return {
        key: BestOnGpu(
            **headline.fastest.model_dump(),
            availability=headline.availability,
            group_eligible_runs=sizes[headline.comparison_key],
        )
        for key, headline in best.items()
    }


def find_gpu(session: Session, ref: str) -> str | None:
    """The slug of the GPU ``ref`` names: a GPU slug (measured on or tracked), or the digest
    of the manifest of an environment on it."""
    if ref.startswith("sha256:"):
        name = name_by_ref(session, Environment, "ExecutionEnvironment", ref)
        return session.scalar(select(Environment.gpu_slug).where(Environment.name == name).limit(1))
    slug = ref.lower()
    if any(tracked.slug == slug for tracked in TRACKED_GPUS):
        return slug
    return session.scalar(select(Environment.gpu_slug).where(Environment.gpu_slug == slug).limit(1))


def gpu_detail(session: Session, ref: str) -> GpuDetail | None:
    """By GPU slug, or by the digest of the manifest of an environment on it: its figures
    (``gpu_catalogue``'s) and its environments. Its workloads are listed page by page
    (``gpu_workloads_page``, ``list_gpu_workloads``)."""
    slug = find_gpu(session, ref)
    item = next(iter(gpu_catalogue(session, slug).gpus), None) if slug else None
    if item is None:
        return None
    environments = session.scalars(
        select(Environment).where(Environment.gpu_slug == item.slug).order_by(Environment.name)
    ).all()
    env_runs = dict(
        session.execute(
            select(Run.environment_id, func.count())
            .where(Run.environment_id.in_([e.id for e in environments]))
            .group_by(Run.environment_id)
        ).all()
    )
    return GpuDetail(
        **item.model_dump(),
        environment_list=[
            EnvironmentItem(
                name=e.name,
                title=e.title,
                stack=stack_text(e),
                digest=e.digest,
                runs=env_runs.get(e.id, 0),
            )
            for e in environments
        ],
        workloads_url=urls.api_gpu_workloads(item.slug),
        datasheets=[
            DatasheetItem(source=slug, source_name=name, figures=figures, reference=reference)
            for slug, name, figures, reference in session.execute(
                select(Source.slug, Source.name, GpuDatasheet.figures, GpuDatasheet.reference)
                .join(Source, GpuDatasheet.source_id == Source.id)
                .where(GpuDatasheet.gpu_slug == item.slug)
                .order_by(Source.name)
            )
        ],
    )


# --- A GPU's workloads, measured or not --------------------------------------------


@dataclass(frozen=True)
class GpuWorkloadFilters:
    source: str | None = None  # a source's slug: only its workloads (``UnknownSource`` if there is none)
    measured: bool | None = None  # True: measured on the GPU; False: not (its gaps); None: both
    collection: str | None = None
    tag: str | None = None
    q: str | None = None  # a substring of the slug, title, origin model or description

    def workload_filters(self, gpu_slug: str) -> WorkloadFilters:
        """The same filters as a workload list takes them (``workload_conditions``, ``gpu_coverage``)."""
        return WorkloadFilters(
            source=self.source, collection=self.collection, tag=self.tag, q=self.q, gpu=gpu_slug, measured=self.measured
        )


def _gpu_workload_listing(
    session: Session, gpu_slug: str, filters: GpuWorkloadFilters
) -> tuple[Select[Any], dict[str, Expr]]:
    """The SELECT of the workloads matching ``filters``, by slug (their manifests left unread)."""
    stmt = select(Workload).options(
        load_only(Workload.id, Workload.name, Workload.title, Workload.collection, Workload.source_id)
    )
    stmt = stmt.where(*workload_conditions(session, filters.workload_filters(gpu_slug)))
    return stmt, {"slug": Workload.name}


def _gpu_workloads(session: Session, gpu_slug: str, workloads: Sequence[Workload]) -> list[GpuWorkload]:
    """The listing's workloads as items: their runs on the GPU and, if any is eligible, the best."""
    ids = [workload.id for workload in workloads]
    counted = runs_on_gpu(gpu_slug, ids)
    runs: dict[int, int] = dict(session.execute(select(counted.c.workload_id, counted.c.runs)).all())
    measured = [workload_id for workload_id in ids if workload_id in runs]
    best = best_on_gpus(session, measured, gpu_slug)
    source_slugs = dict(session.execute(select(Source.id, Source.slug)).all())
    return [
        GpuWorkload(
            workload=workload.name,
            title=workload.title,
            collection=workload.collection,
            source=source_slugs[workload.source_id],
            runs=runs.get(workload.id, 0),
            best=best.get((workload.id, gpu_slug)),
            # Opened on the comparison group of its best run on this GPU, where it has one.
            url=urls.workload_on(
                workload.name, found.comparison_key if (found := best.get((workload.id, gpu_slug))) else None
            ),
            api_url=urls.api_workload(workload.name),
        )
        for workload in workloads
    ]


def list_gpu_workloads(
    session: Session, gpu_slug: str, filters: GpuWorkloadFilters, after: Position | None, limit: int
) -> tuple[list[GpuWorkload], Position | None]:
    """One page of the GPU's workloads after a position (the API's cursor), and the next page's position."""
    stmt, exprs = _gpu_workload_listing(session, gpu_slug, filters)
    rows, position = keyset_page(session, stmt, SLUG_ORDER, exprs, after, limit)
    return _gpu_workloads(session, gpu_slug, [row[0] for row in rows]), position


def gpu_workloads_page(
    session: Session, gpu_slug: str, filters: GpuWorkloadFilters, number: int, size: int
) -> tuple[list[GpuWorkload], int]:
    """Page ``number`` (from 1) of ``size`` of the same listing, for the HTML page and its twin,
    and how many match in all."""
    stmt, exprs = _gpu_workload_listing(session, gpu_slug, filters)
    rows, total = numbered_page(session, stmt, SLUG_ORDER, exprs, (number - 1) * size, size)
    return _gpu_workloads(session, gpu_slug, [row[0] for row in rows]), total
