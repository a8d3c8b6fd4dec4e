"""What the API's queries share: ranks in SQL, lookups by digest, manifest history, the #1s."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session, aliased

from kernelindex import urls
from kernelindex.db.tables import Environment, ManifestVersion, Run, Source
from kernelindex.manifests import ManifestError
from kernelindex.store.keyset import Expr
from kernelindex.store.manifests import run_manifest
from kernelindex.store.reads import eligible
from kernelindex.store.runs import with_references
from kernelindex.store.schemas import FigureChange, ManifestVersionItem, SourceRefItem, UncertaintyItem
from kernelindex.store.spreads import interval_high, interval_low, stored_uncertainty
from kernelindex.uncertainty import Uncertainty

# Made once: an alias builds a proxy of each of the table's columns.
_FASTER = aliased(Run)


def rank_expression() -> ColumnElement[int]:
    """1 + the number of strictly faster eligible runs of the same group: ranking.rank_group's rule."""
    faster = _FASTER
    return (
        select(func.count())
        .select_from(faster)
        .where(
            faster.workload_id == Run.workload_id,
            faster.comparison_key == Run.comparison_key,
            faster.latency_ns < Run.latency_ns,
            eligible(faster),
        )
        .correlate(Run)
        .scalar_subquery()
        + 1
    )


# Made once, like ``_FASTER``: the runs a rank range counts and the group's #1.
_OTHER, _BEST = aliased(Run), aliased(Run)


@dataclass(frozen=True)
class RankSpan:
    """A ranked run's place as a range given the intervals (``ranking.rank_group``'s rule, in SQL)."""

    rank_range: tuple[int, int]
    distinct_from_best: bool
    uncertainty: Uncertainty | None


def rank_spans(session: Session, names: Collection[str], before: datetime | None = None) -> dict[str, RankSpan]:
    """The rank range, distinctness from #1 and interval of each of these runs in its group, by run
    name, among the eligible runs observed before ``before`` (all, without it): lo = 1 + the runs
    entirely faster, hi = those not entirely slower; the #1 is the group's fastest (equal latencies
    by name). One statement; each count is two index ranges (``ix_run_spread_low``/``_high`` for
    runs with an interval, ``ix_run_leaderboard`` for those without)."""
    if not names:
        return {}
    other, best = _OTHER, _BEST

    def counted(*where: ColumnElement[bool]) -> Any:
        scope = [other.workload_id == Run.workload_id, other.comparison_key == Run.comparison_key]
        scope.append(eligible(other, as_of=before))
        if before is not None:
            scope.append(other.observed_at < before)
        return select(func.count()).select_from(other).where(*scope, *where).correlate(Run).scalar_subquery()

    low, high = interval_low(Run), interval_high(Run)
    faster = counted(other.spread_high_ns < low) + counted(other.spread_high_ns.is_(None), other.latency_ns < low)
    reach = counted(other.spread_low_ns <= high) + counted(other.spread_low_ns.is_(None), other.latency_ns <= high)
    best_scope = [best.workload_id == Run.workload_id, best.comparison_key == Run.comparison_key]
    best_scope.append(eligible(best, as_of=before))
    if before is not None:
        best_scope.append(best.observed_at < before)
    best_high = (
        select(interval_high(best)).where(*best_scope).order_by(best.latency_ns, best.name).limit(1).correlate(Run)
    )
    rows = session.execute(
        select(
            Run.name,
            faster,
            reach,
            low,
            best_high.scalar_subquery(),
            Run.spread_kind,
            Run.spread_low_ns,
            Run.spread_high_ns,
        ).where(Run.name.in_(sorted(names)))
    )
    return {
        row[0]: RankSpan(
            rank_range=(row[1] + 1, max(row[2], row[1] + 1)),
            distinct_from_best=row[4] is not None and row[3] > row[4],
            uncertainty=stored_uncertainty(row[5], row[6], row[7]),
        )
        for row in rows
    }


def rank_span_fields(span: RankSpan | None) -> dict[str, Any]:
    """The fields a ranked API item adds (``schemas.RankedRunItem``); all None where not ranked."""
    if span is None:
        return {"rank_range": None, "distinct_from_best": None, "uncertainty": None}
    found = span.uncertainty
    return {
        "rank_range": list(span.rank_range),
        "distinct_from_best": span.distinct_from_best,
        "uncertainty": None
        if found is None
        else UncertaintyItem(kind=found.kind, low=found.low_ns, high=found.high_ns),
    }


def best_fields(span: RankSpan | None) -> dict[str, Any]:
    """The fields a #1 adds (``schemas.GroupBest``): its range, how many it is tied with, its interval."""
    if span is None:
        return {}
    found = span.uncertainty
    return {
        "rank_range": list(span.rank_range),
        "tied_with": span.rank_range[1] - 1,
        "uncertainty": None
        if found is None
        else UncertaintyItem(kind=found.kind, low=found.low_ns, high=found.high_ns),
    }


