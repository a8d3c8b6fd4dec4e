"""The database unreachable or read-only: a clear 503 (page and problem JSON) with
``Retry-After``, and the site back by itself once the database is, without a restart.

The shared PostgreSQL server is never stopped: a scratch database is renamed away and
back, made read-only and writable again, or the app is pointed at a port nobody serves.
"""

from __future__ import annotations

import shutil
import time

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, InternalError, OperationalError, ProgrammingError

from kernelindex.app import create_app
from kernelindex.settings import Settings
from kernelindex.store.version import MAX_LAG_S
from kernelindex.web.errors import NO_TABLES, READ_ONLY, RETRY_AFTER_S, UNREACHABLE, database_trouble
from tests.factories import csrf_token
from tests.servers import free_port

SECRET = "a fixed secret, so that starting the app needs no write"
PAGE = "/workloads"
JSON = "/api/v1/workloads"


def app_client(url: str) -> TestClient:
    return TestClient(create_app(Settings(database_url=url, secret_key=SECRET, public_url="http://testserver")))


def assert_unavailable(client: TestClient, message: str) -> None:
    page = client.get(PAGE, headers={"Accept": "text/html"})
    assert page.status_code == 503, page.text
    assert page.headers["retry-after"] == str(RETRY_AFTER_S)
    assert page.headers["content-type"].startswith("text/html")
    soup = BeautifulSoup(page.text, "html.parser")
    assert soup.select_one("h1").get_text() == "Service unavailable"
    assert message in soup.select_one("section.error").get_text()

    problem = client.get(JSON)
    assert problem.status_code == 503
    assert problem.headers["retry-after"] == str(RETRY_AFTER_S)
    assert problem.headers["content-type"] == "application/problem+json"
    assert problem.json() == {"type": "about:blank", "title": "Service unavailable", "status": 503, "detail": message}


def assert_available(client: TestClient) -> None:
    assert client.get(PAGE).status_code == 200
    assert client.get(JSON).status_code == 200


def sign_in_attempt(client: TestClient) -> int:
    """A wrong password: a write (the sign-in rate-limit counter) before a 400."""
    data = {"csrf_token": csrf_token(client, "/signin"), "handle": "nobody", "password": "not the password"}
    response = client.post("/signin", data=data, follow_redirects=False)
    if response.status_code == 503:
        assert response.headers["retry-after"] == str(RETRY_AFTER_S)
        assert READ_ONLY in BeautifulSoup(response.text, "html.parser").get_text()
    return response.status_code


# --- SQLite ---------------------------------------------------------------------------------


def test_sqlite_file_unreachable_answers_503_then_recovers_when_it_is_back(sqlite_loaded_template, tmp_path):
    folder = tmp_path / "not-mounted-yet"
    with app_client(f"sqlite:///{folder / 'store.db'}") as client:
        assert_unavailable(client, UNREACHABLE)
        folder.mkdir()
        shutil.copy(sqlite_loaded_template, folder / "store.db")
        assert_available(client)


def test_sqlite_read_only_file_serves_pages_and_refuses_writes_with_503(sqlite_loaded_template, tmp_path):
    path = tmp_path / "store.db"
    shutil.copy(sqlite_loaded_template, path)
    with app_client(f"sqlite:///file:{path}?mode=ro&uri=true") as client:
        assert_available(client)
        assert sign_in_attempt(client) == 503
    with app_client(f"sqlite:///{path}") as client:
        assert sign_in_attempt(client) == 400


# --- PostgreSQL -----------------------------------------------------------------------------


@pytest.fixture
def pg_catalogue(postgres, pg_loaded_template) -> str:  # type: ignore[no-untyped-def]
    """A scratch copy of the loaded catalogue this test may rename and reconfigure."""
    return postgres.create("trouble", template=pg_loaded_template)


def terminate(connection, database: str) -> None:  # type: ignore[no-untyped-def]
    connection.execute(
        text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :name AND pid <> pg_backend_pid()"
        ),
        {"name": database},
    )


