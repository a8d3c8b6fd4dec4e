"""Reading the version regressions ``kernelindex.store.regressions`` computed: ``/regressions``
and its JSON twin, filtered by workload, GPU, framework and kernel, largest slowdown first, a page
at a time. Every query reads ``version_regression`` (by its indexes, but for a kernel); no case
result is read here."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, func, select, true
from sqlalchemy.orm import Session, aliased

from kernelindex.db.regression_tables import RegressionNoise, VersionRegression
from kernelindex.db.tables import Environment, Run, Source, Workload, WorkloadCase
from kernelindex.store.gpu_filter import gpu_named


class UnknownFrameworkFilter(ValueError):
    """A framework with no regression; the message names those that have some."""


class UnknownRegressionFilter(ValueError):
    """A workload slug no workload has, or a kernel with no regression; the message says which."""


@dataclass(frozen=True)
class RegressionFilters:
    gpu: str | None = None  # a GPU slug
    framework: str | None = None  # as the source names it, e.g. "vLLM"
    workload: str | None = None  # a workload's slug
    kernel: str | None = None  # as the source names it
    workload_id: int | None = None  # the workload's, read by ``checked_filters``


@dataclass(frozen=True)
class RegressionItem:
    workload: str  # the workload's slug
    workload_title: str
    comparison_key: str
    case_index: int
    case_axes: dict[str, object]
    gpu_slug: str
    gpu_product: str
    framework: str
    kernel: str
    newer_run: str
    newer_version: str
    newer_latency_ns: int
    older_run: str
    older_version: str
    older_latency_ns: int
    slowdown: float


@dataclass(frozen=True)
class Facet:
    value: str
    label: str
    count: int


@dataclass(frozen=True)
class NoiseNote:
    source: str
    source_slug: str
    bound: float
    pairs: int
    estimated: bool
    method: str
    computed_at: datetime


def checked_filters(
    session: Session, gpu: str | None, framework: str | None, workload: str | None = None, kernel: str | None = None
) -> RegressionFilters:
    """The filters as stored values: a GPU slug any page knows (``UnknownGpu`` otherwise), a
    framework written as the source writes it ("vllm" gives "vLLM"; ``UnknownFrameworkFilter``
    with suggestions for one that has no regression), a workload's slug (in any case) and a kernel
    as the source writes it (``UnknownRegressionFilter`` for an unknown workload or a kernel with
    no regression)."""
    slug = gpu_named(session, gpu) if gpu else None
    workload_id = None
    if workload is not None:
        found = session.execute(select(Workload.id, Workload.name).where(Workload.name == workload.lower())).first()
        if found is None:
            raise UnknownRegressionFilter(f"No workload has the slug {workload!r}.")
        workload_id, workload = found
    if kernel is not None:
        named = session.scalar(
            select(VersionRegression.kernel).where(func.lower(VersionRegression.kernel) == kernel.lower()).limit(1)
        )
        if named is None:
            raise UnknownRegressionFilter(f"No version regression is recorded for kernel {kernel!r}.")
        kernel = named
    if framework is None:
        return RegressionFilters(slug, None, workload, kernel, workload_id)
    known = list(session.scalars(select(VersionRegression.framework).distinct().order_by(VersionRegression.framework)))
    matched = next((name for name in known if name.casefold() == framework.casefold()), None)
    if matched is None:
        folded = {name.casefold(): name for name in known}
        near = [folded[name] for name in difflib.get_close_matches(framework.casefold(), folded, n=3, cutoff=0.5)]
        hint = f" Did you mean {' or '.join(near)}?" if near else ""
        listed = ", ".join(known) if known else "none yet"
        raise UnknownFrameworkFilter(
            f"No version regression is recorded for framework {framework!r}.{hint} "
            f"Frameworks with regressions: {listed}."
        )
    return RegressionFilters(slug, matched, workload, kernel, workload_id)


def _where(filters: RegressionFilters) -> ColumnElement[bool]:
    conditions = []
    if filters.gpu:
        conditions.append(VersionRegression.gpu_slug == filters.gpu)
    if filters.framework:
        conditions.append(VersionRegression.framework == filters.framework)
    if filters.workload_id is not None:
        conditions.append(VersionRegression.workload_id == filters.workload_id)
    if filters.kernel:
        conditions.append(VersionRegression.kernel == filters.kernel)
    return and_(true(), *conditions)


def count_regressions(session: Session, filters: RegressionFilters) -> int:
    return session.scalar(select(func.count()).select_from(VersionRegression).where(_where(filters))) or 0


# Made once: an alias builds a proxy of each of the table's columns.
_NEWER, _OLDER = aliased(Run), aliased(Run)


def regressions_page(session: Session, filters: RegressionFilters, page: int, size: int) -> list[RegressionItem]:
    """Page ``page`` (from 1) of the regressions ``filters`` admit, largest slowdown first."""
    order = (VersionRegression.slowdown.desc(), VersionRegression.id.desc())
    # The page's ids first, from the table and its index alone: joining the rows an OFFSET skips
    # would cost a second on a deep page of half a million regressions.
    ids = (
        select(VersionRegression.id)
        .where(_where(filters))
        .order_by(*order)
        .limit(size)
        .offset((page - 1) * size)
        .scalar_subquery()
    )
    newer, older = _NEWER, _OLDER
    rows = session.execute(
        select(
            VersionRegression,
            Workload.name,
            Workload.title,
            WorkloadCase.axes,
            Environment.gpu_product,
            newer.name,
            older.name,
        )
        .join(Workload, Workload.id == VersionRegression.workload_id)
        .join(newer, newer.id == VersionRegression.newer_run_id)
        .join(older, older.id == VersionRegression.older_run_id)
        .join(Environment, Environment.id == newer.environment_id)
        .outerjoin(
            WorkloadCase,
            and_(
                WorkloadCase.workload_id == VersionRegression.workload_id,
                WorkloadCase.position == VersionRegression.case_index,
            ),
        )
        .where(VersionRegression.id.in_(ids))
        .order_by(*order)
    )
    return [
        RegressionItem(
            workload=workload,
            workload_title=title,
            comparison_key=regression.comparison_key,
            case_index=regression.case_index,
            case_axes=dict(axes or {}),
            gpu_slug=regression.gpu_slug,
            gpu_product=product,
            framework=regression.framework,
            kernel=regression.kernel,
            newer_run=newer_name,
            newer_version=regression.newer_version,
            newer_latency_ns=regression.newer_latency_ns,
            older_run=older_name,
            older_version=regression.older_version,
            older_latency_ns=regression.older_latency_ns,
            slowdown=regression.slowdown,
        )
        for regression, workload, title, axes, product, newer_name, older_name in rows
    ]


def regression_facets(session: Session) -> tuple[list[Facet], list[Facet]]:
    """The GPUs and the frameworks with regressions, with how many each has: the filters' choices."""
    gpus = session.execute(
        select(VersionRegression.gpu_slug, func.count())
        .group_by(VersionRegression.gpu_slug)
        .order_by(VersionRegression.gpu_slug)
    ).all()
    products = dict(
        session.execute(
            select(Environment.gpu_slug, func.min(Environment.gpu_product))
            .where(Environment.gpu_slug.in_([slug for slug, _ in gpus]))
            .group_by(Environment.gpu_slug)
        ).all()
    )
    frameworks = session.execute(
        select(VersionRegression.framework, func.count())
        .group_by(VersionRegression.framework)
        .order_by(VersionRegression.framework)
    ).all()
    return (
        [Facet(slug, products.get(slug, slug), count) for slug, count in gpus],
        [Facet(name, name, count) for name, count in frameworks],
    )


def noise_notes(session: Session) -> list[NoiseNote]:
    """Each source's noise bound, as the regressions were last computed with it."""
    rows = session.execute(select(RegressionNoise, Source).join(Source).order_by(Source.name))
    return [
        NoiseNote(
            source=source.name,
            source_slug=source.slug,
            bound=noise.bound,
            pairs=noise.pairs,
            estimated=noise.estimated,
            method=noise.method,
            computed_at=noise.computed_at,
        )
        for noise, source in rows
    ]
