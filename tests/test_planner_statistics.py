"""Planner statistics and the visibility map after a bulk ingest (``kernelindex.store.planner``)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text

from kernelindex.db.engine import make_engine
from kernelindex.db.tables import Run
from kernelindex.ingest import runner
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.settings import Settings
from kernelindex.store import planner


def test_a_bulk_write_is_vacuumed_and_analysed_on_postgresql_only(loaded_db) -> None:
    engine = make_engine(loaded_db.url)
    try:
        assert not planner.vacuum_after_bulk_write(engine, planner.BULK_RUNS - 1)
        vacuumed = planner.vacuum_after_bulk_write(engine, planner.BULK_RUNS)
        assert vacuumed == (loaded_db.backend == "postgresql")
        if vacuumed:
            with loaded_db.sessions() as session:
                estimated = session.scalar(text("SELECT reltuples FROM pg_class WHERE relname = 'run'"))
                assert estimated == session.scalar(select(func.count(Run.id)))
                last_vacuum = text("SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'run'")
                assert session.scalar(last_vacuum) is not None
    finally:
        engine.dispose()


def test_an_ingest_passes_the_runs_it_added(db, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def vacuum(engine, runs_added: int) -> bool:
        seen.append(runs_added)
        return planner.vacuum_after_bulk_write(engine, runs_added)

    monkeypatch.setattr(runner, "vacuum_after_bulk_write", vacuum)
    settings = Settings(database_url=db.url, github_token=None)
    summary = ingest(db.sessions, settings, "liger-kernel", snapshot=SOURCES["liger-kernel"].bundled)
    assert seen == [summary.counts["added"]["run"]] and seen[0] > 0


def test_statistics_are_gathered_each_time_the_store_doubles_while_an_ingest_writes(db) -> None:
    engine = make_engine(db.url)
    analyses = "SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'run'::regclass"
    try:
        if db.backend == "postgresql":  # the store may have been analysed before (a shared test database)
            with engine.connect() as connection:
                before = connection.execute(text(analyses)).scalar()
        statistics = planner.GrowthStatistics(engine)  # an empty store: from GROWTH_RUNS on
        first = planner.GROWTH_RUNS
        gathered = [statistics.after_commit(n) for n in (first - 1, first, 2 * first - 1, 2 * first, 3 * first)]
        if db.backend != "postgresql":
            assert gathered == [False] * 5
            return
        # Gathered at 1,000 runs (the store held none), then once 1,000 more were added (2,000 in
        # all), then not before 2,000 more.
        assert gathered == [False, True, False, True, False]
        with engine.connect() as connection:
            assert connection.execute(text(analyses)).scalar() == before + 2
    finally:
        engine.dispose()


def test_an_ingest_reports_its_runs_to_the_growth_statistics(db, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    original = planner.GrowthStatistics.after_commit

    def after_commit(self, runs_added: int) -> bool:
        seen.append(runs_added)
        return original(self, runs_added)

    monkeypatch.setattr(planner.GrowthStatistics, "after_commit", after_commit)
    settings = Settings(database_url=db.url, github_token=None)
    summary = ingest(db.sessions, settings, "liger-kernel", snapshot=SOURCES["liger-kernel"].bundled)
    assert seen and seen == sorted(seen) and seen[-1] == summary.counts["added"]["run"]


def test_the_web_apps_connections_run_pages_without_parallel_workers_or_jit(database_url) -> None:
    served, default = make_engine(database_url, serving=True), make_engine(database_url)
    try:
        if not database_url.startswith("postgresql"):
            return  # SQLite has neither
        with served.connect() as connection:
            assert connection.execute(text("SHOW max_parallel_workers_per_gather")).scalar() == "0"
            assert connection.execute(text("SHOW jit")).scalar() == "off"
        with default.connect() as connection:  # ingests keep the server's settings
            assert connection.execute(text("SHOW max_parallel_workers_per_gather")).scalar() != "0"
    finally:
        served.dispose()
        default.dispose()
