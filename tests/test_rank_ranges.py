"""Rank ranges, ties and records on a leaderboard, from groups of known spreads written to the store
(SQLite and PostgreSQL), as the page's JSON twin and the record history give them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.db.tables import Run, Workload
from kernelindex.store.records import workload_records

DAY0 = datetime(2026, 3, 1, tzinfo=UTC)
KEY = "sha256:" + "ab" * 32


def _group(loaded_db: Any, runs: list[tuple[int, float | None]]) -> str:
    """A new comparison group in the workload with the fewest runs: one run per (latency in ns,
    spread as a fraction or None for unknown), observed a day apart in that order. Returns the slug."""
    with loaded_db.sessions.begin() as session:
        fewest = (
            select(Run.workload_id).group_by(Run.workload_id).order_by(func.count(), Run.workload_id).limit(1)
        ).scalar_subquery()
        workload = session.scalar(select(Workload).where(Workload.id == fewest))
        template = session.scalar(select(Run).where(Run.workload_id == workload.id).limit(1))
        columns = {c.key: getattr(template, c.key) for c in Run.__table__.columns if c.key != "id"}
        for index, (latency, spread) in enumerate(runs):
            session.add(
                Run(
                    **{
                        **columns,
                        "name": f"spread-test-{index}",
                        "external_id": None,
                        "comparison_key": KEY,
                        "latency_ns": latency,
                        "observed_at": DAY0 + timedelta(days=index),
                        "withdrawn_at": None,
                        "held_for_review": False,
                        "review_state": None,
                        "upstream_withdrawn": False,
                        "spread_kind": None if spread is None else "source-noise",
                        "spread_low_ns": None if spread is None else round(latency * (1 - spread)),
                        "spread_high_ns": None if spread is None else round(latency * (1 + spread)),
                    }
                )
            )
        return workload.name


def _board(make_app: Any, loaded_db: Any, slug: str) -> dict[str, Any]:
    with TestClient(make_app(loaded_db, response_cache_mb=0)) as client:
        response = client.get(f"/workloads/{slug}.json", params={"group": KEY[7:23], "runs": "all"})
    assert response.status_code == 200, response.text
    return response.json()


def _ranks(board: dict[str, Any]) -> list[tuple[str, list[int], str, bool, str | None]]:
    return [
        (
            row["name"],
            row["rankRange"],
            row["rankText"],
            row["distinctFromBest"],
            row["uncertainty"]["kind"] if row["uncertainty"] else None,
        )
        for row in board["ranked"]
    ]


def _tab(board: dict[str, Any]) -> dict[str, Any]:
    return next(group for group in board["groups"] if group["key"] == KEY)


def test_a_clear_winner_is_alone_at_one(loaded_db, make_app):
    slug = _group(loaded_db, [(100_000, 0.02), (150_000, 0.02), (200_000, 0.02)])
    board = _board(make_app, loaded_db, slug)
    assert _ranks(board) == [
        ("spread-test-0", [1, 1], "1", False, "source-noise"),
        ("spread-test-1", [2, 2], "2", True, "source-noise"),
        ("spread-test-2", [3, 3], "3", True, "source-noise"),
    ]
    assert board["ranked"][0]["uncertainty"]["low"] == 98_000
    assert board["intervalColumn"] is True  # the page shows each row's interval in its own column
    assert (_tab(board)["bestHeadline"], _tab(board)["tiedWithBest"]) == ("#1", 0)


def test_a_three_way_tie_at_the_top_is_said_in_the_headline(loaded_db, make_app):
    slug = _group(loaded_db, [(106_000, 0.05), (100_000, 0.05), (103_000, 0.05), (200_000, 0.05)])
    board = _board(make_app, loaded_db, slug)
    assert _ranks(board) == [
        ("spread-test-1", [1, 3], "=1", False, "source-noise"),
        ("spread-test-2", [1, 3], "=1", False, "source-noise"),
        ("spread-test-0", [1, 3], "=1", False, "source-noise"),
        ("spread-test-3", [4, 4], "4", True, "source-noise"),
    ]
    assert (_tab(board)["bestHeadline"], _tab(board)["tiedWithBest"]) == ("#1, tied with 2", 2)
    # Each row's place by its figure lies within its range.
    for place, row in enumerate(board["ranked"], start=1):
        assert row["rankRange"][0] <= row["rank"] <= place <= row["rankRange"][1]


def test_unknown_spread_ranks_as_before_and_is_marked(loaded_db, make_app):
    slug = _group(loaded_db, [(100_000, None), (101_000, None), (150_000, 0.5)])
    board = _board(make_app, loaded_db, slug)
    assert _ranks(board) == [
        ("spread-test-0", [1, 2], "1–2", False, None),
        ("spread-test-1", [2, 3], "2–3", True, None),
        ("spread-test-2", [1, 3], "1–3", False, "source-noise"),
    ]
    assert [row["rank"] for row in board["ranked"]] == [1, 2, 3]
    assert _tab(board)["bestHeadline"] == "#1, tied with 1"


@pytest.mark.parametrize(
    ("spread", "records"),
    [(None, ["spread-test-0", "spread-test-1", "spread-test-2"]), (0.05, ["spread-test-0", "spread-test-2"])],
)
def test_a_record_inside_the_noise_is_not_counted(loaded_db, make_app, spread, records):
    # The second run is 3 % faster than the first: a record only where the spread is unknown.
    slug = _group(loaded_db, [(100_000, spread), (97_000, spread), (80_000, spread)])
    board = _board(make_app, loaded_db, slug)
    assert [entry["run"] for entry in reversed(board["history"])] == records
    with loaded_db.sessions() as session:
        workload_id = session.scalar(select(Workload.id).where(Workload.name == slug))
        found = [entry for entry in workload_records(session, workload_id) if entry.comparison_key == KEY]
    assert [entry.run_name for entry in reversed(found)] == records
    assert found[0].previous_run_name == records[-2]
