"""GPUs for the API: those measured on and those tracked, and one with its workloads measured or not."""

from __future__ import annotations

import json
from collections import defaultdict

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.store.common import best_per_gpu, group_best, name_by_ref
from kernelindex.store.keyset import Position, page_of
from kernelindex.store.runs import stack_text
from kernelindex.store.schemas import EnvironmentItem, GpuDetail, GpuItem, GpuWorkload


def _gpus(session: Session, slug: str | None = None) -> dict[str, GpuItem]:
    """GPUs measured on (from environments) and those tracked but not measured yet; one, given ``slug``."""
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
    by_slug: dict[str, list[Environment]] = defaultdict(list)
    for environment in environments:
        by_slug[environment.gpu_slug].append(environment)
    gpus = {}
    for gpu_slug, members in by_slug.items():
        first = min(members, key=lambda e: e.name)
        stats = run_stats.get(gpu_slug)
        gpus[gpu_slug] = GpuItem(
            slug=gpu_slug,
            product=first.gpu_product,
            vendor=str(json.loads(first.manifest_json).get("spec", {}).get("hardware", {}).get("vendor", "unknown")),
            architecture=first.architecture,
            environments=len(members),
            runs=stats.runs if stats else 0,
            workloads=stats.workloads if stats else 0,
            url=f"/gpus/{gpu_slug}",
            api_url=f"/api/v1/gpus/{gpu_slug}",
        )
    # GPUs the registry tracks are listed before anyone measures on them, as the pages do.
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
                url=f"/gpus/{tracked.slug}",
                api_url=f"/api/v1/gpus/{tracked.slug}",
            )
    return gpus


def list_gpus(session: Session, after: Position | None, limit: int) -> tuple[list[GpuItem], Position | None]:
    return page_of(list(_gpus(session).items()), after, limit)


def gpu_detail(session: Session, ref: str) -> GpuDetail | None:
    """By GPU slug, or by the digest of the manifest of an environment on it."""
    slug: str | None = ref.lower()
    if ref.startswith("sha256:"):
        name = name_by_ref(session, Environment, "ExecutionEnvironment", ref)
        slug = session.scalar(select(Environment.gpu_slug).where(Environment.name == name))
    item = _gpus(session, slug).get(slug) if slug else None
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
    best = {
        workload_id: run for (workload_id, _), run in best_per_gpu(session, Environment.gpu_slug == item.slug).items()
    }
    measured, not_measured = [], []
    for workload in session.execute(select(Workload.id, Workload.name, Workload.title).order_by(Workload.name)):
        if workload.id not in counts:
            not_measured.append(workload.name)
            continue
        top = best.get(workload.id)
        measured.append(
            GpuWorkload(
                workload=workload.name,
                title=workload.title,
                runs=counts[workload.id],
                best=group_best(top) if top else None,
                best_environment=top.environment.name if top else None,
            )
        )
    return GpuDetail(
        **item.model_dump(),
        environment_list=[
            EnvironmentItem(
                name=e.name,
                title=e.title,
                stack=stack_text(e.manifest_json),
                digest=e.digest,
                runs=env_runs.get(e.id, 0),
            )
            for e in environments
        ],
        measured=measured,
        not_measured=not_measured,
    )
