"""Workloads as every list shows them: filtered, sorted, with their figures (PRODUCT.md §6).

``/workloads``, its JSON twin, home and ``/api/v1/workloads`` all read this module, so a
filter, a sort and a figure mean the same wherever they are shown. Workloads come from
sources, each with its own collections (SOL-ExecBench's L1 … FlashInfer-Bench,
KernelBench's levels, Liger-Kernel's one): lists filter by either, home groups by both. The figures of a
workload (eligible runs, best SOL score, fastest run, last record) are computed in SQL
by the rules of ``kernelindex.ranking``: ``eligible()`` is ``ineligibility_reasons``,
the fastest run is ``fastest_reported`` and the last record is the moment the current
#1 of one of its groups set it (``record_history``).

Filtered by GPU, a list keeps every workload but computes each one's figures from its runs
on that GPU alone, measured workloads first: "who is fastest on the H200" is answered row
by row, and a workload nobody ran there says so instead of showing another GPU's best.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, Text, and_, case, cast, func, or_, select
from sqlalchemy.orm import Session, aliased, defer, joinedload

from kernelindex import urls
from kernelindex.db.tables import Environment, Implementation, Run, Source, Workload
from kernelindex.db.tally_tables import EVERY_GPU, CollectionTally, WorkloadSourceTally, WorkloadTally
from kernelindex.slugs import slugify
from kernelindex.store.catalog import origin_model_spellings
from kernelindex.store.common import best_fields, contains, name_by_ref, rank_spans
from kernelindex.store.gpu_filter import MeasuredWithoutGpu, gpu_named
from kernelindex.store.keyset import Expr, Position, SortKey, keyset_page, numbered_page
from kernelindex.store.manifests import StoredText
from kernelindex.store.reads import eligible
from kernelindex.store.runs import availability_text, environment_label, evaluation_stack
from kernelindex.store.schemas import FastestRun, WorkloadItem
from kernelindex.store.source_filter import source_named
from kernelindex.store.tallies import eligible_stats, runs_on_gpu

WORKLOAD_SORTS: dict[str, tuple[SortKey, ...]] = {
    "name": (SortKey("name", str),),
    "runs": (SortKey("runs", int), SortKey("name", str)),
    "-runs": (SortKey("runs", int, descending=True), SortKey("name", str)),
    "best_sol": (SortKey("best_sol", float, descending=True, nullable=True), SortKey("name", str)),
    "last_record": (SortKey("last_record", datetime, descending=True, nullable=True), SortKey("name", str)),
}


# SOL-ExecBench's collections in its own order; any other collection sorts by name, numbers
# by value ("level 2" before "level 10").
COLLECTION_ORDER = ("L1", "L2", "Quant", "FlashInfer-Bench")
_NUMBERS = re.compile(r"(\d+)")


def collection_order(name: str) -> tuple[int, list[int | str]]:
    """The sort key of a collection name: SOL-ExecBench's order first, then by name, numbers by value."""
    known = COLLECTION_ORDER.index(name) if name in COLLECTION_ORDER else len(COLLECTION_ORDER)
    # re.split with a group alternates text and digits, starting with text: the parts compare alike.
    parts = _NUMBERS.split(name.casefold())
    return known, [int(part) if index % 2 else part for index, part in enumerate(parts)]


@dataclass(frozen=True)
class WorkloadFilters:
    # A source's slug (``UnknownSource`` if there is none): the workloads it is the origin of or
    # published runs of (``of_source``); with ``measured``, measured on the GPU by it.
    source: str | None = None
    collection: str | None = None
    tag: str | None = None
    model: str | None = None  # an origin model's name or slug
    gpu: str | None = None  # a GPU slug (``UnknownGpu`` if none): figures on it, measured workloads first
    q: str | None = None  # a substring of the slug, title, origin model or description
    measured: bool | None = None  # with ``gpu``: True, only those with a run on it; False, only those without

    def __post_init__(self) -> None:
        if self.measured is not None and not self.gpu:
            raise MeasuredWithoutGpu()


