"""Backup and restore of a whole store: ``kernelindex export FILE`` / ``kernelindex import FILE``.

A backup is one gzip file of JSON Lines:

1. a header: ``{"format": "kernelindex-backup", "version": 1, "schema": <migration>,
   "createdAt": …, "tables": {table: rows, …}}``;
2. one ``{"table": …, "row": {column: value, …}}`` line per row, table by table in an
   order where every row comes after the rows it refers to, each table in primary-key
   order; timestamps are ISO 8601 strings in UTC, everything else is plain JSON;
3. a trailer: ``{"end": "kernelindex-backup", "lines": n, "sha256": …, "hmac": …}``: the hex
   SHA-256 of every byte before it (uncompressed), and the hex HMAC-SHA256 of the same bytes
   under the operator's backup key.

It holds every table except the rate-limit counters (short-lived) and the generated
session secret (a backup file should not let its reader forge sessions); so accounts
travel, as Argon2id password hashes and SHA-256 hashes of API keys, because attestations,
reports and the audit log name their authors. Manifests are copied as stored text, so
every digest survives byte for byte.

An import checks the whole file before writing anything: its HMAC under the operator's key
first (so a file from anyone without the key, or signed with another key, is refused
unread), then gzip intact, header and trailer present, checksum, row counts, every column
known, and every manifest's digest recomputed. Then it writes everything in one
transaction, and before committing checks that every column the site ranks and shows
agrees with what it derives from (``_check_derived``): all or nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, delete, func, select, text
from sqlalchemy.orm import Session

from kernelindex.db.account_tables import AuditEntry
from kernelindex.db.base import Base, UtcDateTime
from kernelindex.db.rerun_tables import RerunResult
from kernelindex.db.tables import Attestation, Environment, Protocol, Run, User, Workload
from kernelindex.db.tally_tables import CollectionTally, WorkloadSourceTally, WorkloadTally
from kernelindex.manifests import BenchmarkRun, parse_manifest
from kernelindex.manifests.digest import comparison_key, manifest_digest
from kernelindex.store.collection_tallies import recount as recount_collections
from kernelindex.store.planner import vacuum_after_bulk_write
from kernelindex.store.reruns import derive_rerun_evidence
from kernelindex.store.tallies import recount
from kernelindex.store.version import bump_everything

FORMAT = "kernelindex-backup"
# 2: the trailer carries an HMAC under the operator's key; version-1 files are not authenticated.
VERSION = 2
MIN_KEY_BYTES = 16
# Short-lived counters, the session secret, and the cache versions (bookkeeping of each store's
# own workers: a restore bumps them instead, so no worker keeps serving what it replaced); and
# the tallies, which a restore counts again from the runs it loaded.
LEFT_OUT = frozenset(
    {"rate_limit_counter", "app_secret", "page_version", "workload_tally", "workload_source_tally", "collection_tally"}
)
# Tables whose rows carry a manifest and the digest it must have.
MANIFEST_TABLES = frozenset(
    {"workload", "implementation", "protocol", "environment", "run", "attestation", "manifest_version", "rerun_case"}
)
INSERT_BATCH = 1000


class BackupError(Exception):
    """The file is not a complete, untampered backup this store can take."""


@dataclass(frozen=True)
class BackupSummary:
    schema: str
    tables: dict[str, int]

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


def check_key(key: bytes) -> bytes:
    """``key`` if it is long enough to authenticate backups, else ``BackupError``."""
    if len(key) < MIN_KEY_BYTES:
        raise BackupError(f"the backup key is too short: use at least {MIN_KEY_BYTES} random bytes")
    return key


def backed_up_tables() -> list[Table]:
    """The tables a backup holds, parents before children."""
    return [table for table in Base.metadata.sorted_tables if table.name not in LEFT_OUT]


def _encode(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _decode(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    unknown = set(row) - set(table.columns.keys())
    if unknown:
        raise BackupError(f"{table.name} has no column {', '.join(sorted(unknown))}")
    decoded = dict(row)
    for column in table.columns:
        value = row.get(column.name)
        if isinstance(column.type, UtcDateTime) and value is not None:
            try:
                decoded[column.name] = datetime.fromisoformat(value).astimezone(UTC)
            except (TypeError, ValueError):
                raise BackupError(f"{table.name}.{column.name} is not a timestamp: {value!r}") from None
    return decoded


# --- Export ------------------------------------------------------------------------------


@contextmanager
def _snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection reading one consistent state of the store, whatever writes meanwhile."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="REPEATABLE READ") as connection:
            connection.execute(text("SET TRANSACTION READ ONLY"))
            yield connection
        return
    # pysqlite issues no BEGIN before a SELECT, so each query would see its own state; an
    # explicit BEGIN makes one read transaction, a WAL snapshot that writers do not disturb.
    with engine.connect() as connection:
        connection.exec_driver_sql("BEGIN")
        try:
            yield connection
        finally:
            connection.rollback()


def write_backup(engine: Engine, path: Path, schema: str, key: bytes) -> BackupSummary:
    """Write a backup of the store behind ``engine`` to ``path`` (replaced atomically),
    authenticated with an HMAC-SHA256 under ``key``."""
    check_key(key)
    tables = backed_up_tables()
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    temporary = Path(name)
    try:
        with _snapshot(engine) as connection, os.fdopen(handle, "wb") as raw:
            counts = {t.name: connection.scalar(select(func.count()).select_from(t)) or 0 for t in tables}
            checksum = hashlib.sha256()
            signature = hmac.new(key, digestmod=hashlib.sha256)
            lines = 0
            # mtime 0 and no file name: the same store gives the same compressed bytes.
            with gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as out:

                def emit(value: dict[str, Any]) -> None:
                    nonlocal lines
                    data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
                    checksum.update(data)
                    signature.update(data)
                    out.write(data)
                    lines += 1

                created = datetime.now(UTC).isoformat()
                emit({"format": FORMAT, "version": VERSION, "schema": schema, "createdAt": created, "tables": counts})
                for table in tables:
                    statement = select(table).order_by(*table.primary_key.columns)
                    for row in connection.execute(statement.execution_options(yield_per=INSERT_BATCH)):
                        emit({"table": table.name, "row": {k: _encode(v) for k, v in row._mapping.items()}})
                trailer = {
                    "end": FORMAT,
                    "lines": lines,
                    "sha256": checksum.hexdigest(),
                    "hmac": signature.hexdigest(),
                }
                out.write(json.dumps(trailer).encode() + b"\n")
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return BackupSummary(schema=schema, tables=counts)


# --- Import ------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[bytes]:
    try:
        with gzip.open(path, "rb") as stream:
            yield from _read_lines(stream)
    except (OSError, EOFError, zlib.error) as exc:
        raise BackupError(f"{path.name} is truncated or is not a gzip file ({exc})") from None


def _read_lines(stream: Iterable[bytes]) -> Iterator[bytes]:
    for line in stream:
        if not line.endswith(b"\n"):
            raise BackupError("the last line is cut short: the file is truncated")
        yield line


def _json(line: bytes, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        raise BackupError(f"line {number} is not JSON") from None
    if not isinstance(value, dict):
        raise BackupError(f"line {number} is not a JSON object")
    return value


def authenticate(path: Path, key: bytes) -> None:
    """Raise ``BackupError`` unless the trailer's HMAC is that of every line before it under ``key``.

    Only bytes are hashed here: nothing in a file from someone without the key is parsed as rows.
    """
    signature = hmac.new(check_key(key), digestmod=hashlib.sha256)
    previous: bytes | None = None
    for line in _lines(path):
        if previous is not None:
            signature.update(previous)
        previous = line
    if previous is None:
        raise BackupError(f"{path.name} is empty")
    try:
        trailer = json.loads(previous)
    except ValueError:
        trailer = None
    if not isinstance(trailer, dict) or trailer.get("end") != FORMAT:
        raise BackupError(f"{path.name} has no end line: the file is truncated")
    claimed = trailer.get("hmac")
    if not isinstance(claimed, str) or not hmac.compare_digest(claimed, signature.hexdigest()):
        raise BackupError(
            "the backup's HMAC does not match this key: the file was changed after it was written, "
            "or it was written with another backup key"
        )


def check_backup(path: Path, schema: str, key: bytes) -> BackupSummary:
    """Read the whole file and raise ``BackupError`` unless it is authentic, complete and untampered."""
    authenticate(path, key)
    checksum = hashlib.sha256()
    header: dict[str, Any] | None = None
    trailer: dict[str, Any] | None = None
    seen: dict[str, int] = {}
    tables = {table.name: table for table in backed_up_tables()}
    lines = 0
    for number, line in enumerate(_lines(path), start=1):
        if trailer is not None:
            raise BackupError(f"line {number} comes after the end of the backup")
        value = _json(line, number)
        if number == 1:
            header = value
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise BackupError(f"{path.name} is not a KernelIndex backup of format version {VERSION}")
            if header.get("schema") != schema:
                raise BackupError(
                    f"the backup was written at schema {header.get('schema')!r}, this KernelIndex is at {schema!r}: "
                    "import it with the version that wrote it, then upgrade"
                )
        elif "end" in value:
            trailer = value
            continue
        else:
            _check_row(value, number, tables)
            seen[value["table"]] = seen.get(value["table"], 0) + 1
        checksum.update(line)
        lines += 1
    if header is None:
        raise BackupError(f"{path.name} is empty")
    if trailer is None:
        raise BackupError(f"{path.name} has no end line: the file is truncated")
    if trailer.get("lines") != lines or trailer.get("sha256") != checksum.hexdigest():
        raise BackupError("the checksum does not match: the file was changed or damaged after it was written")
    declared = header.get("tables")
    expected = {name: count for name, count in declared.items() if count} if isinstance(declared, dict) else None
    if expected != seen or not set(seen) <= set(tables):
        raise BackupError(f"the rows do not match the header's counts ({declared} declared, {seen} found)")
    return BackupSummary(schema=schema, tables={name: seen.get(name, 0) for name in tables})


def _check_row(value: dict[str, Any], number: int, tables: dict[str, Table]) -> None:
    table = tables.get(value.get("table"))  # type: ignore[arg-type]
    row = value.get("row")
    if table is None or not isinstance(row, dict):
        raise BackupError(f"line {number} is not a row of a table this store has")
    _decode(table, row)
    if table.name in MANIFEST_TABLES:
        try:
            digest = manifest_digest(json.loads(row["manifest_json"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise BackupError(f"line {number}: {table.name} row without a readable manifest ({exc})") from None
        if digest != row.get("digest"):
            raise BackupError(f"line {number}: {table.name} {row.get('name')!r} does not match its digest")


def store_row_count(connection: Connection) -> int:
    return sum(connection.scalar(select(func.count()).select_from(t)) or 0 for t in backed_up_tables())


def restore_backup(engine: Engine, path: Path, schema: str, key: bytes, replace: bool = False) -> BackupSummary:
    """Check ``path`` whole (its HMAC under ``key`` first), then load it into the store in one transaction.

    Refuses (``BackupError``) a store that holds anything unless ``replace``, which empties
    it first in the same transaction, and a file whose ranked or shown columns disagree with
    what they derive from (nothing is written then).
    """
    summary = check_backup(path, schema, key)
    tables = {table.name: table for table in backed_up_tables()}
    with engine.begin() as connection:
        if not replace and (rows := store_row_count(connection)):
            raise BackupError(f"the store is not empty ({rows} rows); import into an empty one, or pass --replace")
        # The tallies refer to workloads and sources; they are counted again below.
        for tally in (WorkloadTally, WorkloadSourceTally, CollectionTally):
            connection.execute(delete(tally))
        for table in reversed(backed_up_tables()):
            connection.execute(delete(table))
        pending: list[dict[str, Any]] = []
        current: Table | None = None
        for number, line in enumerate(_lines(path), start=1):
            value = json.loads(line)
            if number == 1 or "end" in value:
                continue
            table = tables[value["table"]]
            if table is not current or len(pending) >= INSERT_BATCH:
                if pending and current is not None:
                    connection.execute(current.insert(), pending)
                current, pending = table, []
            pending.append(_decode(table, value["row"]))
        if pending and current is not None:
            connection.execute(current.insert(), pending)
        _check_derived(connection)
        if connection.dialect.name == "postgresql":
            _advance_sequences(connection)
        with Session(bind=connection) as session:
            recount(session)
            recount_collections(session)
        bump_everything(connection)
    vacuum_after_bulk_write(engine, summary.tables.get("run", 0))
    return summary


def _advance_sequences(connection: Connection) -> None:
    """Rows came with their ids: move each id sequence past them, or the next insert collides."""
    for table in backed_up_tables():
        if "id" not in table.columns or not table.c.id.primary_key:
            continue
        connection.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                f'COALESCE(MAX(id), 1), MAX(id) IS NOT NULL) FROM "{table.name}"'
            )
        )


# --- Derived columns ----------------------------------------------------------------------


def _mismatch(record: str, column: str, stored: object, derived: object, source: str) -> BackupError:
    return BackupError(
        f"{record}: {column} is {_shown(stored)} in the file, but {_shown(derived)} according to its {source}"
    )


def _shown(value: object) -> str:
    """A value as the file spells it: an enum member by its wire string."""
    return repr(value.value if isinstance(value, Enum) else value)


def _check_derived(connection: Connection) -> None:
    """Refuse a file whose ranked or shown columns do not follow from what they derive from.

    A forger who recomputed the checksum (or even holds the key) cannot make a run faster,
    better evidenced or differently grouped than its manifest says, nor hide, show, withdraw
    or restore anything the audit log does not record. Runs in the loaded rows, read back
    inside the import's transaction; nothing is changed here.
    """
    with Session(bind=connection, autoflush=False) as session:
        _check_runs(session)
        _check_attestations(session)


def _moderation_states(session: Session, prefix: str, on: str, off: str) -> dict[str, tuple[bool, str | None]]:
    """Per target name, whether its last ``on``/``off`` audit action was ``on``, and that entry's reason."""
    entries = session.execute(
        select(AuditEntry.action, AuditEntry.target, AuditEntry.reason)
        .where(AuditEntry.action.in_([on, off]), AuditEntry.target.startswith(prefix))
        .order_by(AuditEntry.created_at, AuditEntry.id)
    )
    return {target.removeprefix(prefix): (action == on, reason) for action, target, reason in entries}


