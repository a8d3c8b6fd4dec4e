"""A workload's comparison groups figured by the database (PRODUCT.md §5): how many runs each
group holds, each implementation revision's fastest eligible run, ranks and record setters.

A leaderboard reads these few rows and then loads in full only the runs it shows: what Python
loads and builds follows the page, while the database still reads the workload's rows (through
the leaderboard index) to count and number them. The rules are those of ``kernelindex.ranking``;
``tests/test_standings.py`` builds random catalogues and checks that both give the same
answers on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Subquery, case, func, or_, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Run
from kernelindex.ranking import GroupSize
from kernelindex.store.reads import eligible
from kernelindex.store.spreads import interval_high, interval_low, stored_uncertainty
from kernelindex.uncertainty import Uncertainty, distinct, rank_ranges, rank_texts


@dataclass(frozen=True)
class Scope:
    """The runs of one workload, as they stood just before ``before`` when it is given."""

    workload_id: int
    before: datetime | None = None

    def runs(self) -> list[ColumnElement[bool]]:
        clauses = [Run.workload_id == self.workload_id]
        if self.before is not None:
            clauses.append(Run.observed_at < self.before)
        return clauses

    def eligible(self) -> ColumnElement[bool]:
        return eligible(Run, as_of=self.before)


@dataclass(frozen=True)
class GroupCount:
    size: GroupSize
    eligible_runs: int
    first: str  # its record holder, or with no eligible run its fastest run (equal latencies by name)


def group_counts(session: Session, scope: Scope) -> list[GroupCount]:
    """Every comparison group of the workload with its runs and eligible runs counted, and its
    record holder: its fastest eligible run, equal latencies by name, as ``ranking.rank_group``
    orders them. One statement: each group's runs numbered eligible first, then fastest."""
    is_eligible = case((scope.eligible(), 1), else_=0)
    group = Run.comparison_key
    numbered = (
        select(
            Run.comparison_key,
            Run.name,
            func.count().over(partition_by=group).label("runs"),
            func.sum(is_eligible).over(partition_by=group).label("eligible_runs"),
            func.max(Run.observed_at).over(partition_by=group).label("last_observed_at"),
            func.row_number()
            .over(partition_by=group, order_by=(is_eligible.desc(), Run.latency_ns, Run.name))
            .label("nth"),
        )
        .where(*scope.runs())
        .subquery()
    )
    rows = session.execute(select(numbered).where(numbered.c.nth == 1))
    return [
        GroupCount(
            size=GroupSize(row.comparison_key, row.runs, row.last_observed_at),
            eligible_runs=int(row.eligible_runs),
            first=row.name,
        )
        for row in rows
    ]


@dataclass(frozen=True)
class RevisionBest:
    """One implementation revision's fastest eligible run in one group, and its eligible runs there."""

    name: str
    comparison_key: str
    implementation_id: int
    latency_ns: int
    observed_at: datetime
    sol_score: float | None
    ranked_runs: int
    uncertainty: Uncertainty | None = None


def revision_bests(session: Session, scope: Scope, comparison_key: str) -> list[RevisionBest]:
    """Each implementation revision's fastest eligible run in one group, fastest first; equal
    latencies go by name, as ``ranking.rank_group`` orders them."""
    partition = (Run.comparison_key, Run.implementation_id)
    where = [*scope.runs(), scope.eligible(), Run.comparison_key == comparison_key]
    ordered = (
        select(
            Run.name,
            Run.comparison_key,
            Run.implementation_id,
            Run.latency_ns,
            Run.observed_at,
            Run.sol_score,
            Run.spread_kind,
            Run.spread_low_ns,
            Run.spread_high_ns,
            func.count().over(partition_by=partition).label("ranked_runs"),
            func.row_number().over(partition_by=partition, order_by=(Run.latency_ns, Run.name)).label("nth"),
        )
        .where(*where)
        .subquery()
    )
    rows = session.execute(select(ordered).where(ordered.c.nth == 1).order_by(ordered.c.latency_ns, ordered.c.name))
    return [
        RevisionBest(
            name=row.name,
            comparison_key=row.comparison_key,
            implementation_id=row.implementation_id,
            latency_ns=row.latency_ns,
            observed_at=row.observed_at,
            sol_score=row.sol_score,
            ranked_runs=row.ranked_runs,
            uncertainty=stored_uncertainty(row.spread_kind, row.spread_low_ns, row.spread_high_ns),
        )
        for row in rows
    ]


@dataclass(frozen=True)
class GroupRange:
    """A ranked run's place as a range in its group (``ranking.rank_group``'s ranges, texts and
    distinctness from #1)."""

    rank_range: tuple[int, int]
    rank_text: str
    distinct_from_best: bool


