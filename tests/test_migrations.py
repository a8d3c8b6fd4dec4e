"""The migrations build the schema the models describe, and undo it, on both databases."""

from __future__ import annotations

from sqlalchemy import inspect, select, text
from sqlalchemy.orm import Session

from kernelindex.db import migrate
from kernelindex.db.base import Base
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.rerun_tables import RerunBundle, RerunCase, RerunResult
from kernelindex.db.tables import Run
from kernelindex.ingest.reruns.importer import import_bundled_reruns
from kernelindex.manifests.types import EvidenceLevel
from tests.rerun_bundles import v1_reruns


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


def test_migration_0015_moves_the_old_bound_aside_and_recomputes_the_speed_of_light(committed_catalogue_url):
    """Reruns stored before 0015 carried the bound at measured ceilings as their only bound and no
    operator: the upgrade keeps that bound as the achievable one, recomputes the speed of light from
    each stored bundle, reads the lease from it, and leaves no rerun replicated."""
    url = committed_catalogue_url
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    assert all(result.error is None for result in import_bundled_reruns(sessions, v1_reruns()))
    with sessions() as session:
        imported = _rerun_figures(session)
    # An operator-less store whose one rerun was marked replicated, as 0013 stores could be.
    with sessions.begin() as session:
        run = session.scalars(select(Run).join(RerunResult, RerunResult.run_id == Run.id).limit(1)).one()
        run.evidence = EvidenceLevel.REPLICATED
    engine.dispose()
    migrate.downgrade(url, "0013")
    engine = make_engine(url)
    with engine.begin() as connection:
        # Before 0015 the one stored bound was the achievable one, as the downgrade leaves it.
        rows = connection.execute(text("SELECT result_id, position, bound_ns FROM rerun_case")).all()
        assert {(r, p): bound for r, p, bound in rows} == {key: pair[1] for key, pair in imported.items()}
        connection.execute(text("UPDATE run SET evidence = 'replicated' WHERE id = :id"), {"id": run.id})
    engine.dispose()
    migrate.upgrade(url)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        upgraded = _rerun_figures(session)
        assert session.scalar(select(Run.evidence).where(Run.id == run.id)) == "verified"
        assert set(session.scalars(select(RerunBundle.operator))) == {None}
        sessions_read = set(session.scalars(select(RerunBundle.session_id)))
    engine.dispose()
    assert len(sessions_read) == 3 and "" not in sessions_read
    assert upgraded == imported


def _rerun_figures(session: Session) -> dict[tuple[int, int], tuple[int, int]]:
    rows = session.execute(
        select(RerunCase.result_id, RerunCase.position, RerunCase.bound_ns, RerunCase.achievable_bound_ns)
    ).all()
    assert rows and all(sol > 0 and achievable > sol for _, _, sol, achievable in rows)
    return {(result, position): (sol, achievable) for result, position, sol, achievable in rows}
