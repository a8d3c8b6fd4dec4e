"""Engines and sessions for SQLite (the embedded default) and PostgreSQL.

A database in trouble makes a request fail fast, never hang, and the engine recovers by
itself once the database is back:

- SQLite: the site opens its file read-write without ever creating it (a missing file is an
  error, not a new empty store), and a pooled connection whose file was moved away or
  replaced since it was opened is discarded on checkout, so that no connection keeps reading
  a file that is no longer the store.
- PostgreSQL: connecting has a timeout (``connect_timeout``), a free pooled connection is
  waited for at most ``pool_s``, and, for the site, each statement has PostgreSQL's
  ``statement_timeout`` and any wait for an answer on a connection ends a little after it
  (a server, or a proxy, that accepts but never answers): the connection is then closed and
  the pool, which pings each connection before use, replaces it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import psycopg
from psycopg.abc import PQGen
from psycopg.errors import QueryCanceled, _WaitTimeout
from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.settings import DB_CONNECT_TIMEOUT_S, DB_POOL_TIMEOUT_S, DB_STATEMENT_TIMEOUT_S, Settings


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
# The client waits this much longer than statement_timeout for an answer, so that a slow
# statement is cancelled by the server (the connection stays usable) before the client gives up.
ANSWER_GRACE_S = 1.0
# Where a pooled SQLite connection keeps the identity of the file it opened.
_FILE_IDENTITY = "kernelindex.sqlite_file"


@dataclass(frozen=True)
class Timeouts:
    """How long a connection waits for the database. ``statement_s`` None: statements may run as
    long as they need (ingests, migrations); ``pool_s`` None: SQLAlchemy's default (30 s)."""

    connect_s: int = DB_CONNECT_TIMEOUT_S
    statement_s: float | None = None
    pool_s: float | None = None

    @classmethod
    def serving(cls, settings: Settings | None = None) -> Timeouts:
        """The site's limits: ``settings``' or the defaults."""
        if settings is None:
            return cls(DB_CONNECT_TIMEOUT_S, DB_STATEMENT_TIMEOUT_S, DB_POOL_TIMEOUT_S)
        return cls(settings.db_connect_timeout_s, settings.db_statement_timeout_s, settings.db_pool_timeout_s)


def make_engine(url: str, serving: bool = False, timeouts: Timeouts | None = None, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the per-backend settings the registry relies on; ``serving``:
    for the web app's requests (``SERVING_OPTIONS`` on PostgreSQL, an SQLite file that is never
    created, ``Timeouts.serving()`` unless ``timeouts`` is given)."""
    limits = timeouts or (Timeouts.serving() if serving else Timeouts())
    if url.startswith("sqlite"):
        return _sqlite_engine(make_url(url), serving, limits, **kwargs)
    # Near the number of requests a worker runs at once (anyio runs 40 threads): with fewer,
    # requests queue for a connection under load and time out as errors (30 a worker at most).
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    if limits.pool_s is not None:
        kwargs.setdefault("pool_timeout", limits.pool_s)
    connect_args = kwargs.setdefault("connect_args", {})
    # Without it, psycopg waits 130 s for a server that accepts the connection and says nothing.
    connect_args.setdefault("connect_timeout", limits.connect_s)
    options = [SERVING_OPTIONS] if serving else []
    if limits.statement_s is not None:
        options.append(f"-c statement_timeout={max(1, round(limits.statement_s * 1000))}")
    if options:
        connect_args["options"] = " ".join(options)
    engine = create_engine(url, pool_pre_ping=True, **kwargs)
    if limits.statement_s is not None:
        _bound_answers(engine, limits.statement_s + ANSWER_GRACE_S, limits.connect_s)
    return engine


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


# --- SQLite ------------------------------------------------------------------------------


def sqlite_file(url: URL) -> Path | None:
    """The file an SQLite URL names (also as a ``file:`` URI), absolute; None for an in-memory database."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if "uri" in url.query and database.startswith("file:"):
        if url.query.get("mode") == "memory":
            return None
        database = unquote(database.removeprefix("file:").partition("?")[0])
        if database.startswith("//"):  # file://host/path: the host is empty or localhost
            database = "/" + database[2:].partition("/")[2]
    return Path(database).absolute()