def group_ranges(session: Session, scope: Scope, comparison_key: str) -> dict[str, GroupRange]:
    """Every eligible run of one group with its rank range, by name: one narrow read of the group's
    figures and intervals (a range depends on every run of the group, not only a page's)."""
    rows = session.execute(
        select(Run.name, interval_low(), interval_high())
        .where(*scope.runs(), scope.eligible(), Run.comparison_key == comparison_key)
        .order_by(Run.latency_ns, Run.name)
    ).all()
    if not rows:
        return {}
    intervals = [(low, high) for _, low, high in rows]
    ranges = rank_ranges(intervals)
    best = intervals[0]
    return {
        row[0]: GroupRange(span, text, distinct(best, interval))
        for row, interval, span, text in zip(rows, intervals, ranges, rank_texts(ranges), strict=True)
    }


def _ranked(scope: Scope, comparison_key: str, implementation_ids: Collection[int] | None) -> Subquery:
    """The eligible runs of one group with their rank (``ranking.rank_group``: equal latencies share
    a rank, the next skips), narrowed to some implementations after ranking."""
    ranked = (
        select(
            Run.name,
            Run.latency_ns,
            Run.observed_at,
            Run.sol_score,
            Run.implementation_id,
            func.rank().over(order_by=Run.latency_ns).label("rank"),
        )
        .where(*scope.runs(), Run.comparison_key == comparison_key, scope.eligible())
        .subquery()
    )
    if implementation_ids is None:
        return ranked
    return select(ranked).where(ranked.c.implementation_id.in_(sorted(implementation_ids))).subquery()


def _orders(ranked: Subquery, implementation_position: Mapping[int, int]) -> dict[str, list[Any]]:
    """The ranked table's sorts (``web.leaderboard.ROW_ORDERS``) in SQL."""
    by_rank = [ranked.c.rank, ranked.c.name]
    return {
        "rank": by_rank,
        "observed": [ranked.c.observed_at.desc(), ranked.c.name],
        "sol": [func.coalesce(ranked.c.sol_score, 0).desc(), ranked.c.name],
        "implementation": [
            case(implementation_position, value=ranked.c.implementation_id, else_=len(implementation_position)),
            *by_rank,
        ],
    }


@dataclass(frozen=True)
class RankedPage:
    """A page of a group's ranked runs, how many there are, and the middle latency of all."""

    entries: list[tuple[str, int]]  # run name, rank
    total: int
    median_latency_ns: float | None


def ranked_page(
    session: Session,
    scope: Scope,
    comparison_key: str,
    implementation_ids: Collection[int] | None,
    sort: str,
    offset: int,
    limit: int,
    implementation_position: Mapping[int, int] | None = None,
) -> RankedPage:
    """``limit`` ranked runs of a group from ``offset`` in the order ``sort`` names, ranked among
    every eligible run of the group and then narrowed to ``implementation_ids`` (all when
    ``None``); ``implementation_position`` orders implementations for ``sort="implementation"``."""
    ranked = _ranked(scope, comparison_key, implementation_ids)
    order = _orders(ranked, implementation_position or {})[sort]
    page = session.execute(select(ranked.c.name, ranked.c.rank).order_by(*order).offset(offset).limit(limit))
    total, positive = session.execute(
        select(func.count(), func.count(case((ranked.c.latency_ns > 0, 1)))).select_from(ranked)
    ).one()
    # ``web.format.latency_unit`` writes a column in the unit of its median positive latency.
    middle = session.scalars(
        select(ranked.c.latency_ns)
        .where(ranked.c.latency_ns > 0)
        .order_by(ranked.c.latency_ns)
        .offset(max(0, (positive - 1) // 2))
        .limit(2 - positive % 2)
    ).all()
    return RankedPage(
        entries=[(row.name, row.rank) for row in page],
        total=total,
        median_latency_ns=sum(middle) / len(middle) if middle else None,
    )


@dataclass(frozen=True)
class RecordSetter:
    name: str
    latency_ns: int
    observed_at: datetime


def record_setters(session: Session, scope: Scope, comparison_key: str) -> list[RecordSetter]:
    """The runs that set the group's record (``ranking.record_history``), oldest first: eligible
    runs whose interval lies entirely below the interval of every earlier eligible run of the group."""
    order = (Run.observed_at, Run.latency_ns, Run.name)
    walked = (
        select(
            Run.name,
            Run.latency_ns,
            Run.observed_at,
            interval_high().label("high"),
            func.min(interval_low()).over(order_by=order, rows=(None, -1)).label("lowest_before"),
        )
        .where(*scope.runs(), Run.comparison_key == comparison_key, scope.eligible())
        .subquery()
    )
    rows = session.execute(
        select(walked.c.name, walked.c.latency_ns, walked.c.observed_at)
        .where(or_(walked.c.lowest_before.is_(None), walked.c.high < walked.c.lowest_before))
        .order_by(walked.c.observed_at, walked.c.latency_ns, walked.c.name)
    )
    return [RecordSetter(*row) for row in rows]
