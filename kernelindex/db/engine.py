"""Engines and sessions for SQLite (the embedded default) and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets pages read while an ingest writes; the busy timeout makes writers queue, not fail.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


# PostgreSQL settings of the connections that serve pages. A page's statements are short: starting
# parallel workers for one (search's ranking took 55 ms with two and 31 ms without, on a 2-core
# machine where the workers compete with the requests) or compiling it (JIT: 15 ms seen for the
# same statement, planned from a misestimate) costs more than it saves. Ingests keep the defaults.
SERVING_OPTIONS = "-c max_parallel_workers_per_gather=0 -c jit=off"


def make_engine(url: str, serving: bool = False, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the per-backend settings the registry relies on; ``serving``:
    for the web app's requests (``SERVING_OPTIONS`` on PostgreSQL)."""
    if url.startswith("sqlite"):
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # Near the number of requests a worker runs at once (anyio runs 40 threads): with fewer,
    # requests queue for a connection under load and time out as errors (30 a worker at most).
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    if serving:
        kwargs.setdefault("connect_args", {})["options"] = SERVING_OPTIONS
    return create_engine(url, pool_pre_ping=True, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