def file_identity(path: Path) -> tuple[int, int] | None:
    """What tells one file at ``path`` from another put there later; None if there is none."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _sqlite_engine(url: URL, serving: bool, limits: Timeouts, **kwargs: Any) -> Engine:
    path = sqlite_file(url)
    if path is not None and serving and "uri" not in url.query:
        # mode=rw: a page request opens the store or fails; it never creates an empty one
        # (SQLite's default, rwc, would, and a moved-away store would then come back beside it).
        url = url.set(database=f"file:{quote(str(path))}", query={**url.query, "mode": "rw", "uri": "true"})
    if path is not None and limits.pool_s is not None and "poolclass" not in kwargs:
        kwargs.setdefault("pool_timeout", limits.pool_s)
    engine = create_engine(url, **kwargs)
    event.listen(engine, "connect", _sqlite_pragmas)
    if path is not None:
        _follow_file(engine, path)
    return engine


def _follow_file(engine: Engine, path: Path) -> None:
    """Discard, on checkout, a pooled connection to a file that is no longer at ``path``."""

    @event.listens_for(engine, "connect")
    def remember(_dbapi_connection: Any, record: Any) -> None:
        record.info[_FILE_IDENTITY] = file_identity(path)

    @event.listens_for(engine, "checkout")
    def check(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.get(_FILE_IDENTITY) != file_identity(path):
            # The pool closes this connection and opens a new one (which fails while the file is away).
            raise DisconnectionError(f"{path} was moved away or replaced since this connection opened it")


# --- PostgreSQL ----------------------------------------------------------------------------

RV = TypeVar("RV")


class AnswerBound(psycopg.Connection[Any]):
    """A connection that waits at most ``answer_limit_s`` for any answer (a statement's result, a
    commit, a ping; None: no limit): past it the connection is closed and the wait ends in
    ``QueryCanceled``, which the pool takes for a lost connection (``closed``)."""

    answer_limit_s: float | None = None
    # The limit while the connection sits in the pool: the next thing sent on it is the pool's
    # ping, a round trip that should come back as fast as a connection is opened.
    idle_limit_s: float | None = None

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        limit = self.answer_limit_s
        if limit is None or timeout is not None:  # unbounded, or a wait with a limit of its own (notifications)
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, limit)
        except _WaitTimeout:
            # What the server does with what was sent is unknown: nothing more goes over this connection.
            self.pgconn.finish()
            raise QueryCanceled(f"the database did not answer within {limit:g} s") from None


def gave_up_waiting(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement that took too long: cancelled by the server
    (``statement_timeout``) or given up on by the client (``AnswerBound``)."""
    return isinstance(exc, QueryCanceled) or isinstance(getattr(exc, "orig", None), QueryCanceled)


def answer_quickly(dbapi_connection: Any) -> None:
    """Give a connection kept outside the pool for short statements (page versions) the short
    limit of an idle pooled one, if its engine bounds answers at all."""
    if isinstance(dbapi_connection, AnswerBound) and dbapi_connection.idle_limit_s is not None:
        dbapi_connection.answer_limit_s = dbapi_connection.idle_limit_s


def _bound_answers(engine: Engine, limit_s: float, idle_limit_s: float) -> None:
    """Make every connection of ``engine`` an ``AnswerBound`` one: ``limit_s`` while in use,
    ``idle_limit_s`` while pooled (for the ping before its next use)."""

    @event.listens_for(engine, "do_connect")
    def connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        connection = AnswerBound.connect(*cargs, **cparams)
        connection.answer_limit_s, connection.idle_limit_s = limit_s, idle_limit_s
        return connection

    @event.listens_for(engine, "checkin")
    def pooled(dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, AnswerBound):
            dbapi_connection.answer_limit_s = idle_limit_s

    @event.listens_for(engine, "checkout")
    def taken(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if isinstance(dbapi_connection, AnswerBound):
            dbapi_connection.answer_limit_s = limit_s