def _check_runs(session: Session) -> None:
    digests = {
        table: {row_id: digest for row_id, digest in session.execute(select(table.id, table.digest))}
        for table in (Workload, Protocol, Environment)
    }
    withdrawals = _moderation_states(session, "run ", "run.withdraw", "run.restore")
    reviews = _moderation_states(session, "run ", "run.release", "run.reject")
    runs = session.scalars(select(Run).order_by(Run.id)).all()
    for run in runs:
        record = f"run {run.name}"
        manifest = parse_manifest(json.loads(run.manifest_json))
        if not isinstance(manifest, BenchmarkRun):
            raise BackupError(f"{record}: its manifest is a {manifest.KIND}, not a BenchmarkRun")
        timing = manifest.spec.timing
        key = comparison_key(
            digests[Workload].get(run.workload_id, ""),
            digests[Protocol].get(run.protocol_id, ""),
            digests[Environment].get(run.environment_id, ""),
        )
        for column, derived, source in (
            ("status", manifest.spec.status, "manifest"),
            ("primary_statistic", timing.primary_statistic, "manifest"),
            ("latency_ns", timing.latency_ns.get(run.primary_statistic), "manifest"),
            ("observed_at", manifest.spec.observed_at, "manifest"),
            ("comparison_key", key, "workload, protocol and environment"),
        ):
            if getattr(run, column) != derived:
                raise _mismatch(record, column, getattr(run, column), derived, source)
        withdrawn, reason = withdrawals.get(run.name, (False, None))
        if (run.withdrawn_at is not None) != withdrawn or (withdrawn and run.withdrawn_reason != reason):
            raise _mismatch(record, "withdrawn_at", run.withdrawn_at, "withdrawn" if withdrawn else None, "audit log")
        review = reviews.get(run.name)
        decided = None if review is None else ("released" if review[0] else "rejected")
        if run.review_state != decided or (review is not None and run.review_note != review[1]):
            raise _mismatch(record, "review_state", run.review_state, decided, "audit log")
        if run.review_state == "released" and run.held_for_review:
            raise _mismatch(record, "held_for_review", True, False, "its release on review")
    stored = {run.id: run.evidence for run in runs}
    reran = set(session.scalars(select(RerunResult.run_id)))
    # Sets the ORM objects only; never flushed.
    derive_rerun_evidence(session, *sorted({run.comparison_key for run in runs if run.id in reran}))
    for run in runs:
        derived = run.evidence if run.id in reran else "reported"
        if stored[run.id] != derived:
            raise _mismatch(f"run {run.name}", "evidence", stored[run.id], derived, "rerun bundles")


def _check_attestations(session: Session) -> None:
    handles = {user_id: handle for user_id, handle in session.execute(select(User.id, User.handle))}
    moderated = _moderation_states(session, "attestation ", "attestation.hide", "attestation.unhide")
    for row in session.scalars(select(Attestation).order_by(Attestation.id)):
        record = f"attestation {row.name}"
        spec = json.loads(row.manifest_json)["spec"]
        hidden, reason = moderated.get(row.name, (False, None))
        for column, stored, derived, source in (
            ("type", row.type, spec["type"], "manifest"),
            ("user_id", handles.get(row.user_id), spec["author"]["handle"], "manifest"),
            ("state", row.state, "hidden" if hidden else "published", "audit log"),
            ("hidden_reason", row.hidden_reason, reason if hidden else None, "audit log"),
        ):
            if stored != derived:
                raise _mismatch(record, column, stored, derived, source)
