"""Planner statistics after a bulk ingest (``kernelindex.store.planner``)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text

from kernelindex.db.tables import Run
from kernelindex.ingest import runner
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.settings import Settings
from kernelindex.store import planner


def test_statistics_are_gathered_after_a_bulk_write_on_postgresql_only(loaded_db) -> None:
    with loaded_db.sessions() as session:
        assert not planner.gather_statistics_after_bulk_write(session, planner.BULK_RUNS - 1)
        gathered = planner.gather_statistics_after_bulk_write(session, planner.BULK_RUNS)
        assert gathered == (loaded_db.backend == "postgresql")
        if gathered:
            estimated = session.scalar(text("SELECT reltuples FROM pg_class WHERE relname = 'run'"))
            assert estimated == session.scalar(select(func.count(Run.id)))


def test_an_ingest_passes_the_runs_it_added(db, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def gather(session, runs_added: int) -> bool:
        seen.append(runs_added)
        return planner.gather_statistics_after_bulk_write(session, runs_added)

    monkeypatch.setattr(runner, "gather_statistics_after_bulk_write", gather)
    settings = Settings(database_url=db.url, github_token=None)
    summary = ingest(db.sessions, settings, "liger-kernel", snapshot=SOURCES["liger-kernel"].bundled)
    assert seen == [summary.counts["added"]["run"]] and seen[0] > 0
