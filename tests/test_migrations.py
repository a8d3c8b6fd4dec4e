"""The migrations build the schema the models describe, and undo it, on both databases."""

from __future__ import annotations

from sqlalchemy import inspect

from kernelindex.db import migrate
from kernelindex.db.base import Base
from kernelindex.db.engine import make_engine


def test_migrations_upgrade_downgrade_and_upgrade_again_match_the_models(database_url):
    migrate.upgrade(database_url)
    migrate.check(database_url)
    migrate.downgrade(database_url, "base")
    engine = make_engine(database_url)
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    engine.dispose()
    migrate.upgrade(database_url)
    migrate.check(database_url)
    engine = make_engine(database_url)
    assert set(inspect(engine).get_table_names()) == set(Base.metadata.tables) | {"alembic_version"}
    engine.dispose()
