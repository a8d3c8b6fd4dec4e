"""The database unreachable, silent or read-only: a clear 503 (page and problem JSON) with
``Retry-After``, within the configured timeouts, and the site back by itself within seconds
once the database is, without a restart.

The shared PostgreSQL server is never stopped: a scratch database is renamed away and back,
dropped and created again, made read-only and writable again, its connections are
terminated, or the app is pointed at a port nobody serves, at a server that accepts and
never answers, or through a proxy that is paused. The SQLite file is moved away and back.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy.exc
from bs4 import BeautifulSoup
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, InternalError, OperationalError, ProgrammingError
from sqlalchemy.pool import NullPool

from kernelindex.app import create_app
from kernelindex.cli import main
from kernelindex.db.engine import ANSWER_GRACE_S, Timeouts, make_engine
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings
from kernelindex.store import ingest as store_ingest
from kernelindex.store.version import MAX_LAG_S, VersionReader
from kernelindex.web.errors import NO_TABLES, READ_ONLY, RETRY_AFTER_S, TOO_SLOW, UNREACHABLE, database_trouble
from tests.conftest import POSTGRES_URL
from tests.database_servers import PausableProxy, silent_server
from tests.factories import csrf_token
from tests.servers import free_port, serving, snapshot_api

SECRET = "a fixed secret, so that starting the app needs no write"
PAGE = "/workloads"
JSON = "/api/v1/workloads"


# Small limits, so that a test of a silent database takes seconds (the defaults are 5, 10 and 5).
CONNECT_S = 2  # libpq's least
STATEMENT_S = 1.0
POOL_S = 1.0
# The longest a request may wait for a database that stopped answering: the ping of a pooled
# connection, then a new connection, each bounded; and a second of slack for a busy machine.
SILENT_LIMIT_S = 2 * CONNECT_S + 1
# Pages of every kind, some of them never asked for before the database goes away.
PAGES = ["/", "/workloads", "/gpus", "/records", "/regressions", "/search?q=gemm", "/index.json", JSON]
UNCACHED = ["/workloads?sort=name", "/gpus.json", "/records.json", "/api/v1/search?q=moe", "/sources/sol-execbench"]


def app_client(url: str, fast: bool = False, cache: bool = True) -> TestClient:
    limits = {"db_connect_timeout_s": CONNECT_S, "db_statement_timeout_s": STATEMENT_S, "db_pool_timeout_s": POOL_S}
    settings = Settings(
        database_url=url,
        secret_key=SECRET,
        public_url="http://testserver",
        response_cache_mb=64 if cache else 0,
        **(limits if fast else {}),
    )
    return TestClient(create_app(settings))


def assert_unavailable(client: TestClient, message: str | tuple[str, ...], within_s: float | None = None) -> None:
    """Both the page and the JSON answer 503 saying ``message`` (one of them), each within ``within_s``."""
    messages = (message,) if isinstance(message, str) else message
    started = time.monotonic()
    page = client.get(PAGE, headers={"Accept": "text/html"})
    if within_s is not None:
        assert time.monotonic() - started < within_s
    assert page.status_code == 503, page.text
    assert page.headers["retry-after"] == str(RETRY_AFTER_S)
    assert page.headers["content-type"].startswith("text/html")
    soup = BeautifulSoup(page.text, "html.parser")
    assert soup.select_one("h1").get_text() == "Service unavailable"
    assert any(text in soup.select_one("section.error").get_text() for text in messages)

    started = time.monotonic()
    problem = client.get(JSON)
    if within_s is not None:
        assert time.monotonic() - started < within_s
    assert problem.status_code == 503
    assert problem.headers["retry-after"] == str(RETRY_AFTER_S)
    assert problem.headers["content-type"] == "application/problem+json"
    body = problem.json()
    assert body["detail"] in messages
    assert body == {"type": "about:blank", "title": "Service unavailable", "status": 503, "detail": body["detail"]}


def assert_every_page_back(client: TestClient, pages: list[str], within_s: float) -> None:
    """Every page of ``pages`` answers 200 again, the first within ``within_s``."""
    deadline = time.monotonic() + within_s
    while client.get(pages[0]).status_code != 200:
        assert time.monotonic() < deadline, f"{pages[0]} still unavailable after {within_s} s"
        time.sleep(0.1)
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, (page, response.text[:300])


def versions(client: TestClient) -> VersionReader:
    reader = client.app.state.versions  # type: ignore[attr-defined]
    assert isinstance(reader, VersionReader)
    return reader


def wait_until_noticed(client: TestClient) -> None:
    """The worker's listener stops trusting its cached pages once it notices its connection is
    gone or silent: at once, and never later than MAX_LAG_S."""
    deadline = time.monotonic() + MAX_LAG_S
    while client.get(PAGE).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.01)


def wait_for_listener(client: TestClient, within_s: float) -> None:
    """The worker's LISTEN connection is up and caught up (pages are checked from memory)."""
    deadline = time.monotonic() + within_s
    while not versions(client).in_memory():
        assert time.monotonic() < deadline, f"the version listener did not catch up within {within_s} s"
        time.sleep(0.05)


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