# Filtered by GPU (and not by measured or not), measured workloads sort first.
MEASURED_FIRST = SortKey("measured", int, descending=True)


def workload_sort_keys(sort: str, filters: WorkloadFilters) -> tuple[SortKey, ...]:
    """The sort keys of a listing: those of ``sort``, after measured-first when filtered by GPU alone."""
    keys = WORKLOAD_SORTS[sort]
    return (MEASURED_FIRST, *keys) if filters.gpu and filters.measured is None else keys


def _on_gpu(gpu: str | None) -> list[ColumnElement[bool]]:
    """The condition that keeps a GPU's runs, or none for every GPU."""
    if gpu is None:
        return []
    return [Run.environment_id.in_(select(Environment.id).where(Environment.gpu_slug == gpu))]


def _last_record_subquery(ids: Sequence[int] | None = None, gpu: str | None = None) -> Any:
    """Per workload, when the #1 of one of its groups (on ``gpu``, given one) last changed.

    The last record of a group is set by its current #1: the fastest eligible run, the
    earliest observed among equals (the rule of ``ranking.record_history``). A group is
    of one environment, so of one GPU.
    """
    scope = [eligible(), *_on_gpu(gpu)] + ([Run.workload_id.in_(ids)] if ids is not None else [])
    best = (
        select(Run.workload_id, Run.comparison_key, func.min(Run.latency_ns).label("best"))
        .where(*scope)
        .group_by(Run.workload_id, Run.comparison_key)
        .subquery()
    )
    holder = (
        select(best.c.workload_id, func.min(Run.observed_at).label("at"))
        .join(
            Run,
            and_(
                Run.workload_id == best.c.workload_id,
                Run.comparison_key == best.c.comparison_key,
                Run.latency_ns == best.c.best,
            ),
        )
        .where(eligible())
        .group_by(best.c.workload_id, best.c.comparison_key)
        .subquery()
    )
    return select(holder.c.workload_id, func.max(holder.c.at).label("at")).group_by(holder.c.workload_id).subquery()


def _measured_on(gpu: str, producer: int | None = None) -> ColumnElement[bool]:
    """Whether a workload has a run on ``gpu`` (one that ``producer`` published, given one).
    EXISTS, not IN: SQLite then walks a workload index and probes the tallies, where IN looked
    up every measured workload's (large) row."""
    if producer is not None:
        return (
            select(WorkloadSourceTally.workload_id)
            .where(
                WorkloadSourceTally.workload_id == Workload.id,
                WorkloadSourceTally.source_id == producer,
                WorkloadSourceTally.gpu_slug == gpu,
            )
            .exists()
        )
    # A key column, not "*": SQLite then reads the tallies' key index alone.
    return (
        select(WorkloadTally.workload_id)
        .where(WorkloadTally.workload_id == Workload.id, WorkloadTally.gpu_slug == gpu)
        .exists()
    )


def of_source(source_id: int) -> ColumnElement[bool]:
    """Whether a workload comes from the source (its origin) or the source published a run of it
    (its producer): the registry's reruns have no workloads of their own, only runs."""
    produced = select(WorkloadSourceTally.workload_id).where(
        WorkloadSourceTally.source_id == source_id, WorkloadSourceTally.gpu_slug == EVERY_GPU
    )
    return or_(Workload.source_id == source_id, Workload.id.in_(produced))


