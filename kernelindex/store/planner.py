"""Planner statistics after a bulk write.

PostgreSQL plans each query from the statistics ``ANALYZE`` gathers. Autovacuum gathers them
once about a tenth of a table has changed, some time later, and never where it is turned off;
until then a table filled by one ingest is planned as if it were empty. On the whole
AIConfigurator package (208,313 runs) ``/records`` took 500 ms planned that way (a sequential
scan of every run) and 12 ms after ``ANALYZE`` (the index, newest first), the home page 1.3 s
and 0.5 s. SQLite is left as it is: on the same catalogue its planner chose a slower plan for
``/gpus/{slug}`` with statistics (0.9 s) than without (0.4 s).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

# Runs added by one ingest from which it gathers the statistics itself.
BULK_RUNS = 10_000


def gather_statistics_after_bulk_write(session: Session, runs_added: int) -> bool:
    """``ANALYZE`` the database on PostgreSQL after ``runs_added`` ≥ ``BULK_RUNS``; True if it ran."""
    if runs_added < BULK_RUNS or session.get_bind().dialect.name != "postgresql":
        return False
    session.execute(text("ANALYZE"))
    return True
