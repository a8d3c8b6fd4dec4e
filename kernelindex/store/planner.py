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

SQLite is left as it is: on the same catalogue its planner chose a slower plan for
``/gpus/{slug}`` with statistics (0.9 s) than without (0.4 s).
"""

from __future__ import annotations

from sqlalchemy import Engine, text

# Runs added by one ingest from which it vacuums and gathers the statistics itself.
BULK_RUNS = 10_000


def vacuum_after_bulk_write(engine: Engine, runs_added: int) -> bool:
    """``VACUUM (ANALYZE)`` the database on PostgreSQL after ``runs_added`` ≥ ``BULK_RUNS``, in a
    connection of its own (not in a transaction); True if it ran."""
    if runs_added < BULK_RUNS or engine.dialect.name != "postgresql":
        return False
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM (ANALYZE)"))
    return True