def workload_conditions(session: Session, filters: WorkloadFilters) -> list[ColumnElement[bool]]:
    """The WHERE conditions on ``Workload`` of ``filters`` (``UnknownSource``, ``UnknownGpu``)."""
    conditions: list[ColumnElement[bool]] = []
    producer = source_named(session, filters.source).id if filters.source else None
    if producer is not None:
        conditions.append(of_source(producer))
    if filters.collection:
        conditions.append(func.lower(Workload.collection) == filters.collection.lower())
    if filters.tag:
        # Tags are a JSON list of strings: match one quoted element of its text.
        conditions.append(contains(cast(Workload.tags, Text), json.dumps(filters.tag.lower())))
    if filters.model:
        conditions.append(Workload.origin_model.in_(origin_model_spellings(session, slugify(filters.model))))
    if filters.gpu:
        # Filtered by source too, measured there means measured by it: runs are credited to their producer.
        measured = _measured_on(gpu_named(session, filters.gpu), producer)
        # An older revision nobody measured there is no gap: its current revision is the one to measure.
        current = Workload.superseded_by_id.is_(None)
        if filters.measured is None:
            conditions.append(or_(current, measured))
        else:
            conditions.append(measured if filters.measured else and_(~measured, current))
    if filters.q:
        conditions.append(
            or_(
                contains(Workload.name, filters.q),
                contains(Workload.title, filters.q),
                contains(func.coalesce(Workload.origin_model, ""), filters.q),
                contains(Workload.description, filters.q),
            )
        )
    return conditions


def _listing(session: Session, filters: WorkloadFilters, sort: str) -> tuple[Select[Any], dict[str, Expr]]:
    """The SELECT of the matching workloads and the expressions their sort keys name."""
    gpu = gpu_named(session, filters.gpu) if filters.gpu else None
    stmt = select(Workload).where(*workload_conditions(session, filters))
    exprs: dict[str, Expr] = {"name": Workload.name}
    if sort in ("runs", "-runs", "best_sol"):
        stats = eligible_stats(gpu=gpu)
        stmt = stmt.outerjoin(stats, stats.c.workload_id == Workload.id)
        exprs["runs"] = func.coalesce(stats.c.runs, 0)
        exprs["best_sol"] = stats.c.best_sol
    elif sort == "last_record":
        last = _last_record_subquery(gpu=gpu)
        stmt = stmt.outerjoin(last, last.c.workload_id == Workload.id)
        exprs["last_record"] = last.c.at
    if gpu and filters.measured is None:
        on_gpu = runs_on_gpu(gpu)
        stmt = stmt.outerjoin(on_gpu, on_gpu.c.workload_id == Workload.id)
        exprs["measured"] = case((on_gpu.c.runs.is_not(None), 1), else_=0)
    return stmt, exprs


def list_workloads(
    session: Session, filters: WorkloadFilters, sort: str, after: Position | None, limit: int
) -> tuple[list[WorkloadItem], Position | None]:
    """One page after a position (the API's cursor), and the position the next page starts after."""
    stmt, exprs = _listing(session, filters, sort)
    rows, position = keyset_page(session, stmt, workload_sort_keys(sort, filters), exprs, after, limit)
    return workload_items(session, [row[0] for row in rows], gpu=_gpu_of(session, filters)), position


def workloads_page(
    session: Session, filters: WorkloadFilters, sort: str, number: int, size: int
) -> tuple[list[WorkloadItem], int]:
    """Page ``number`` (from 1) of ``size`` for the HTML list and its twin, and how many match in all.

    The same listing as ``list_workloads``, paged by number because a page says "page 2 of 5".
    """
    stmt, exprs = _listing(session, filters, sort)
    keys = workload_sort_keys(sort, filters)
    rows, total = numbered_page(session, stmt, keys, exprs, (number - 1) * size, size)
    return workload_items(session, [row[0] for row in rows], gpu=_gpu_of(session, filters)), total


def _gpu_of(session: Session, filters: WorkloadFilters) -> str | None:
    return gpu_named(session, filters.gpu) if filters.gpu else None


@dataclass(frozen=True)
class GpuCoverage:
    """Of the workloads a GPU filter's other filters match, those measured on the GPU and those not."""

    gpu: str
    measured: int
    not_measured: int