def test_sqlite_file_missing_answers_503_and_no_page_request_creates_it(sqlite_loaded_template, tmp_path):
    path = tmp_path / "serve.db"
    with app_client(f"sqlite:///{path}") as client:
        assert_unavailable(client, UNREACHABLE)
        assert client.get("/gpus").status_code == 503
        assert not path.exists()
        shutil.copy(sqlite_loaded_template, path)
        assert_every_page_back(client, PAGES, within_s=1)


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "uncached"])
def test_sqlite_file_moved_away_and_back_then_every_page_answers_at_once(sqlite_loaded_template, tmp_path, cache):
    path = tmp_path / "serve.db"
    away = tmp_path / "elsewhere" / "serve.db"
    away.parent.mkdir()
    shutil.copy(sqlite_loaded_template, path)
    with app_client(f"sqlite:///{path}", cache=cache) as client:
        for page in PAGES:  # every pooled connection opened, every page cached
            assert client.get(page).status_code == 200, page
        path.rename(away)
        try:
            assert_unavailable(client, UNREACHABLE, within_s=1)
            for page in PAGES + UNCACHED:
                assert client.get(page).status_code == 503, page
            assert not path.exists(), "a page request created an empty store"
        finally:
            away.rename(path)
        assert_every_page_back(client, PAGES + UNCACHED, within_s=1)
    # Nothing was lost or left beside it: the same store, with its tables.
    assert sorted(entry.name for entry in tmp_path.iterdir() if entry.is_file() and "serve.db" in entry.name) in (
        ["serve.db"],
        ["serve.db", "serve.db-shm", "serve.db-wal"],
    )


RETITLED = "A title changed in the store that came back"


def retitle_first_workload(connection: Any) -> str:
    """Change the first workload's title behind the app's back (no page version changes, as in a
    store restored from a backup or recreated); returns the workload's page."""
    workload_id, name = connection.execute(text("SELECT id, name FROM workload ORDER BY id LIMIT 1")).one()
    connection.execute(
        text("UPDATE workload SET title = :title WHERE id = :id"), {"title": RETITLED, "id": workload_id}
    )
    return f"/workloads/{name}"


def test_sqlite_file_replaced_by_another_store_is_the_one_served(sqlite_loaded_template, tmp_path):
    path = tmp_path / "serve.db"
    shutil.copy(sqlite_loaded_template, path)
    replacement = tmp_path / "new.db"
    shutil.copy(sqlite_loaded_template, replacement)
    engine = create_engine(f"sqlite:///{replacement}", poolclass=NullPool)
    with engine.begin() as connection:
        page = retitle_first_workload(connection)
    engine.dispose()
    with app_client(f"sqlite:///{path}") as client:
        assert_available(client)
        assert RETITLED not in client.get(page).text  # cached now
        empty = tmp_path / "empty.db"
        empty.touch()  # a store recreated empty, put in its place
        empty.rename(path)
        assert_unavailable(client, NO_TABLES)
        replacement.rename(path)  # another store, with the same page versions
        assert_every_page_back(client, PAGES, within_s=1)
        assert RETITLED in client.get(page).text


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


def pg_url(port: int, database: str = "kernelindex") -> str:
    return make_url(POSTGRES_URL).set(host="127.0.0.1", port=port, database=database).render_as_string(False)


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "uncached"])
def test_postgresql_that_accepts_but_never_answers_fails_fast_with_503(cache):
    with silent_server() as port, app_client(pg_url(port), fast=True, cache=cache) as client:
        assert_unavailable(client, UNREACHABLE, within_s=CONNECT_S + 1)


@contextmanager
def paused(proxy: PausableProxy) -> Iterator[None]:
    proxy.pause()
    try:
        yield
    finally:
        proxy.resume()


