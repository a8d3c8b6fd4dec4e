"""The leaderboard's figures as the database computes them (``store.standings``, read by
``store.leaderboards``), and a run's rank (``store.run_queries.run_standing``), agree with
``kernelindex.ranking`` applied to every run of the workload.

Random small catalogues with many ties (few latencies, few days), every kind of ineligible run,
two revisions of one implementation and an optional "as of" cutoff, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Environment, Implementation, Run, Workload
from kernelindex.manifests.types import RunStatus
from kernelindex.ranking import (
    RunFacts,
    default_group,
    fastest_reported,
    rank_group,
    rank_implementations,
    record_history,
)
from kernelindex.store.leaderboards import group_detail, leaderboard, load_views, ranked_rows
from kernelindex.store.run_queries import run_standing
from kernelindex.store.runs import run_facts

DAY0 = datetime(2026, 1, 1, tzinfo=UTC)
GROUPS = 3
PREFIX = "standings-"

REVIEW = {  # held_for_review, review_state
    "none": (False, None),
    "waiting": (True, None),
    "released": (False, "released"),
    "rejected": (True, "rejected"),
}

runs_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "group": st.integers(0, GROUPS - 1),
            # 0 and 1 are two revisions of one implementation (one title), 2 and 3 two others.
            "implementation": st.integers(0, 3),
            "latency_ns": st.integers(1, 6),
            "day": st.integers(0, 5),
            "status": st.sampled_from([RunStatus.PASSED] * 4 + [RunStatus.FAILED]),
            "withdrawn_day": st.one_of(st.none(), st.none(), st.integers(0, 6)),
            "upstream_withdrawn": st.sampled_from([False] * 5 + [True]),
            "review": st.sampled_from(["none"] * 4 + ["waiting", "released", "rejected"]),
            "sol_score": st.one_of(st.none(), st.floats(0.1, 0.9)),
            # An interval of latency ± spread, or none (unknown).
            "spread": st.one_of(st.none(), st.integers(0, 2)),
        }
    ),
    max_size=24,
)


def _setting(session: Session) -> dict[str, Any]:
    """A workload, three environments, four implementation rows (the first two one implementation
    in two revisions) and a run to copy the remaining columns from."""
    fewest = (
        select(Run.workload_id).group_by(Run.workload_id).order_by(func.count(), Run.workload_id).limit(1)
    ).scalar_subquery()
    workload = session.scalar(select(Workload).where(Workload.id == fewest))
    template = session.scalar(select(Run).where(Run.workload_id == workload.id).limit(1))
    environments = session.scalars(select(Environment).order_by(Environment.id).limit(GROUPS)).all()
    others = session.scalars(select(Implementation).order_by(Implementation.id).limit(2)).all()
    revision = session.scalar(select(Implementation).where(Implementation.name == f"{PREFIX}revision"))
    if revision is None:
        columns = {c.key: getattr(others[0], c.key) for c in Implementation.__table__.columns if c.key != "id"}
        revision = Implementation(**{**columns, "name": f"{PREFIX}revision", "revision": "another"})
        session.add(revision)
        session.flush()
    return {
        "workload": workload,
        "template": {c.key: getattr(template, c.key) for c in Run.__table__.columns if c.key != "id"},
        "environments": environments,
        "implementations": [others[0], revision, others[1], others[1]],
    }


def _add_runs(session: Session, setting: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    for index, spec in enumerate(runs):
        held, review = REVIEW[spec["review"]]
        withdrawn = spec["withdrawn_day"]
        # Any environment: the comparison key alone makes the group here.
        environment = setting["environments"][spec["group"] % len(setting["environments"])]
        session.add(
            Run(
                **{
                    **setting["template"],
                    "name": f"{PREFIX}{index}",
                    "external_id": None,
                    "environment_id": environment.id,
                    "implementation_id": setting["implementations"][spec["implementation"]].id,
                    "comparison_key": f"sha256:{spec['group']:064x}",
                    "latency_ns": spec["latency_ns"],
                    "observed_at": DAY0 + timedelta(days=spec["day"]),
                    "status": spec["status"],
                    "withdrawn_at": None if withdrawn is None else DAY0 + timedelta(days=withdrawn),
                    "upstream_withdrawn": spec["upstream_withdrawn"],
                    "held_for_review": held,
                    "review_state": review,
                    "sol_score": spec["sol_score"],
                    "spread_kind": None if spec["spread"] is None else "source-noise",
                    "spread_low_ns": None if spec["spread"] is None else spec["latency_ns"] - spec["spread"],
                    "spread_high_ns": None if spec["spread"] is None else spec["latency_ns"] + spec["spread"],
                }
            )
        )
    session.flush()


def _facts_as_of(session: Session, workload_id: int, before: datetime | None) -> list[RunFacts]:
    """Every run of the workload as ranking sees it, as it stood just before ``before``."""
    facts = [run_facts(run) for run in session.scalars(select(Run).where(Run.workload_id == workload_id))]
    if before is None:
        return facts
    withdrawn_later = {
        name
        for name, withdrawn_at in session.execute(
            select(Run.name, Run.withdrawn_at).where(Run.workload_id == workload_id, Run.withdrawn_at >= before)
        )
    }
    return [
        replace(fact, withdrawn=False) if fact.name in withdrawn_later else fact
        for fact in facts
        if fact.observed_at < before
    ]


def _check_agreement(session: Session, workload: Workload, before: datetime | None) -> None:
    facts = _facts_as_of(session, workload.id, before)
    board = leaderboard(session, workload, before=before)

    headline = fastest_reported(facts)
    assert (board.fastest.name if board.fastest else None) == (headline.name if headline else None)
    assert board.default_key == default_group(facts)

    by_key: dict[str, list[RunFacts]] = {}
    for fact in facts:
        by_key.setdefault(fact.comparison_key, []).append(fact)
    assert {group.key for group in board.groups} == set(by_key)
    for group in board.groups:
        members = by_key[group.key]
        ranked = rank_group(members)
        assert group.run_count == len(members)
        assert group.eligible_count == len(ranked)
        assert (group.record.name if group.record else None) == (ranked[0].run.name if ranked else None)
        assert group.tied_with_best == sum(1 for entry in ranked[1:] if not entry.distinct_from_best)
        if before is not None:
            continue  # the page is shown as it stands now; a citation reads only the figures above
        detail = group_detail(session, board, group, lines_read=1)
        assert [
            (entry.run.name, entry.rank, entry.vs_best, entry.rank_range, entry.distinct_from_best, count)
            for entry, count in detail.implementations
        ] == [
            (entry.run.name, entry.rank, entry.vs_best, entry.rank_range, entry.distinct_from_best, count)
            for entry, count in rank_implementations(ranked)
        ]
        # The figures the table of implementations is sorted by are those of the runs it then reads.
        load_views(session, board, detail, [entry.run.name for entry, _ in detail.implementations])
        for entry, _ in detail.implementations:
            view, line = detail.view(entry.run.name), detail.line(entry.run.name)
            expected = (line.project, line.sol_score, entry.run.observed_at)
            assert (view.project, view.sol_score, view.observed_at) == expected
        assert [(brk.run.name, brk.previous.name if brk.previous else None) for brk in detail.history] == [
            (brk.run.name, brk.previous.name if brk.previous else None) for brk in record_history(members)
        ]
        ranked_names = {entry.run.name for entry in ranked}
        assert [view.name for view in detail.ineligible] == sorted(
            (fact.name for fact in members if fact.name not in ranked_names),
            key=lambda name: (next(f.latency_ns for f in members if f.name == name), name),
        )
        rows = {run.name: run for run in session.scalars(select(Run).where(Run.comparison_key == group.key))}
        for fact in members:
            expected = next(((e.rank, e.vs_best) for e in ranked if e.run.name == fact.name), (None, None))
            standing = run_standing(session, rows[fact.name])
            assert (standing.rank, standing.vs_best, standing.group_size) == (*expected, len(ranked))
            entry = next((e for e in ranked if e.run.name == fact.name), None)
            found = (standing.span.rank_range, standing.span.distinct_from_best) if standing.span else None
            assert found == ((entry.rank_range, entry.distinct_from_best) if entry else None)
        table = ranked_rows(session, board, group, None, "rank", 0, len(members) + 1)
        assert table.total == len(ranked)
        assert [
            (view.name, entry.rank, entry.vs_best, entry.rank_range, entry.distinct_from_best)
            for view, entry in table.rows
        ] == [
            (entry.run.name, entry.rank, entry.vs_best, entry.rank_range, entry.distinct_from_best) for entry in ranked
        ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=runs_strategy, cutoff=st.one_of(st.none(), st.integers(0, 6)))
def test_the_database_figures_agree_with_ranking(loaded_db, runs, cutoff):
    with loaded_db.sessions() as session:
        setting = _setting(session)
        _add_runs(session, setting, runs)
        try:
            before = None if cutoff is None else DAY0 + timedelta(days=cutoff)
            _check_agreement(session, setting["workload"], before)
        finally:
            session.execute(delete(Run).where(Run.name.like(f"{PREFIX}%")))
            session.expire_all()
