"""The bulk path: many rows of one table in one statement stream.

For loads where the per-record path (``kernelindex.store.manifests.put``, one ORM object
and one history row at a time) would take hours: a synthetic catalogue of a million runs,
a restore. The caller hands plain column dictionaries whose manifests it has already
built and digested; nothing is compared with what is stored, so the rows must be new.
On PostgreSQL the rows stream through ``COPY``; on SQLite through one ``executemany`` of the
driver's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from kernelindex.db.base import Base
from kernelindex.store.version import note_hidden_write


def insert_rows(session: Session, table: type[Base] | Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert ``rows`` (dicts with the same keys, ids omitted) into ``table`` in the caller's transaction."""
    if not rows:
        return 0
    target: Table = table if isinstance(table, Table) else table.__table__  # type: ignore[assignment]
    note_hidden_write(session, target.name)
    connection = session.connection()
    dialect = connection.dialect
    driver_error = dialect.loaded_dbapi.Error
    try:
        if dialect.name == "postgresql":
            _copy(connection, target, rows)
        elif dialect.name == "sqlite":
            _execute_many(connection, target, rows)
        else:
            connection.execute(insert(target), list(rows))
    except driver_error as exc:
        # As SQLAlchemy raises it for its own statements (an ``IntegrityError`` for a taken
        # name), so callers that roll a unit back on a database error catch this one too.
        raise DBAPIError.instance(f"bulk insert into {target.name}", None, exc, driver_error, dialect=dialect) from exc
    return len(rows)


def _copy(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    columns = list(rows[0])
    raw = connection.connection.driver_connection
    assert raw is not None
    statement = f'COPY "{table.name}" ({", ".join(f"{c!s}" for c in columns)}) FROM STDIN'
    with raw.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([_copy_value(table, column, row[column]) for column in columns])


def _execute_many(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """One ``executemany`` on the driver's cursor, each value converted by its column type's own
    bind processor (what SQLAlchemy would send), without SQLAlchemy's per-row bookkeeping."""
    columns = list(rows[0])
    dialect = connection.dialect
    processors = [table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns]
    names = ", ".join(dialect.identifier_preparer.quote(name) for name in columns)
    marks = ", ".join("?" * len(columns))
    statement = f"INSERT INTO {dialect.identifier_preparer.format_table(table)} ({names}) VALUES ({marks})"
    raw = connection.connection.driver_connection
    assert raw is not None
    cursor = raw.cursor()
    try:
        cursor.executemany(
            statement,
            (
                tuple(
                    value if process is None or value is None else process(value)
                    for process, value in zip(processors, (row[name] for name in columns), strict=True)
                )
                for row in rows
            ),
        )
    finally:
        cursor.close()


def _copy_value(table: Table, column: str, value: Any) -> Any:
    # JSON columns go through COPY as their text; everything else psycopg adapts itself.
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, separators=(",", ":"))
    return value


def version_rows(kind: str, records: Iterable[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The ``manifest_version`` rows of freshly inserted records (their first and only version)."""
    return [
        {
            "kind": kind,
            "name": record["name"],
            "digest": record["digest"],
            "manifest_json": record["manifest_json"],
            "recorded_at": now,
            "superseded_at": None,
        }
        for record in records
    ]
