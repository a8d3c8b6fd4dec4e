"""Origin models: the listing by slug, and one with the best run of each workload per GPU.

``/models/{slug}``, its JSON twin and ``/api/v1/models[/{slug}]`` read this module.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Workload
from kernelindex.slugs import slugify
from kernelindex.store.catalog import origin_model_spellings
from kernelindex.store.gpus import best_on_gpus
from kernelindex.store.keyset import Position, page_of
from kernelindex.store.schemas import ModelDetail, ModelItem, ModelWorkload


def _models(session: Session) -> dict[str, tuple[str, int]]:
    """slug → (a display name, number of workloads); names that slug alike are one model."""
    by_slug: dict[str, tuple[str, int]] = {}
    rows = session.execute(
        select(Workload.origin_model, func.count())
        .where(Workload.origin_model.is_not(None))
        .group_by(Workload.origin_model)
        .order_by(Workload.origin_model)
    )
    for name, count in rows:
        slug = slugify(str(name))
        first, total = by_slug.get(slug, (str(name), 0))
        by_slug[slug] = (first, total + count)
    return by_slug


def _model_item(slug: str, name: str, count: int) -> ModelItem:
    return ModelItem(slug=slug, name=name, workloads=count, url=urls.model(slug), api_url=urls.api_model(slug))


def list_models(session: Session, after: Position | None, limit: int) -> tuple[list[ModelItem], Position | None]:
    models = _models(session)
    return page_of([(slug, _model_item(slug, *value)) for slug, value in models.items()], after, limit)


def model_detail(session: Session, slug: str) -> ModelDetail | None:
    """By the model's slug (or a name that slugs to it): its workloads by slug, each with its
    best known run per GPU: the fastest eligible run on that GPU across stacks and
    protocols (``gpus.best_on_gpus``), by GPU slug."""
    slug = slugify(slug, fallback="")
    models = _models(session)
    if slug not in models:
        return None
    names = origin_model_spellings(session, slug)
    workloads = session.scalars(select(Workload).where(Workload.origin_model.in_(names)).order_by(Workload.name)).all()
    best = best_on_gpus(session, [w.id for w in workloads])
    entries = [
        ModelWorkload(
            slug=workload.name,
            title=workload.title,
            collection=workload.collection,
            best_by_gpu=[run for (workload_id, gpu), run in sorted(best.items()) if workload_id == workload.id],
        )
        for workload in workloads
    ]
    return ModelDetail(**_model_item(slug, *models[slug]).model_dump(), workload_list=entries)
