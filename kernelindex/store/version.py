"""The catalogue version: one integer that every committed change of public data increases.

Workers cache rendered pages under the version they were made at
(``kernelindex.web.response_cache``) and read the version once per request: a cached
page is served only while the version is unchanged, so no worker ever serves what a
write (in any process) has made stale.

The version is increased by the writing transaction itself, just before it commits, so
the new number becomes visible together with the data and never before it. Any session
that inserts, updates or deletes a row of a table the pages read, through the ORM or an
ORM-executed statement, is noticed by the listeners below; writes that bypass the session
(``kernelindex.store.bulk``, Core statements on ``session.connection()``) call
``mark_changed``. Tables that no public page shows (rate-limit counters, API keys,
generated secrets) do not count, so that a sign-in or an API call does not empty every
cache.
"""

from __future__ import annotations

import contextlib
import threading
from itertools import chain
from typing import Any

from sqlalchemy import Connection, Engine, event, insert, select, update
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction, sessionmaker

from kernelindex.db.tables import CatalogueState

# Written often, shown on no public page (the audit log and accounts only on private ones).
PRIVATE_TABLES = frozenset(
    {"rate_limit_counter", "api_key", "app_secret", "catalogue_state", "audit_log", "user_account"}
)
# Community statements: shown on run pages, attestation pages, manifests and the export only
# (``ATTESTATION_PATHS``), so writing them leaves the leaderboards, search and lists cached.
ATTESTATION_TABLES = frozenset({"attestation", "report", "manifest_version"})
ATTESTATION_PATHS = ("/runs/", "/attestations/", "/manifests/", "/exports/", "/sitemap", "/account", "/admin")
CATALOGUE, ATTESTATIONS = 1, 2  # the ids of the two counters in ``catalogue_state``
_CHANGED = "kernelindex.catalogue_changed"
_READ = "SELECT id, version FROM catalogue_state"


def mark_changed(session: Session, counter: int = CATALOGUE) -> None:
    """Make ``session``'s transaction increase a version (the catalogue's by default) when it commits."""
    session.info.setdefault(_CHANGED, set()).add(counter)


def current_version(session: Session, counter: int = CATALOGUE) -> int:
    return session.scalar(select(CatalogueState.version).where(CatalogueState.id == counter)) or 0


def _counter(table_name: str | None) -> int | None:
    if table_name in PRIVATE_TABLES:
        return None
    return ATTESTATIONS if table_name in ATTESTATION_TABLES else CATALOGUE


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: UOWTransaction) -> None:
    for row in chain(session.new, session.dirty, session.deleted):
        counter = _counter(getattr(row, "__tablename__", None))
        if counter is not None:
            mark_changed(session, counter)


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> Any:
    if not (state.is_insert or state.is_update or state.is_delete):
        return None
    table = getattr(state.statement, "table", None)
    counter = _counter(getattr(table, "name", None))
    if counter is None:
        return None
    # Run the statement here to see what it did: one that matched no row (an unchanged
    # re-ingest's "mark what went missing") changes no page and must not empty every cache.
    result = state.invoke_statement()
    if getattr(result, "rowcount", -1) != 0:
        mark_changed(state.session, counter)
    return result


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    # Flush first: what is still pending would otherwise be written after this hook.
    session.flush()
    for counter in sorted(session.info.pop(_CHANGED, ())):
        _bump(session, counter)


def bump_every_counter(connection: Connection) -> None:
    """Make every worker drop its cache: for writes that bypass the ORM session (a restore)."""
    for counter in (CATALOGUE, ATTESTATIONS):
        _bump(connection, counter)


def _bump(executor: Session | Connection, counter: int) -> None:
    bumped = executor.execute(
        update(CatalogueState).where(CatalogueState.id == counter).values(version=CatalogueState.version + 1)
    )
    if bumped.rowcount == 0:  # type: ignore[attr-defined]
        executor.execute(insert(CatalogueState).values(id=counter, version=2))


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_CHANGED, None)


class VersionReader:
    """Reads the version for a web worker as cheaply as the backend allows.

    With an engine, it keeps one dedicated autocommit DBAPI connection outside the pool (a
    read costs one round trip, no session or pool checkout). When the sessions are bound
    to a single connection (tests, inside a transaction that is rolled back), it reads
    through that connection, which sees the transaction's own writes. Returns ``None``
    when the store cannot be read; the caller then serves without its cache.
    """

    def __init__(self, sessions: sessionmaker[Session]):
        bind = sessions.kw.get("bind")
        self.engine = bind if isinstance(bind, Engine) else None
        self.connection = bind if isinstance(bind, Connection) else None
        self.raw: Any = None
        self.lock = threading.Lock()

    def __call__(self) -> tuple[int, int] | None:
        with self.lock:
            try:
                if self.connection is not None:
                    rows = [tuple(row) for row in self.connection.exec_driver_sql(_READ)]
                elif self.engine is None:
                    return None
                else:
                    if self.raw is None:
                        self.raw = self._open(self.engine)
                    cursor = self.raw.cursor()
                    cursor.execute(_READ)
                    rows = cursor.fetchall()
                    cursor.close()
                found = dict(rows)
                return int(found.get(CATALOGUE, 0)), int(found.get(ATTESTATIONS, 0))
            except Exception:
                self.close_locked()
                return None

    @staticmethod
    def _open(engine: Engine) -> Any:
        proxied = engine.raw_connection()
        raw = proxied.driver_connection
        assert raw is not None
        proxied.detach()  # kept for the worker's life, outside the pool
        if engine.dialect.name == "sqlite":
            raw.isolation_level = None  # autocommit: each read sees the latest commit
        else:
            raw.rollback()
            raw.autocommit = True
        return raw

    def close_locked(self) -> None:
        if self.raw is not None:
            with contextlib.suppress(Exception):
                self.raw.close()
            self.raw = None

    def close(self) -> None:
        with self.lock:
            self.close_locked()