def gpu_coverage(session: Session, filters: WorkloadFilters) -> GpuCoverage:
    """How many of the workloads matching ``filters`` (their ``measured`` aside) have a run on
    ``filters.gpu`` and how many have none: the counts of the measured / not measured choice.
    An older revision with no run there is no gap (``workload_conditions``): it is not counted."""
    if not filters.gpu:
        raise MeasuredWithoutGpu()
    gpu = gpu_named(session, filters.gpu)
    # IN, not EXISTS: summed over every workload, one list of the GPU's beats a probe per workload.
    on_gpu: Any = select(runs_on_gpu(gpu).c.workload_id)
    if filters.source:  # measured there by the source itself (``_measured_on``)
        on_gpu = select(WorkloadSourceTally.workload_id).where(
            WorkloadSourceTally.source_id == source_named(session, filters.source).id,
            WorkloadSourceTally.gpu_slug == gpu,
        )
    measured = case((Workload.id.in_(on_gpu), 1), else_=0)
    gap = case((and_(Workload.superseded_by_id.is_(None), Workload.id.not_in(on_gpu)), 1), else_=0)
    conditions = workload_conditions(session, replace(filters, measured=None))
    count, gaps = session.execute(
        select(func.coalesce(func.sum(measured), 0), func.coalesce(func.sum(gap), 0))
        .select_from(Workload)
        .where(*conditions)
    ).one()
    return GpuCoverage(gpu=gpu, measured=int(count), not_measured=int(gaps))


@dataclass(frozen=True)
class CollectionGroup:
    name: str
    workload_count: int
    measured_on_gpu: int | None  # given a GPU, how many of its workloads have runs on it
    busiest: list[WorkloadItem]  # its most measured workloads, with their figures, by slug


@dataclass(frozen=True)
class SourceGroup:
    """A source's workloads, by collection, with the facts its figures are shown beside."""

    slug: str
    name: str
    website: str
    licence: str
    attribution: str
    workload_count: int
    eligible_runs: int
    collections: list[CollectionGroup]


def catalogue_by_source(session: Session, gpu: str | None = None) -> list[SourceGroup]:
    """The whole catalogue counted (on ``gpu``, given one: ``UnknownGpu`` if there is no such
    GPU), by source (by name) then collection (``collection_order``), with the figures of each
    collection's ``BUSIEST_KEPT`` most measured workloads (``ranking.most_measured_first``).

    Read from the collection tallies (a row per collection, and per GPU it has runs on); only
    the workloads shown are read with their figures. Sources with no workloads of their own
    (controlled reruns measure other sources' workloads) have no group.
    """
    gpu = gpu_named(session, gpu) if gpu else None
    chosen_gpus = [EVERY_GPU] if gpu is None else [EVERY_GPU, gpu]
    tallies: dict[str, dict[tuple[int, str], CollectionTally]] = {slug: {} for slug in chosen_gpus}
    for row in session.scalars(select(CollectionTally).where(CollectionTally.gpu_slug.in_(chosen_gpus))):
        tallies[row.gpu_slug][row.source_id, row.collection] = row
    every = tallies[EVERY_GPU]
    on_gpu = tallies[gpu] if gpu is not None else every

    def busiest_ids(key: tuple[int, str]) -> list[int]:
        # A collection with no run on the GPU has no row for it: its workloads rank by name.
        row = on_gpu.get(key)
        return list(row.busiest) if row is not None else list(every[key].first_by_name or ())

    chosen = sorted({workload_id for key in every for workload_id in busiest_ids(key)})
    # Their columns, not their manifests (a sweep's lists every case), which home does not show.
    shown = select(Workload).options(defer(Workload.manifest_json)).where(Workload.id.in_(chosen))
    shown_workloads = list(session.scalars(shown))
    # An older revision shown beside its current one gives way to it (the current is preferred).
    ids = {workload.id for workload in shown_workloads}
    shown_workloads = [w for w in shown_workloads if w.superseded_by_id is None or w.superseded_by_id not in ids]
    items = workload_items(session, shown_workloads, gpu=gpu, last_records=False, ties=False)  # home shows none
    busiest: dict[tuple[int, str], list[WorkloadItem]] = {}
    for workload, item in zip(shown_workloads, items, strict=True):
        busiest.setdefault((workload.source_id, workload.collection), []).append(item)

    def on_gpu_counts(key: tuple[int, str]) -> tuple[int, int]:
        """(eligible runs, measured workloads) of a collection on the chosen GPU (on every GPU without)."""
        row = on_gpu.get(key)
        return (row.eligible_runs, row.measured) if row is not None else (0, 0)

    groups = []
    for source in sorted(session.scalars(select(Source)), key=lambda s: (s.name.casefold(), s.slug)):
        names = sorted((name for source_id, name in every if source_id == source.id), key=collection_order)
        if not names:
            continue
        groups.append(
            SourceGroup(
                slug=source.slug,
                name=source.name,
                website=source.url,
                licence=source.licence,
                attribution=source.attribution,
                workload_count=sum(every[source.id, name].workloads for name in names),
                eligible_runs=sum(on_gpu_counts((source.id, name))[0] for name in names),
                collections=[
                    CollectionGroup(
                        name=name,
                        workload_count=every[source.id, name].workloads,
                        measured_on_gpu=None if gpu is None else on_gpu_counts((source.id, name))[1],
                        busiest=sorted(busiest.get((source.id, name), []), key=lambda item: item.slug),
                    )
                    for name in names
                ],
            )
        )
    return groups


