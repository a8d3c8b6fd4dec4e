"""GPUs: those measured on and those tracked, and one with its workloads measured or not.

``/gpus``, ``/gpus/{slug}``, their JSON twins and ``/api/v1/gpus[/{slug}]`` all read this
module: ``gpu_catalogue`` answers "which GPUs, with how much coverage" and ``gpu_detail``
"what was measured on this GPU, and what was not".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.store.common import best_per_gpu, group_sizes, name_by_ref
from kernelindex.store.keyset import Position, page_of
from kernelindex.store.manifests import environment_manifest
from kernelindex.store.runs import availability_text, stack_text
from kernelindex.store.schemas import BestOnGpu, EnvironmentItem, GpuDetail, GpuGap, GpuItem, GpuWorkload
from kernelindex.store.workloads import fastest_run


@dataclass(frozen=True)
class GpuCatalogue:
    gpus: list[GpuItem]  # by slug
    workload_count: int  # workloads in the catalogue: measured + gaps, for any GPU


def gpu_catalogue(session: Session, slug: str | None = None) -> GpuCatalogue:
    """Every GPU by slug (only ``slug``'s, given one): those measured on, from environments,
    and those tracked but not measured yet; each with its runs, workloads measured and gaps
    (workloads not measured on it), all stacks together. And the catalogue's workload count.
    """
    environments = session.scalars(
        select(Environment).where(Environment.gpu_slug == slug) if slug else select(Environment)
    ).all()
    run_stats = {
        row.slug: row
        for row in session.execute(
            select(
                Environment.gpu_slug.label("slug"),
                func.count(Run.id).label("runs"),
                func.count(func.distinct(Run.workload_id)).label("workloads"),
            )
            .join(Run, Run.environment_id == Environment.id)
            .where(*([Environment.gpu_slug == slug] if slug else []))
            .group_by(Environment.gpu_slug)
        )
    }
    total = session.scalar(select(func.count()).select_from(Workload)) or 0
    by_slug: dict[str, list[Environment]] = defaultdict(list)
    for environment in environments:
        by_slug[environment.gpu_slug].append(environment)
    gpus = {}
    for gpu_slug, members in by_slug.items():
        first = min(members, key=lambda e: e.name)
        stats = run_stats.get(gpu_slug)
        measured = stats.workloads if stats else 0
        gpus[gpu_slug] = GpuItem(
            slug=gpu_slug,
            product=first.gpu_product,
            vendor=environment_manifest(first).spec.hardware.vendor,
            architecture=first.architecture,
            environments=len(members),
            runs=stats.runs if stats else 0,
            workloads=measured,
            gaps=total - measured,
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
                url=urls.gpu(tracked.slug),
                api_url=urls.api_gpu(tracked.slug),
            )
    return GpuCatalogue(gpus=[gpus[key] for key in sorted(gpus)], workload_count=total)


def list_gpus(session: Session, after: Position | None, limit: int) -> tuple[list[GpuItem], Position | None]:
    """One page of ``gpu_catalogue`` after a position, and the position the next page starts after."""
    return page_of([(gpu.slug, gpu) for gpu in gpu_catalogue(session).gpus], after, limit)


def best_on_gpus(session: Session, *conditions: ColumnElement[bool]) -> dict[tuple[int, str], BestOnGpu]:
    """(workload id, GPU slug) → the fastest eligible run of that workload on that GPU,
    across stacks and protocols (``common.best_per_gpu``), with the size of the
    comparison group it leads."""
    best = best_per_gpu(session, *conditions)
    sizes = group_sizes(session, {(run.workload_id, run.comparison_key) for run in best.values()})
    return {
        key: BestOnGpu(
            **fastest_run(run).model_dump(),
            availability=availability_text(
                run.implementation.license, run.implementation.source_available, run.implementation.has_install_recipe
            ),
            group_eligible_runs=sizes[run.comparison_key],
        )
        for key, run in best.items()
    }


def gpu_detail(session: Session, ref: str) -> GpuDetail | None:
    """By GPU slug, or by the digest of the manifest of an environment on it.

    What was measured on the GPU is one entry per workload with a run on it: its number
    of runs there and its best run there, the fastest eligible one across the GPU's
    stacks and protocols (as ``fastest_reported`` is a workload's headline across
    groups). That run leads its own comparison group; runs are still ranked only inside
    a group. The gaps are the workloads with no run on the GPU, by slug.
    """
    slug: str | None = ref.lower()
    if ref.startswith("sha256:"):
        name = name_by_ref(session, Environment, "ExecutionEnvironment", ref)
        slug = session.scalar(select(Environment.gpu_slug).where(Environment.name == name))
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
    counts = dict(
        session.execute(
            select(Run.workload_id, func.count())
            .where(Run.environment_id.in_([e.id for e in environments]))
            .group_by(Run.workload_id)
        ).all()
    )
    on_gpu = best_on_gpus(session, Environment.gpu_slug == item.slug)
    best = {workload_id: run for (workload_id, _), run in on_gpu.items()}
    measured, gaps = [], []
    workloads = session.execute(
        select(Workload.id, Workload.name, Workload.title, Workload.collection).order_by(Workload.name)
    )
    for workload in workloads:
        if workload.id not in counts:
            gaps.append(
                GpuGap(
                    slug=workload.name,
                    title=workload.title,
                    collection=workload.collection,
                    url=urls.workload(workload.name),
                    api_url=urls.api_workload(workload.name),
                )
            )
            continue
        top = best.get(workload.id)
        measured.append(
            GpuWorkload(
                workload=workload.name,
                title=workload.title,
                runs=counts[workload.id],
                best=top,
                best_environment=top.environment if top else None,
            )
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
        measured=measured,
        not_measured=[gap.slug for gap in gaps],
        gap_list=gaps,
    )
