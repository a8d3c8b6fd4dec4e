"""Test databases: every store and web test runs on SQLite and on PostgreSQL.

- ``db``: an empty, migrated store, fresh for each test (a copy of a migrated SQLite
  file; on PostgreSQL a transaction rolled back at the end, commits becoming savepoints).
- ``loaded_db``: the same, holding the bundled SOL-ExecBench snapshot (ingested once
  per session into a template, then isolated per test the same way).
- ``database_url``: a brand-new database of each backend that real commits, other
  processes and the CLI can use.
- ``client``, ``empty_client`` and ``make_app`` (tests/fixtures_web.py): the app over these.

The session-scoped templates are made once per pytest-xdist worker: each worker has its own
temporary folder and its own PostgreSQL databases (uuid names), so workers never share one.

PostgreSQL is expected at ``KERNELINDEX_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``). Locally its tests are skipped
when it is not running; with ``KERNELINDEX_TEST_REQUIRE_ALL=1`` (set by ``.ci/run``)
any skipped test fails the run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from argon2 import PasswordHasher, profiles
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.accounts import passwords
from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings
from kernelindex.store import accounts as store_accounts

POSTGRES_URL = os.environ.get("KERNELINDEX_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REQUIRE_ALL = os.environ.get("KERNELINDEX_TEST_REQUIRE_ALL") == "1"
# The ingest memory ceiling bounds an ingest's process (``kernelindex ingest``, a first start);
# a test worker that ingests in-process also holds torch and many catalogues, well past 1 GiB.
# The ceiling's own tests (tests/test_hostile_upstreams.py) set theirs, in a process of its own.
os.environ.setdefault("KERNELINDEX_INGEST_MAX_MEMORY_MB", "16384")
BACKENDS = ["sqlite", "postgresql"]
TEST_DB_PREFIX = "kernelindex_test_"

# The app and its browsers over these stores: client, empty_client, make_app.
pytest_plugins = ["tests.fixtures_web"]


@dataclass
class StoreUnderTest:
    backend: str
    url: str
    sessions: sessionmaker[Session]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a skipped test is a failure: a green run must have run everything."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if REQUIRE_ALL and reporter is not None and reporter.stats.get("skipped"):
        skipped = len(reporter.stats["skipped"])
        reporter.write_line(f"KERNELINDEX_TEST_REQUIRE_ALL=1 and {skipped} test(s) were skipped: failing.", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def exports_in_a_folder_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Apps made with default settings (test servers, the CLI, worker processes) cache their
    export in this session's folder, not in the /tmp/kernelindex-exports every run shares."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELINDEX_EXPORT_DIR", str(tmp_path_factory.mktemp("exports")))
        yield


@pytest.fixture(scope="session", autouse=True)
def cheap_password_hashes() -> Iterator[None]:
    """Argon2id at its cheapest in this process: the production parameters (64 MiB, three passes)
    cost a tenth of a second per sign-in, and the suite signs in thousands of times. Hashes
    carry their parameters, so verifying works as in production; servers and commands the
    tests start in their own processes hash with the real parameters."""
    with pytest.MonkeyPatch.context() as patch:
        cheap = PasswordHasher.from_parameters(profiles.CHEAPEST)
        patch.setattr(passwords, "_hasher", cheap)
        patch.setattr(store_accounts, "DUMMY_HASH", cheap.hash("not a password anyone has"))
        yield


# --- PostgreSQL ---------------------------------------------------------------------


class Postgres:
    """Creates and drops scratch databases next to the configured one."""

    def __init__(self, url: str):
        self.url = make_url(url)
        self.admin = create_engine(self.url, isolation_level="AUTOCOMMIT")
        self.created: list[str] = []

    def create(self, label: str, template: str | None = None) -> str:
        """A new database, empty or a copy of the database at ``template`` (which nobody may be connected to)."""
        name = f"{TEST_DB_PREFIX}{label}_{uuid.uuid4().hex[:8]}"
        copy = f' TEMPLATE "{make_url(template).database}"' if template else ""
        with self.admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"{copy}'))
        self.created.append(name)
        return self.url.set(database=name).render_as_string(hide_password=False)

    def drop_all(self) -> None:
        """Drop them all at once: each DROP DATABASE waits for a checkpoint (two seconds on a busy
        machine), and drops running side by side share one, where one after another took a
        worker a minute."""
        if self.created:
            dropper = create_engine(self.url, isolation_level="AUTOCOMMIT", pool_size=len(self.created))
            with ThreadPoolExecutor(max_workers=len(self.created)) as pool:
                list(pool.map(lambda name: _drop(dropper, name), self.created))
            dropper.dispose()
        self.admin.dispose()


def _drop(engine: Engine, name: str) -> None:
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    server = Postgres(POSTGRES_URL)
    try:
        with server.admin.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:
        message = f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}"
        if REQUIRE_ALL:
            pytest.fail(message)
        pytest.skip(message)
    yield server
    server.drop_all()


@pytest.fixture(scope="session")
def pg_empty_url(postgres: Postgres) -> str:
    url = postgres.create("empty")
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="session")
def pg_loaded_template(postgres: Postgres) -> str:
    """The bundled snapshot, ingested once per session into a database nothing stays connected
    to: copying it (``Postgres.create(..., template=)``) takes a second, an ingest ten."""
    url = postgres.create("template")
    _load_bundled_snapshot(url)
    return url


@pytest.fixture(scope="session")
def pg_loaded_url(postgres: Postgres, pg_loaded_template: str) -> str:
    return postgres.create("loaded", template=pg_loaded_template)


@pytest.fixture(scope="session")
def pg_engines() -> Iterator[dict[str, Engine]]:
    engines: dict[str, Engine] = {}
    yield engines
    for engine in engines.values():
        engine.dispose()


def _rolled_back(url: str, engines: dict[str, Engine]) -> Iterator[sessionmaker[Session]]:
    engine = engines.setdefault(url, make_engine(url))
    with engine.connect() as connection:
        transaction = connection.begin()
        yield sessionmaker(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
        transaction.rollback()


# --- SQLite -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sqlite_empty_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("templates") / "empty.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def sqlite_loaded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("templates") / "loaded.db"
    _load_bundled_snapshot(f"sqlite:///{path}")
    return path


def _copied(template: Path, tmp_path: Path) -> Iterator[StoreUnderTest]:
    path = tmp_path / "store.db"
    shutil.copy(template, path)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    yield StoreUnderTest("sqlite", url, make_sessionmaker(engine))
    engine.dispose()


def _load_bundled_snapshot(url: str) -> None:
    migrate.upgrade(url)
    engine = make_engine(url)
    settings = Settings(database_url=url)
    summary = ingest(make_sessionmaker(engine), settings, "sol-execbench", snapshot=BUNDLED_SNAPSHOT)
    engine.dispose()
    assert summary.status == "succeeded", summary.errors


# --- The fixtures tests use -------------------------------------------------------------


def _isolated(request: pytest.FixtureRequest, tmp_path: Path, content: str) -> Iterator[StoreUnderTest]:
    """A per-test store of the requested backend holding ``content`` ("empty" or "loaded")."""
    if request.param == "sqlite":
        yield from _copied(request.getfixturevalue(f"sqlite_{content}_template"), tmp_path)
    else:
        url = request.getfixturevalue(f"pg_{content}_url")
        for sessions in _rolled_back(url, request.getfixturevalue("pg_engines")):
            yield StoreUnderTest("postgresql", url, sessions)


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    yield from _isolated(request, tmp_path, "empty")


@pytest.fixture(params=BACKENDS)
def loaded_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    yield from _isolated(request, tmp_path, "loaded")


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty (unmigrated) database that may be committed to for real."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    return request.getfixturevalue("postgres").create("fresh")


@pytest.fixture(params=BACKENDS)
def committed_catalogue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of each backend holding the bundled snapshot for real (committed), for
    servers and processes that open their own connections."""
    if request.param == "sqlite":
        path = tmp_path / "catalogue.db"
        shutil.copy(request.getfixturevalue("sqlite_loaded_template"), path)
        return f"sqlite:///{path}"
    postgres, template = request.getfixturevalue("postgres"), request.getfixturevalue("pg_loaded_template")
    return postgres.create("catalogue", template=template)