def test_postgresql_that_stops_answering_fails_fast_then_pool_and_listener_recover(pg_catalogue):
    target = make_url(pg_catalogue)
    proxy = PausableProxy((target.host or "127.0.0.1", target.port or 5432))
    with proxy, app_client(pg_url(proxy.port, str(target.database)), fast=True) as client:
        for page in PAGES:
            assert client.get(page).status_code == 200, page
        wait_for_listener(client, within_s=5)
        with paused(proxy):
            # Cached pages may be served while the listener has not noticed, never past MAX_LAG_S.
            wait_until_noticed(client)
            # Connections open, nothing answered: each request gives up within its limits.
            assert_unavailable(client, (UNREACHABLE, TOO_SLOW), within_s=SILENT_LIMIT_S)
            for page in UNCACHED[:2]:
                started = time.monotonic()
                assert client.get(page).status_code == 503, page
                assert time.monotonic() - started < SILENT_LIMIT_S, page
        # The same connections answer again, or are replaced: every page within seconds.
        assert_every_page_back(client, PAGES + UNCACHED, within_s=STATEMENT_S + ANSWER_GRACE_S + CONNECT_S)
        wait_for_listener(client, within_s=10)


def test_postgresql_connections_terminated_are_replaced_at_once(postgres, pg_catalogue):
    name = make_url(pg_catalogue).database
    with app_client(pg_catalogue, fast=True) as client:
        assert_available(client)
        wait_for_listener(client, within_s=5)
        with postgres.admin.connect() as connection:
            terminate(connection, name)
        # The pool's ping and the version reader open new connections: no request fails.
        for page in PAGES + UNCACHED:
            assert client.get(page).status_code == 200, page
        wait_for_listener(client, within_s=5)


def test_postgresql_database_dropped_and_created_again_then_every_page_answers(
    postgres, pg_catalogue, pg_loaded_template
):
    name = make_url(pg_catalogue).database
    template = make_url(pg_loaded_template).database
    engine = create_engine(pg_catalogue, poolclass=NullPool)
    with engine.connect() as connection:
        first = connection.scalar(text("SELECT name FROM workload ORDER BY id LIMIT 1"))
    engine.dispose()
    with app_client(pg_catalogue, fast=True) as client:
        for page in [*PAGES, f"/workloads/{first}"]:
            assert client.get(page).status_code == 200, page
        wait_for_listener(client, within_s=5)
        assert RETITLED not in client.get(f"/workloads/{first}").text  # cached now
        with postgres.admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        try:
            wait_until_noticed(client)
            assert_unavailable(client, UNREACHABLE, within_s=CONNECT_S + 1)
            for page in UNCACHED:
                assert client.get(page).status_code == 503, page
        finally:
            with postgres.admin.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
        engine = create_engine(pg_catalogue, poolclass=NullPool)
        with engine.begin() as connection:  # what comes back differs, with the same page versions
            changed = retitle_first_workload(connection)
        engine.dispose()
        assert changed == f"/workloads/{first}"
        assert_every_page_back(client, PAGES + UNCACHED, within_s=CONNECT_S)
        assert RETITLED in client.get(changed).text
        wait_for_listener(client, within_s=10)
        assert RETITLED in client.get(changed).text


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
    (tmp_path / "store.db").touch()
    with keyless_client(f"sqlite:///{tmp_path / 'store.db'}") as client:
        assert_unavailable(client, NO_TABLES)
    # With the key configured, the pages themselves find no tables: the same answer.
    with app_client(f"sqlite:///{tmp_path / 'store.db'}") as client:
        assert_unavailable(client, NO_TABLES)


class UndefinedTable(Exception):
    sqlstate = "42P01"


class ReadOnlyTransaction(Exception):
    sqlstate = "25006"


class QueryCanceled(Exception):
    sqlstate = "57014"


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
        (OperationalError("SELECT …", {}, QueryCanceled("canceling statement due to statement timeout")), TOO_SLOW),
        (sqlalchemy.exc.TimeoutError("QueuePool limit of size 10 overflow 20 reached, connection timed out"), TOO_SLOW),
        (OperationalError("SELECT …", {}, Exception("no such table: workload")), NO_TABLES),
        # A bug (a broken constraint, a bad query) is no reason to tell people to come back later.
        (IntegrityError("INSERT …", {}, Exception("UNIQUE constraint failed")), None),
        (ProgrammingError("SELEC 1", {}, Exception("syntax error")), None),
    ],
)
def test_only_database_trouble_becomes_a_503(error, message):
    assert database_trouble(error) == message


# --- The limits themselves --------------------------------------------------------------------


