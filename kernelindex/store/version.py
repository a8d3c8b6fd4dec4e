"""Page versions: which cached pages a committed write has made stale.

Every page depends on a few *scopes*: a run page on ``run:<id>``, its workload's
``workload:<id>`` and its sources' ``source:<id>``; a leaderboard on its workload (and the
other revisions of its problem) and sources; lists (home, ``/workloads``, search, GPU,
implementation, model and source pages, records, regressions) on ``lists``; pages that show
attestations apart from their run on ``attestations``; and every page on ``all``.

A writing transaction gives itself the next number of one sequence (the ``seq`` row of
``page_version``, locked until it commits, so numbers are given out in commit order) and
sets the scopes it changed to that number, just before it commits: the numbers become
visible together with the data and never before it. A page made after reading sequence
number ``S`` is exact while every scope it depends on is at most ``S``
(``kernelindex.web.response_cache``).

Which scopes a write changes is worked out from the rows it flushes (a run row changes its
run, its workload and the lists; an attestation its run and ``attestations``; see
``_row_scopes``). A write whose rows cannot be seen (a multi-row UPDATE, ``store.bulk``, Core
statements, which call ``mark_changed``) changes ``all``, unless its transaction said which
scopes its hidden writes stay within (``confine_writes``: the ingest of one workload).
Tables that no public page shows (rate-limit counters, API keys, generated secrets, the audit
log, accounts) do not count, so that a sign-in or an API call leaves every cache in place.

On PostgreSQL the transaction also sends ``NOTIFY kernelindex_versions`` (delivered when it
commits); ``VersionReader`` says how a worker learns of the numbers, and how stale it may be.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Iterable
from itertools import chain
from typing import Any

from sqlalchemy import Connection, Engine, event, func, inspect, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction, sessionmaker

from kernelindex.db.engine import answer_quickly, file_identity, gave_up_waiting, sqlite_file
from kernelindex.db.tables import PageVersion

log = logging.getLogger(__name__)

SEQUENCE = "seq"  # the row holding the last number given to a write
EVERYTHING = "all"  # every page depends on it: changed by writes whose reach is unknown
LISTS = "lists"
ATTESTATIONS = "attestations"
CHANNEL = "kernelindex_versions"
# Pages that show attestations apart from their run (permalinks, manifests, the export).
ATTESTATION_PATHS = ("/attestations/", "/manifests/", "/exports/", "/sitemap", "/account", "/admin")

# Written often, shown on no public page (the audit log, accounts and submissions only on private ones;
# an accepted submission's run is a ``run`` row, which changes its pages).
PRIVATE_TABLES = frozenset(
    {"rate_limit_counter", "api_key", "app_secret", "page_version", "audit_log", "user_account", "submission"}
)
_SEARCH_TABLES = frozenset({"search_entry", "search_term", "search_word"})
# Rows other pages refer to: a new one is shown only where the rows that use it are, but a
# changed one (a licence, a GPU name) may be shown on any page.
_SHARED_TABLES = frozenset({"implementation", "protocol", "environment"})
# Facts of one source shown on its workloads' and runs' pages (completeness, observed dates).
_SOURCE_FACT_TABLES = frozenset({"ingestion_report", "source_file", "gpu_datasheet", "regression_noise"})
# Derived rows kept by the transaction that wrote what they derive from, whose scopes say what changed.
_DERIVED_TABLES = frozenset({"workload_tally", "workload_source_tally", "collection_tally"})
_CHANGED = "kernelindex.pages_changed"
_CONFINED = "kernelindex.writes_confined"
_HIDDEN = "kernelindex.hidden_writes"
_COMMITTED = "kernelindex.pages_committed"


_WORKLOAD = "workload:"


def workload_scope(workload_id: int) -> str:
    return f"{_WORKLOAD}{workload_id}"


def run_scope(run_id: int) -> str:
    return f"run:{run_id}"


def source_scope(source_id: int) -> str:
    return f"source:{source_id}"


def mark_changed(session: Session, *scopes: str) -> None:
    """Make ``session``'s transaction change ``scopes`` when it commits; without any, the scopes
    its hidden writes are confined to (``confine_writes``), else ``all``."""
    changed = session.info.setdefault(_CHANGED, set())
    changed.update(scopes or session.info.get(_CONFINED) or (EVERYTHING,))


def note_hidden_write(session: Session, table: str) -> None:
    """Record that this transaction wrote rows of ``table`` that the session does not see, and
    mark what they change (``mark_changed``)."""
    session.info.setdefault(_HIDDEN, set()).add(table)
    mark_changed(session)


def hidden_writes(session: Session) -> set[str]:
    """The tables this transaction has written rows of that the session does not see."""
    return set(session.info.get(_HIDDEN, ()))


def confined_workloads(session: Session) -> set[int] | None:
    """The workloads this transaction confined its hidden writes to, or ``None`` if it did not."""
    confined = session.info.get(_CONFINED)
    if not confined:
        return None
    return {int(scope.removeprefix(_WORKLOAD)) for scope in confined if scope.startswith(_WORKLOAD)}


def confine_writes(session: Session, *scopes: str) -> None:
    """Say that this transaction's writes whose rows cannot be seen change only ``scopes`` (each
    caller adds its own: a group of workloads ingested together adds each)."""
    session.info.setdefault(_CONFINED, set()).update(scopes)


def current_version(session: Session, scope: str = SEQUENCE) -> int:
    """The number of ``scope`` (by default the last number given to any write); 0 if never set."""
    return session.scalar(select(PageVersion.seq).where(PageVersion.scope == scope)) or 0


def _row_scopes(row: Any, is_new: bool) -> set[str] | None:
    """The scopes a flushed row changes; ``None`` for a row no public page shows."""
    table = getattr(row, "__tablename__", None)
    if table in PRIVATE_TABLES or table in _DERIVED_TABLES:
        return None
    try:
        if table == "run":
            return {run_scope(row.id), workload_scope(row.workload_id), LISTS}
        if table == "workload":
            # A new workload changes counts and the sources' credits in every page's footer.
            return {EVERYTHING} if is_new else {workload_scope(row.id), LISTS}
        if table in ("workload_case", "version_regression"):
            return {workload_scope(row.workload_id), LISTS}
        if table in ("attestation", "report"):
            return {run_scope(row.run_id), ATTESTATIONS}
        if table == "manifest_version":
            return {ATTESTATIONS} if row.kind == "Attestation" else {LISTS}
        if table in _SEARCH_TABLES:
            return {LISTS}
        if table in _SHARED_TABLES:
            return {LISTS} if is_new else {EVERYTHING}
        if table in _SOURCE_FACT_TABLES:
            return {source_scope(row.source_id), LISTS}
        if table == "source" and not is_new:
            changed = {attr.key for attr in inspect(row).attrs if attr.history.has_changes()}
            if changed <= {"last_observed_at"}:
                return {source_scope(row.id), LISTS}
    except AttributeError:  # a row whose columns could not be read: assume the worst
        pass
    return {EVERYTHING}


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: UOWTransaction) -> None:
    new = set(map(id, session.new))
    for row in chain(session.new, session.dirty, session.deleted):
        scopes = _row_scopes(row, id(row) in new)
        if scopes:
            mark_changed(session, *scopes)


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> Any:
    if not (state.is_insert or state.is_update or state.is_delete):
        return None
    table = getattr(getattr(state.statement, "table", None), "name", None)
    if table in PRIVATE_TABLES or table in _DERIVED_TABLES:
        return None
    # Run the statement here to see what it did: one that matched no row (an unchanged
    # re-ingest's "mark what went missing") changes no page and must not empty every cache.
    result = state.invoke_statement()
    if getattr(result, "rowcount", -1) != 0:
        if table in _SEARCH_TABLES:
            mark_changed(state.session, LISTS)
        else:
            note_hidden_write(state.session, str(table))
    return result


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    # Flush first: what is still pending would otherwise be written after this hook.
    session.flush()
    changed = session.info.pop(_CHANGED, None)
    session.info.pop(_CONFINED, None)
    session.info.pop(_HIDDEN, None)
    if changed:
        session.info[_COMMITTED] = (_bump(session, changed), frozenset(changed))


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    committed = session.info.pop(_COMMITTED, None)
    if committed is None:
        return
    bind = session.get_bind()
    if isinstance(bind, Engine):
        # This process sees its own writes at once, before any notification arrives.
        for reader in list(_READERS.get(bind, ())):
            reader.saw_own_write(*committed)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    for key in (_CHANGED, _CONFINED, _COMMITTED, _HIDDEN):
        session.info.pop(key, None)


def bump_everything(connection: Connection) -> None:
    """Make every worker drop its cache: for writes that bypass the ORM session (a restore)."""
    _bump(connection, {EVERYTHING})


def _bump(executor: Session | Connection, scopes: Iterable[str]) -> int:
    """Give this transaction the next sequence number and set ``scopes`` to it."""
    bumped = executor.execute(
        update(PageVersion)
        .where(PageVersion.scope == SEQUENCE)
        .values(seq=PageVersion.seq + 1)
        .returning(PageVersion.seq)
    ).scalar()
    seq = int(bumped) if bumped is not None else 1
    dialect = executor.get_bind().dialect.name if isinstance(executor, Session) else executor.dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    rows = [{"scope": scope, "seq": seq} for scope in sorted({*scopes, SEQUENCE})]
    statement = insert(PageVersion).values(rows)
    executor.execute(statement.on_conflict_do_update(index_elements=["scope"], set_={"seq": statement.excluded.seq}))
    if dialect == "postgresql":
        # Delivered when (and only if) this transaction commits.
        executor.execute(select(func.pg_notify(CHANNEL, str(seq))))
    return seq


# Readers by engine, to hear of their own process's commits (``saw_own_write``).
_READERS: weakref.WeakKeyDictionary[Engine, set[VersionReader]] = weakref.WeakKeyDictionary()

# A listener catches up at least this often, even without a notification; a reader whose
# listener has not caught up for MAX_LAG_S reads the store itself until it has.
CATCH_UP_S = 1.0
MAX_LAG_S = 3.0
POLL_WAIT_S = 0.25
# Scopes remembered by a listener; past it, it forgets them and counts as a change of ``all``.
MAX_KNOWN = 200_000


class VersionReader:
    """Tells a web worker the page versions, as cheaply as the backend allows.

    ``read(scopes)`` answers ``(seq, numbers)``: every write numbered up to ``seq`` is
    accounted for in ``numbers`` (the number of each of ``scopes`` and of ``all``; 0 for a
    scope never changed), or ``None`` when the store cannot be read (the caller then serves
    without its cache); ``trouble`` then holds why, when it was the database (the caller may
    answer from it at once, instead of waiting for the database a second time).

    How exact it is:

    - SQLite, or sessions bound to one connection (tests): one indexed read per call, on a
      dedicated autocommit connection outside the pool (or through that connection). Exact:
      a commit anywhere is seen by the next request.
    - PostgreSQL: a background thread per worker LISTENs for ``kernelindex_versions`` and,
      on each notification (and every ``CATCH_UP_S`` without one), reads the scopes changed
      since the last number it saw (one indexed read per write, not per request); ``read``
      then answers from memory, with no round trip. This worker's own commits are known at
      once (``saw_own_write``), so a writer always sees its own write on its next request.
      A write committed by another process can be served stale by this worker until its
      listener has caught up: normally the time a notification takes to arrive plus one read
      (milliseconds), never longer than ``MAX_LAG_S`` (3 s), because a listener that has not
      caught up for that long (a lost or stalled connection) is not trusted: ``read`` then
      reads the store on each call, exactly, until the listener is back.
    """

    def __init__(self, sessions: sessionmaker[Session], listen: bool = True):
        bind = sessions.kw.get("bind")
        self.engine = bind if isinstance(bind, Engine) else None
        self.connection = bind if isinstance(bind, Connection) else None
        self.listen = listen and self.engine is not None and self.engine.dialect.name == "postgresql"
        self.raw: Any = None  # the polling connection
        # SQLite: the store's file, and the identity of the one the polling connection opened
        # (a store moved away and back, or replaced, is opened again).
        self.file = sqlite_file(self.engine.url) if self.engine is not None else None
        self.raw_file: tuple[int, int] | None = None
        self.trouble: SQLAlchemyError | None = None
        # Counts the times this reader found the store again after losing it: the store that came
        # back may be another (recreated, restored, a file put in its place) whose numbers repeat
        # those already seen, so that pages cached before must not count (ResponseCache).
        self.epoch = 0
        self.poll_lost = False
        self.lock = threading.Lock()  # the listener's state, held only for memory
        # The polling connection, held while it reads. A request waits at most POLL_WAIT_S for
        # it (it is busy that long only while the database is slow to answer), then goes on
        # without the cache rather than queue behind every request before it.
        self.polling = threading.Lock()
        # The listener's state: every write numbered up to ``cursor`` is in ``known``.
        self.known: dict[str, int] = {}
        self.cursor: int | None = None
        self.caught_up_at = float("-inf")
        self.listener: threading.Thread | None = None
        self.listening: Any = None
        self.stopping = threading.Event()
        if self.engine is not None:
            _READERS.setdefault(self.engine, set()).add(self)

    def in_memory(self) -> bool:
        """Whether ``read`` answers from memory now (no I/O: it may run on the event loop)."""
        return self.listen and time.monotonic() - self.caught_up_at < MAX_LAG_S

    def read(self, scopes: Iterable[str] = ()) -> tuple[int, dict[str, int]] | None:
        asked = {*scopes, EVERYTHING}
        if self.listen and self.listener is None:
            self._start_listening()
        return self.from_memory(asked) or self._poll(asked)

    def from_memory(self, scopes: Iterable[str] = ()) -> tuple[int, dict[str, int]] | None:
        """``read``'s answer from the listener's memory, without I/O (so it may run on the event
        loop); ``None`` while the listener is not trusted (not started, or behind)."""
        if not self.in_memory():
            return None
        with self.lock:
            assert self.cursor is not None
            return self.cursor, {scope: self.known.get(scope, 0) for scope in {*scopes, EVERYTHING}}

    def saw_own_write(self, seq: int, scopes: frozenset[str]) -> None:
        """Record a write this process committed, before its notification comes back."""
        with self.lock:
            self._note((scope, seq) for scope in scopes)

    def _note(self, changes: Iterable[tuple[str, int]]) -> None:
        for scope, seq in changes:
            if seq > self.known.get(scope, 0):
                self.known[scope] = seq
        if len(self.known) > MAX_KNOWN:
            newest = max(self.known.values())
            self.known = {EVERYTHING: newest}

    def _poll(self, asked: set[str]) -> tuple[int, dict[str, int]] | None:
        names = sorted({*asked, SEQUENCE})
        if not self.polling.acquire(timeout=POLL_WAIT_S):
            return None
        try:
            if self.connection is not None:
                mark = "?" if self.connection.dialect.name == "sqlite" else "%s"
                rows = list(self.connection.exec_driver_sql(_select_scopes(len(names), mark), tuple(names)))
            elif self.engine is None:
                return None
            else:
                rows = self._poll_raw(self.engine, names)
        except Exception as exc:
            self._close_polling()
            self.poll_lost = True
            self.trouble = _as_sqlalchemy_error(exc, self.engine or self.connection)
            return None
        finally:
            self.polling.release()
        self.trouble = None
        found = {str(scope): int(seq) for scope, seq in rows}
        return found.pop(SEQUENCE, 0), {scope: found.get(scope, 0) for scope in asked}

    def _poll_raw(self, engine: Engine, names: list[str]) -> list[Any]:
        """``names``' rows, read on the polling connection (opened again if it is gone)."""
        if self.raw is not None and self.file is not None and file_identity(self.file) != self.raw_file:
            self._close_polling()
            self.poll_lost = True
        # A connection kept since an earlier request may have been lost meanwhile (a restarted
        # server): then one more try on a new one, but not after waiting in vain for an answer.
        again = self.raw is not None
        while True:
            if self.raw is None:
                self.raw = _open(engine)
                self.raw_file = file_identity(self.file) if self.file is not None else None
                if self.poll_lost:
                    self._found_again()
                    self.poll_lost = False
            mark = "?" if engine.dialect.name == "sqlite" else "%s"
            try:
                cursor = self.raw.cursor()
                cursor.execute(_select_scopes(len(names), mark), tuple(names))
                rows: list[Any] = cursor.fetchall()
                cursor.close()
                return rows
            except Exception as exc:
                self._close_polling()
                self.poll_lost = True
                if not again or gave_up_waiting(exc):
                    raise
                again = False

    def _found_again(self) -> None:
        with self.lock:
            self.epoch += 1

    def _start_listening(self) -> None:
        with self.lock:
            if self.listener is None:
                self.listener = threading.Thread(target=self._listen, name="kernelindex-versions", daemon=True)
                self.listener.start()

    def _listen(self) -> None:
        assert self.engine is not None
        wait = 0.1
        lost = False
        while not self.stopping.is_set():
            try:
                raw = _open(self.engine)
                self.listening = raw
                if lost:
                    # Start again from what this store holds, not from numbers seen in the one lost.
                    with self.lock:
                        self.cursor = None
                        self.known = {}
                    self._found_again()
                    lost = False
                raw.execute(f"LISTEN {CHANNEL}")
                while not self.stopping.is_set():
                    self._catch_up(raw)
                    wait = 0.1
                    # Returns at the first notification, or after CATCH_UP_S without one.
                    for _ in raw.notifies(timeout=CATCH_UP_S, stop_after=1):
                        pass
            except Exception as exc:
                # Not trusted from now on: requests read the store (or, while it is gone, skip the cache).
                self.caught_up_at = float("-inf")
                lost = True
                if not self.stopping.is_set():
                    log.warning("page versions: listener lost its connection (%s); reading per request", exc)
            finally:
                with contextlib.suppress(Exception):
                    self.listening.close()
                self.listening = None
            self.stopping.wait(wait)
            wait = min(wait * 2, 5.0)

    def _catch_up(self, raw: Any) -> None:
        if self.cursor is None:
            start = raw.execute("SELECT coalesce(max(seq), 0) FROM page_version").fetchone()[0]
            with self.lock:
                # Pages cached before the listener started were checked by reading the store: any
                # made before ``start`` may have missed a change this listener never heard of.
                self.cursor = int(start)
                self._note([(EVERYTHING, self.cursor)])
                self.caught_up_at = time.monotonic()
            return
        rows = raw.execute("SELECT scope, seq FROM page_version WHERE seq > %s", (self.cursor,)).fetchall()
        with self.lock:
            self._note((str(scope), int(seq)) for scope, seq in rows)
            self.cursor = max([self.cursor, *(int(seq) for _, seq in rows)])
            self.caught_up_at = time.monotonic()

    def _close_polling(self) -> None:
        if self.raw is not None:
            with contextlib.suppress(Exception):
                self.raw.close()
            self.raw = None

    def close(self) -> None:
        self.stopping.set()
        with contextlib.suppress(Exception):
            if self.listening is not None:
                self.listening.close()
        if self.listener is not None:
            self.listener.join(timeout=CATCH_UP_S + 1)
        with self.polling:
            self._close_polling()
        if self.engine is not None:
            _READERS.get(self.engine, set()).discard(self)


