"""One writer of bulk data at a time: the ingest lock.

Two ingests interleaving would each be correct per kernel, but their reports would count
each other's writes and "missing upstream" marks could race. So an ingest (or an import)
takes this lock first and refuses to start while another holds it. The lock dies with
its holder, even one killed by SIGKILL, so a crash never leaves the store locked:

- PostgreSQL: a session-level advisory lock, held on a connection of its own for the
  whole run; the server releases it when that connection closes.
- SQLite: an exclusive ``flock`` on a file beside the database; the kernel releases it
  when the process exits. (A lock inside SQLite itself would also block the ingest's own
  writes, which go through other connections.)
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text

# Any fixed 64-bit number; PostgreSQL advisory locks share one key space per database.
ADVISORY_KEY = 0x4B49_494E_4745_5354  # "KIINGEST"


class IngestLocked(Exception):
    """Another ingest or import is writing to this store."""


def _message(holder: str) -> str:
    return (
        f"another ingest or import is already writing to this store ({holder}); "
        "wait for it to finish and run this again"
    )


@contextmanager
def ingest_lock(engine: Engine) -> Iterator[None]:
    """Hold the store's ingest lock for the ``with`` block, or raise ``IngestLocked`` at once."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            if not connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": ADVISORY_KEY}):
                raise IngestLocked(_message("a PostgreSQL advisory lock is held"))
            connection.commit()
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_KEY})
                connection.commit()
        return
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        yield  # a private in-memory store: nobody else can write to it
        return
    path = Path(f"{database}.ingest-lock")
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().decode(errors="replace").strip() or "unknown"
            raise IngestLocked(_message(f"process {holder} holds {path}")) from None
        handle.truncate(0)
        handle.write(str(os.getpid()).encode())
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