def history(session: Session, kind: str, name: str) -> list[ManifestVersionItem]:
    """Every digest the record of ``kind`` named ``name`` has had, oldest first. For a run, each
    version after the first names the figures that changed from the one before: a figure the
    source changes is a new observation, kept beside the old (PRODUCT.md §3)."""
    versions = list(
        session.scalars(
            select(ManifestVersion)
            .where(ManifestVersion.kind == kind, ManifestVersion.name == name)
            .order_by(ManifestVersion.recorded_at, ManifestVersion.id)
        )
    )
    items = []
    for position, version in enumerate(versions):
        changes = []
        if kind == "BenchmarkRun" and position:
            changes = _figure_changes(versions[position - 1], version)
        items.append(
            ManifestVersionItem(
                digest=version.digest,
                recorded_at=version.recorded_at,
                superseded_at=version.superseded_at,
                figure_changes=changes,
            )
        )
    return items


def _figures(version: ManifestVersion) -> dict[str, int | float]:
    """A run version's figures by name: its latencies (``latencyNs.mean``) and numeric metrics."""
    try:
        spec = run_manifest(version).spec
    except ManifestError:
        return {}
    figures: dict[str, int | float] = {f"latencyNs.{key}": value for key, value in spec.timing.latency_ns.items()}
    native = spec.source_native
    for key, value in (native.metrics if native else {}).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            figures[key] = value
    return figures


def _figure_changes(earlier: ManifestVersion, later: ManifestVersion) -> list[FigureChange]:
    was, now = _figures(earlier), _figures(later)
    return [
        FigureChange(figure=name, was=was.get(name), now=now.get(name))
        for name in [*was, *(name for name in now if name not in was)]
        if was.get(name) != now.get(name)
    ]


def name_by_ref(session: Session, table: Any, kind: str, ref: str) -> str | None:
    """A record's name from its name, its current digest or any digest it has had."""
    if not ref.startswith("sha256:"):
        return ref
    name = session.scalar(select(table.name).where(table.digest == ref).order_by(table.name).limit(1))
    if name is None:
        name = session.scalar(
            select(ManifestVersion.name)
            .where(ManifestVersion.kind == kind, ManifestVersion.digest == ref)
            .order_by(ManifestVersion.name)
            .limit(1)
        )
    return name


def contains(expr: Expr, text: str) -> ColumnElement[bool]:
    """Case-insensitive substring match, alike on SQLite and PostgreSQL."""
    return func.lower(expr).contains(text.lower(), autoescape=True)


def source_ref(source: Source) -> SourceRefItem:
    return SourceRefItem(slug=source.slug, name=source.name, api_url=urls.api_source(source.slug))


def fastest_eligible_runs(session: Session, partition: Sequence[Expr], *conditions: ColumnElement[bool]) -> list[Run]:
    """The fastest eligible run of each ``partition`` (columns of ``Run`` or its ``Environment``).

    The rule of ``ranking.fastest_reported`` within each partition: equal latencies go by
    name. The database numbers the runs; only the winners are loaded, with their references.
    """
    position = func.row_number().over(partition_by=partition, order_by=(Run.latency_ns, Run.name))
    ranked = (
        select(Run.id, position.label("position"))
        # "+ 0": SQLite would otherwise walk every run of the GPU by ``ix_run_environment_id``
        # (20,000 on a large catalogue) rather than the few workloads' runs the conditions name.
        .join(Environment, Run.environment_id + 0 == Environment.id)
        .where(eligible(), *conditions)
        .subquery()
    )
    winners = with_references(select(Run)).where(Run.id.in_(select(ranked.c.id).where(ranked.c.position == 1)))
    return list(session.scalars(winners).unique())


def best_per_gpu(session: Session, *conditions: ColumnElement[bool]) -> dict[tuple[int, str], Run]:
    """The fastest eligible run of each (workload, GPU), across stacks and protocols."""
    runs = fastest_eligible_runs(session, (Run.workload_id, Environment.gpu_slug), *conditions)
    return {(run.workload_id, run.environment.gpu_slug): run for run in runs}


def group_sizes(session: Session, groups: Collection[tuple[int, str]]) -> dict[str, int]:
    """Comparison key → number of eligible runs, for these (workload id, comparison key)
    groups: the length of ``ranking.rank_group`` of each. A group with none is absent."""
    if not groups:
        return {}
    rows = session.execute(
        select(Run.comparison_key, func.count())
        .where(
            Run.workload_id.in_(sorted({workload_id for workload_id, _ in groups})),
            Run.comparison_key.in_(sorted({key for _, key in groups})),
            eligible(),
        )
        .group_by(Run.comparison_key)
    )
    return {key: count for key, count in rows}


def in_code_point_order(session: Session, column: Any) -> Any:
    """``column`` to ORDER BY as Python sorts strings (by code point), whatever the database's
    collation: SQLite's default already does; PostgreSQL's "C" collation does."""
    return column.collate("C") if session.get_bind().dialect.name == "postgresql" else column