def _as_sqlalchemy_error(exc: Exception, bind: Engine | Connection | None) -> SQLAlchemyError | None:
    """``exc`` as SQLAlchemy raises it (a driver's error wrapped in its class); None if it is neither."""
    if isinstance(exc, SQLAlchemyError):
        return exc
    dbapi = bind.dialect.loaded_dbapi if bind is not None else None
    if dbapi is None or not isinstance(exc, dbapi.Error):
        return None
    wrapped = DBAPIError.instance(None, None, exc, dbapi.Error)
    return wrapped if isinstance(wrapped, SQLAlchemyError) else None


def _select_scopes(count: int, mark: str) -> str:
    return f"SELECT scope, seq FROM page_version WHERE scope IN ({', '.join([mark] * count)})"


def _open(engine: Engine) -> Any:
    """A DBAPI connection of the engine's, in autocommit, kept for the worker's life outside the pool."""
    proxied = engine.raw_connection()
    raw = proxied.driver_connection
    assert raw is not None
    proxied.detach()
    if engine.dialect.name == "sqlite":
        raw.isolation_level = None  # autocommit: each read sees the latest commit
    else:
        raw.rollback()
        raw.autocommit = True
        # Its statements are short: a server that does not answer one soon is in trouble.
        answer_quickly(raw)
    return raw