# Made once: an alias builds a proxy of each of the table's columns.
_MEMBER, _EQUAL = aliased(Run), aliased(Run)


def _last_records(session: Session, ids: Sequence[int], gpu: str | None) -> dict[int, datetime]:
    """When each of these workloads last had a record set (on ``gpu``, given one): the latest of
    the moments its comparison groups' current leaders set theirs (``ranking.record_history``),
    each the earliest observed of the group's eligible runs as fast as the leader.

    Each group's leader is found through the leaderboard index, walked fastest first and stopped
    at the first eligible run, so the cost follows the groups, not their runs."""
    if not ids:
        return {}
    groups = (
        select(Run.workload_id, Run.comparison_key)
        .where(Run.workload_id.in_(sorted(ids)), *_on_gpu(gpu))
        .distinct()
        .subquery()
    )
    member = _MEMBER
    holder = (
        select(member.id)
        .where(
            member.workload_id == groups.c.workload_id,
            member.comparison_key == groups.c.comparison_key,
            eligible(member),
        )
        .order_by(member.latency_ns, member.name)
        .limit(1)
        .scalar_subquery()
    )
    holders = select(groups.c.workload_id, groups.c.comparison_key, holder.label("run_id")).subquery()
    equal = _EQUAL
    set_at = (
        select(func.min(equal.observed_at))
        .where(
            equal.workload_id == Run.workload_id,
            equal.comparison_key == Run.comparison_key,
            equal.latency_ns == Run.latency_ns,
            eligible(equal),
        )
        .scalar_subquery()
    )
    rows = session.execute(
        select(Run.workload_id, func.max(set_at)).join(holders, Run.id == holders.c.run_id).group_by(Run.workload_id)
    )
    return {workload_id: latest for workload_id, latest in rows}


@dataclass(frozen=True)
class Headline:
    """A headline run (a tally's ``fastest_run_id``) as the lists show it."""

    workload_id: int
    comparison_key: str
    fastest: FastestRun
    availability: str  # ``availability_text`` of its implementation