def test_postgresql_nothing_listening_answers_503():
    with app_client(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/kernelindex") as client:
        assert_unavailable(client, UNREACHABLE)


def test_postgresql_database_gone_answers_503_then_recovers_when_it_is_back(postgres, pg_catalogue):
    name = make_url(pg_catalogue).database
    away = f"{name}_away"
    with app_client(pg_catalogue) as client:
        assert_available(client)
        with postgres.admin.connect() as connection:
            terminate(connection, name)
            connection.execute(text(f'ALTER DATABASE "{name}" RENAME TO "{away}"'))
        try:
            # The worker's listener stops trusting its cached pages once it notices its
            # connection is gone: at once, and never later than MAX_LAG_S.
            deadline = time.monotonic() + MAX_LAG_S
            while client.get(PAGE).status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert_unavailable(client, UNREACHABLE)
        finally:
            with postgres.admin.connect() as connection:
                connection.execute(text(f'ALTER DATABASE "{away}" RENAME TO "{name}"'))
        assert_available(client)


def test_postgresql_read_only_serves_pages_refuses_writes_then_recovers(postgres, pg_catalogue):
    name = make_url(pg_catalogue).database
    with app_client(pg_catalogue) as client:
        assert sign_in_attempt(client) == 400
        with postgres.admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
            terminate(connection, name)
        assert_available(client)
        assert sign_in_attempt(client) == 503
        with postgres.admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" RESET default_transaction_read_only'))
            terminate(connection, name)
        assert sign_in_attempt(client) == 400


# --- Starting without KERNELINDEX_SECRET_KEY: the key is in the store -------------------------


def keyless_client(url: str) -> TestClient:
    """A worker whose session key is generated into the store (no ``secret_key`` setting)."""
    return TestClient(create_app(Settings(database_url=url, public_url="http://testserver")))


def test_a_worker_starts_while_the_database_is_gone_and_picks_the_key_up_later(postgres, pg_catalogue):
    name = make_url(pg_catalogue).database
    away = f"{name}_away"
    with postgres.admin.connect() as connection:
        connection.execute(text(f'ALTER DATABASE "{name}" RENAME TO "{away}"'))
    try:
        with keyless_client(pg_catalogue) as client:
            assert_unavailable(client, UNREACHABLE)
            with postgres.admin.connect() as connection:
                connection.execute(text(f'ALTER DATABASE "{away}" RENAME TO "{name}"'))
            assert_available(client)
            # The key was read from the store: sessions (and their CSRF tokens) work.
            assert sign_in_attempt(client) == 400
    finally:
        with postgres.admin.connect() as connection:
            if connection.scalar(text("SELECT 1 FROM pg_database WHERE datname = :away"), {"away": away}):
                connection.execute(text(f'ALTER DATABASE "{away}" RENAME TO "{name}"'))


def test_a_worker_over_an_empty_postgresql_database_names_the_command_to_run(postgres):
    with keyless_client(postgres.create("no_tables")) as client:
        assert_unavailable(client, NO_TABLES)
        assert "kernelindex db upgrade" in NO_TABLES


def test_a_worker_over_an_empty_sqlite_file_names_the_command_to_run(tmp_path):
    with keyless_client(f"sqlite:///{tmp_path / 'store.db'}") as client:
        assert_unavailable(client, NO_TABLES)
    # With the key configured, the pages themselves find no tables: the same answer.
    with app_client(f"sqlite:///{tmp_path / 'store.db'}") as client:
        assert_unavailable(client, NO_TABLES)


class UndefinedTable(Exception):
    sqlstate = "42P01"


class ReadOnlyTransaction(Exception):
    sqlstate = "25006"


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (OperationalError("SELECT 1", {}, Exception("connection refused")), UNREACHABLE),
        (OperationalError("INSERT …", {}, Exception("attempt to write a readonly database")), READ_ONLY),
        (
            InternalError("INSERT …", {}, ReadOnlyTransaction("cannot execute INSERT in a read-only transaction")),
            READ_ONLY,
        ),
        (ProgrammingError("SELECT …", {}, UndefinedTable('relation "workload" does not exist')), NO_TABLES),
        (OperationalError("SELECT …", {}, Exception("no such table: workload")), NO_TABLES),
        # A bug (a broken constraint, a bad query) is no reason to tell people to come back later.
        (IntegrityError("INSERT …", {}, Exception("UNIQUE constraint failed")), None),
        (ProgrammingError("SELEC 1", {}, Exception("syntax error")), None),
    ],
)
def test_only_database_trouble_becomes_a_503(error, message):
    assert database_trouble(error) == message
