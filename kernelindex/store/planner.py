"""Planner statistics and the visibility map after a bulk write.

PostgreSQL plans each query from the statistics ``ANALYZE`` gathers. Autovacuum gathers them
once about a tenth of a table has changed, some time later, and never where it is turned off;
until then a table filled by one ingest is planned as if it were empty. On the whole
AIConfigurator package (208,313 runs) ``/records`` took 500 ms planned that way (a sequential
scan of every run) and 12 ms after ``ANALYZE`` (the index, newest first), the home page 1.3 s
and 0.5 s.

An index-only scan reads the table too for every page the visibility map does not yet mark
all-visible, which only ``VACUUM`` marks: on the same catalogue, freshly ingested and analysed,
``/gpus/h200`` counted its runs per environment in 90 ms, and in 10 ms after ``VACUUM``. So a
bulk ingest, and a restore, ends with ``VACUUM (ANALYZE)``, outside its transaction (VACUUM cannot
run in one).

The same holds during the ingest itself: its tally recounts, one per transaction, were planned
from the statistics of a store a fraction of the size it had become. On the whole package the
workload tallies' recount took 200 ms a transaction so planned (sequential scans of every run),
against 32 ms on a store analysed at its size. ``GrowthStatistics`` therefore gathers the
statistics of the tables an ingest fills each time the store's runs have doubled, so that they
are never more than a factor of two behind; about eight times for a first load of 200,000 runs.

SQLite is left as it is: on the same catalogue its planner chose a slower plan for
``/gpus/{slug}`` with statistics (0.9 s) than without (0.4 s).
"""

from __future__ import annotations

from sqlalchemy import Engine, text

# Runs added by one ingest from which it vacuums and gathers the statistics itself.
BULK_RUNS = 10_000
# While an ingest writes, the statistics of the tables it fills are gathered again each time it has
# added as many runs as the store held when they were last gathered (and at least this many).
GROWTH_RUNS = 1_000
# The tables whose statistics an ingest's own statements (its tally recounts) are planned from.
GROWING_TABLES = ("run", "workload", "workload_tally", "workload_source_tally", "search_entry", "search_term")
_RUN_ESTIMATE = "SELECT reltuples FROM pg_class WHERE oid = 'run'::regclass"


def vacuum_after_bulk_write(engine: Engine, runs_added: int) -> bool:
    """``VACUUM (ANALYZE)`` the database on PostgreSQL after ``runs_added`` ≥ ``BULK_RUNS``, in a
    connection of its own (not in a transaction); True if it ran."""
    if runs_added < BULK_RUNS or engine.dialect.name != "postgresql":
        return False
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM (ANALYZE)"))
    return True


class GrowthStatistics:
    """Gathers PostgreSQL's statistics of ``GROWING_TABLES`` while an ingest writes, each time it
    has added as many runs as the store held when they were last gathered (``GROWTH_RUNS`` at
    least). Call ``after_commit`` with the runs added so far after each of its transactions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._postgresql = engine.dialect.name == "postgresql"
        self._size = 0  # runs in the store when the statistics were gathered (its estimate)
        self._added = 0  # runs this ingest had added then
        if self._postgresql:
            with engine.connect() as connection:
                estimate = connection.execute(text(_RUN_ESTIMATE)).scalar()
            self._size = max(0, int(estimate or 0))  # -1: never analysed

    def after_commit(self, runs_added: int) -> bool:
        """Gather the statistics if the store has grown enough since they were; True if it did."""
        grown = runs_added - self._added
        if not self._postgresql or grown < max(GROWTH_RUNS, self._size):
            return False
        with self._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("ANALYZE " + ", ".join(GROWING_TABLES)))
        self._size += grown
        self._added = runs_added
        return True