def headlines(session: Session, run_ids: Sequence[int], ties: bool = True) -> list[Headline]:
    """These runs as the lists show them, read as columns: loaded as objects with their
    implementations and environments they took 9.6 ms of home's 57 on PostgreSQL, of which 4 ms
    was the statement. The manifests of the run and its implementation, the largest parts of
    their rows, are not read."""
    if not run_ids:
        return []
    rows = session.execute(
        select(
            Run.workload_id,
            Run.comparison_key,
            Run.name,
            Run.latency_ns,
            Run.primary_statistic,
            Run.sol_score,
            Run.observed_at,
            Run.evidence,
            Implementation.project_slug,
            Implementation.project,
            Implementation.license,
            Implementation.source_available,
            Implementation.has_install_recipe,
            Environment.gpu_slug,
            Environment.gpu_product,
            Environment.name.label("environment_name"),
            Environment.title.label("environment_title"),
            Environment.digest.label("environment_digest"),
            Environment.manifest_json.label("environment_manifest"),
        )
        .join(Implementation, Implementation.id == Run.implementation_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(Run.id.in_(sorted(run_ids)))
    )
    found_rows = rows.all()
    # Each a #1: whether the noise lets it be told from the runs after it (one statement for all).
    spans = rank_spans(session, [row.name for row in found_rows]) if ties else {}
    found = []
    for row in found_rows:
        environment = StoredText(row.environment_digest, row.environment_manifest)
        fastest = FastestRun(
            **best_fields(spans.get(row.name)),
            run=row.name,
            latency_ns=row.latency_ns,
            primary_statistic=row.primary_statistic,
            sol_score=row.sol_score,
            implementation=row.project_slug,
            project=row.project,
            observed_at=row.observed_at,
            gpu=row.gpu_slug,
            gpu_product=row.gpu_product,
            environment=row.environment_name,
            environment_title=row.environment_title,
            environment_label=environment_label(environment),
            stack=evaluation_stack(environment),
            evidence=row.evidence,
            comparison_key=row.comparison_key,
        )
        availability = availability_text(row.license, row.source_available, row.has_install_recipe)
        found.append(Headline(row.workload_id, row.comparison_key, fastest, availability))
    return found


def workload_items(
    session: Session,
    workloads: Sequence[Workload],
    gpu: str | None = None,
    last_records: bool = True,
    ties: bool = True,
) -> list[WorkloadItem]:
    """``workloads`` with their figures, in the order given.

    Given a GPU slug (one ``gpu_named`` accepted), the figures are of the runs on that GPU
    alone, and each item says how many runs it has there (0: not measured on it). Without
    ``last_records`` each item's ``last_record_at`` is left out (None), for a list that does
    not show it: finding it walks every comparison group of the workloads. Without ``ties`` the
    fastest run's rank range is left out too, for a list that does not show it (home).
    """
    ids = [w.id for w in workloads]
    stats = {row.workload_id: row for row in session.execute(select(eligible_stats(ids, gpu)))}
    last = _last_records(session, ids, gpu) if last_records else {}
    ids_of_headlines = [row.fastest_run_id for row in stats.values() if row.fastest_run_id is not None]
    fastest = {headline.workload_id: headline.fastest for headline in headlines(session, ids_of_headlines, ties)}
    on_gpu: dict[int, int] = {}
    if gpu is not None:
        counted = runs_on_gpu(gpu, ids)
        on_gpu = {row.workload_id: row.runs for row in session.execute(select(counted))}
    source_slugs = dict(session.execute(select(Source.id, Source.slug)).all())
    items = []
    for workload in workloads:
        figures = stats.get(workload.id)
        items.append(
            WorkloadItem(
                slug=workload.name,
                title=workload.title,
                source_slug=source_slugs[workload.source_id],
                collection=workload.collection,
                tags=[str(tag) for tag in workload.tags],
                origin_model=workload.origin_model,
                model_slug=slugify(workload.origin_model) if workload.origin_model else None,
                case_count=workload.case_count,
                eligible_runs=figures.runs if figures else 0,
                best_sol_score=figures.best_sol if figures else None,
                fastest=fastest.get(workload.id),
                last_record_at=last.get(workload.id),
                gpu=gpu,
                runs_on_gpu=on_gpu.get(workload.id, 0) if gpu is not None else None,
                digest=workload.digest,
                # Filtered by GPU, the link keeps it: the leaderboard opens on the group of its best there.
                url=urls.workload_on(
                    workload.name, best.comparison_key if gpu and (best := fastest.get(workload.id)) else None
                ),
                api_url=urls.api_workload(workload.name),
            )
        )
    return items


@dataclass(frozen=True)
class CollectionFacet:
    name: str
    count: int


@dataclass(frozen=True)
class SourceFacet:
    """A source with its number of workloads, and its collections with theirs."""

    slug: str
    name: str
    count: int
    collections: list[CollectionFacet]


def source_facets(session: Session, source_id: int | None = None) -> list[SourceFacet]:
    """Every source that has workloads (only ``source_id``'s, given one), by name, with its
    collections in ``collection_order``: what the source and collection filters can take."""
    counted = select(Workload.source_id, Workload.collection, func.count()).group_by(
        Workload.source_id, Workload.collection
    )
    if source_id is not None:
        counted = counted.where(Workload.source_id == source_id)
    collections: dict[int, list[CollectionFacet]] = {}
    for owner, collection, count in session.execute(counted):
        collections.setdefault(owner, []).append(CollectionFacet(collection, count))
    sources = session.scalars(select(Source).where(Source.id.in_(list(collections))))
    facets = [
        SourceFacet(
            slug=source.slug,
            name=source.name,
            count=sum(facet.count for facet in collections[source.id]),
            collections=sorted(collections[source.id], key=lambda facet: collection_order(facet.name)),
        )
        for source in sources
    ]
    return sorted(facets, key=lambda facet: (facet.name.casefold(), facet.slug))


def _tag_lists(session: Session) -> Select[str]:
    """Each distinct tag list once, as JSON text, read from an index: workloads of one table or
    suite share theirs, and reading every workload's row took most of a GPU page's time at
    17,000 workloads. SQLite reads ``ix_workload_tags`` through; PostgreSQL, which cannot skip
    along an index by itself, steps from each list to the next along ``ix_workload_tags_text``
    (427 steps on the AIConfigurator catalogue: 2.2 ms, against 15.5 ms for a DISTINCT)."""
    as_text = cast(Workload.tags, Text)
    if session.get_bind().dialect.name != "postgresql":
        return select(as_text).distinct()
    first = select(func.min(as_text).label("tags")).cte("tag_lists", recursive=True)
    following = select(func.min(as_text)).where(as_text > first.c.tags).scalar_subquery()
    lists = first.union_all(select(following).where(first.c.tags.is_not(None)))
    return select(lists.c.tags).where(lists.c.tags.is_not(None))


def facet_values(session: Session) -> dict[str, list[str]]:
    """The values the tag and origin model filters can take, for the filter form (GPUs: ``gpu_choices``)."""
    models = sorted({m for m in session.scalars(select(Workload.origin_model).distinct()) if m}, key=str.casefold)
    tags = sorted({tag for text in session.scalars(_tag_lists(session)) for tag in json.loads(text)})
    return {"model": models, "tag": tags}


def workloads_on_gpu(session: Session, slugs: Sequence[str], gpu: str) -> dict[str, WorkloadItem]:
    """Slug → the workload with its figures on ``gpu`` (``workload_items``, without its last record), for those
    of ``slugs`` that exist.
    ``gpu`` is a slug ``gpu_named`` has already checked: the callers refuse an unknown GPU before searching."""
    # Their columns, not their manifests, and no last records: search shows each hit's best on the GPU.
    chosen = select(Workload).options(defer(Workload.manifest_json)).where(Workload.name.in_(list(slugs)))
    workloads = session.scalars(chosen).all()
    return {item.slug: item for item in workload_items(session, workloads, gpu=gpu, last_records=False)}


def find_workload(session: Session, ref: str) -> Workload | None:
    """By slug, current digest or any earlier digest."""
    name = name_by_ref(session, Workload, "WorkloadSuite", ref)
    if name is None:
        return None
    return session.scalar(select(Workload).where(Workload.name == name).options(joinedload(Workload.source)))