def test_a_statement_past_its_timeout_is_cancelled_and_reported_as_too_slow(postgres):
    engine = make_engine(postgres.create("slow"), serving=True, timeouts=Timeouts(CONNECT_S, STATEMENT_S, POOL_S))
    try:
        with engine.connect() as connection:
            started = time.monotonic()
            with pytest.raises(OperationalError) as raised:
                connection.execute(text("SELECT pg_sleep(5)"))
            assert time.monotonic() - started < STATEMENT_S + ANSWER_GRACE_S
        assert database_trouble(raised.value) == TOO_SLOW
        with engine.connect() as connection:  # the connection was kept and works
            assert connection.scalar(text("SELECT 1")) == 1
    finally:
        engine.dispose()


def test_a_connection_whose_server_stops_answering_gives_up_and_is_replaced(postgres):
    target = make_url(postgres.create("silent"))
    proxy = PausableProxy((target.host or "127.0.0.1", target.port or 5432))
    with proxy:
        url = pg_url(proxy.port, str(target.database))
        engine = make_engine(url, serving=True, timeouts=Timeouts(CONNECT_S, STATEMENT_S, POOL_S))
        try:
            with engine.connect() as connection:
                assert connection.scalar(text("SELECT 1")) == 1
                with paused(proxy):
                    started = time.monotonic()
                    with pytest.raises(OperationalError) as raised:
                        connection.execute(text("SELECT 2"))
                    assert time.monotonic() - started < STATEMENT_S + ANSWER_GRACE_S + 1
                assert raised.value.connection_invalidated
            assert database_trouble(raised.value) == TOO_SLOW
            with engine.connect() as connection:
                assert connection.scalar(text("SELECT 3")) == 3
        finally:
            engine.dispose()


# --- An ingest whose database goes away --------------------------------------------------------


def stored_workloads(url: str) -> int:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        return int(connection.scalar(text("SELECT count(*) FROM workload")) or 0)


def upstream_with_outage(url: str, outage: Callable[[], None], stored: list[int]) -> Any:
    """The bundled SOL-ExecBench API, which calls ``outage`` as soon as the ingest has committed
    its first workloads to ``url`` (their number goes to ``stored``)."""
    api = snapshot_api(BUNDLED_SNAPSHOT)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not stored and (workloads := stored_workloads(url)):
            stored.append(workloads)
            outage()
        await api(scope, receive, send)

    return app


@pytest.mark.parametrize(
    ("outage", "when"),
    [("dropped", "between writes"), ("dropped", "while writing"), ("renamed away", "between writes")],
)
def test_an_ingest_whose_postgresql_database_goes_away_says_so_in_one_sentence(
    postgres, monkeypatch, caplog, outage, when
):
    url = postgres.create("ingest_outage")
    name = make_url(url).database
    away = f"{name}_away"

    def go_away() -> None:
        with postgres.admin.connect() as connection:
            if outage == "dropped":
                connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
            else:
                terminate(connection, name)
                connection.execute(text(f'ALTER DATABASE "{name}" RENAME TO "{away}"'))

    stored: list[int] = []
    if when == "while writing":
        # Groups of 50 kernels; the database goes while the second group is being written.
        monkeypatch.setattr("kernelindex.ingest.runner.GROUP_UNITS", 50)
        real_new = store_ingest.apply_new_batches

        def write_then_go(session, source, batches, now):  # type: ignore[no-untyped-def]
            if stored_workloads(url):
                stored.append(stored_workloads(url))
                go_away()
            return real_new(session, source, batches, now)

        monkeypatch.setattr("kernelindex.ingest.runner.apply_new_batches", write_then_go)
    upstream = snapshot_api(BUNDLED_SNAPSHOT) if when == "while writing" else upstream_with_outage(url, go_away, stored)
    with serving(upstream) as base:
        result = CliRunner().invoke(
            main, ["ingest", "sol-execbench", "--base-url", f"{base}/api", "--database-url", url]
        )
    assert stored, "the ingest ended before it had committed anything"
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    # Nor in the log, which a terminal shows: the lost connection is no batch's fault.
    assert not [record.getMessage() for record in caplog.records if record.exc_info]
    said = [line for line in result.output.splitlines() if "database" in line.lower()]
    assert len(said) == 1, result.output
    assert said[0].startswith("The database went away during the NVIDIA SOL-ExecBench ingest"), said
    assert "run the ingest again" in said[0]
    assert "postgresql+psycopg://postgres@127.0.0.1" in said[0]
    if outage == "renamed away":
        with postgres.admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{away}" RENAME TO "{name}"'))
        engine = create_engine(url, poolclass=NullPool)
        with engine.connect() as connection:  # what was committed before the outage is kept
            assert connection.scalar(text("SELECT count(*) FROM workload")) >= stored[0]
        engine.dispose()
