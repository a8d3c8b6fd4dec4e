"""Alembic environment: runs migrations against the URL given by the caller or the settings."""

from __future__ import annotations

from alembic import context

import kernelindex.db  # noqa: F401  (registers every table on Base.metadata)
from kernelindex.db.base import Base
from kernelindex.db.engine import make_engine
from kernelindex.db.search_tables import POSTGRESQL_ONLY_INDEXES
from kernelindex.db.tables import POSTGRESQL_ONLY_WORKLOAD_INDEXES, SQLITE_ONLY_INDEXES
from kernelindex.settings import Settings

config = context.config
target_metadata = Base.metadata


def database_url() -> str:
    return config.attributes.get("database_url") or Settings().database_url


def include_object(obj, name, type_, reflected, compare_to) -> bool:  # type: ignore[no-untyped-def]
    """Leave out of autogenerate the indexes of one database that no model describes."""
    one_database = POSTGRESQL_ONLY_INDEXES | POSTGRESQL_ONLY_WORKLOAD_INDEXES | SQLITE_ONLY_INDEXES
    return not (type_ == "index" and reflected and compare_to is None and name in one_database)


def run_migrations_offline() -> None:
    context.configure(url=database_url(), target_metadata=target_metadata, render_as_batch=True, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(database_url())
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
        render_as_batch=True,
        compare_type=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
