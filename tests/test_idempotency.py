"""The double-submit guard is held by the database, and API writes accept an
``Idempotency-Key``: parallel identical posts against a real server store one row, on SQLite
and PostgreSQL; a retry with the same key gets the first answer, a different body a 422."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from kernelindex.app import create_app
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Attestation, Run
from kernelindex.settings import Settings
from kernelindex.store import accounts, attestations
from kernelindex.store.attestations import DUPLICATE_WINDOW, SubmissionError
from tests.conftest import BACKENDS
from tests.factories import PASSWORD
from tests.servers import serving

RUN = "sol-submission-16893"
BODY = {"type": "reproduced", "body": "Same figure on my B200."}
PARALLEL = 10


@dataclass
class Server:
    url: str
    key: str
    store: str

    def post(self, body: dict[str, Any], idempotency_key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return httpx.post(f"{self.url}/api/v1/runs/{RUN}/attestations", json=body, headers=headers, timeout=60)

    def rows(self) -> int:
        engine = make_engine(self.store)
        try:
            with make_sessionmaker(engine)() as session:
                return session.scalar(select(func.count()).select_from(Attestation)) or 0
        finally:
            engine.dispose()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A loaded store of its own (not a rolled-back transaction): the server's requests run
    on separate connections, in parallel, as in production."""
    if request.param == "sqlite":
        path = tmp_path / "store.db"
        shutil.copy(request.getfixturevalue("sqlite_loaded_template"), path)
        return f"sqlite:///{path}"
    template = request.getfixturevalue("pg_loaded_template")
    return str(request.getfixturevalue("postgres").create("idempotency", template=template))


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[Server]:
    engine = make_engine(store_url)
    with make_sessionmaker(engine).begin() as session:
        ada = accounts.create_user(session, "ada", PASSWORD)
        _, secret = accounts.create_api_key(session, ada, "ci", ["attest"])
    engine.dispose()
    app = create_app(Settings(database_url=store_url, secret_key="idempotency", export_dir=tmp_path / "exports"))
    with serving(app) as url:
        yield Server(url, secret, store_url)


def in_parallel(server: Server, body: dict[str, Any], idempotency_key: str | None = None) -> list[httpx.Response]:
    """``PARALLEL`` identical posts, released at once."""
    start = threading.Barrier(PARALLEL)
    answers: list[httpx.Response] = []

    def post() -> None:
        start.wait()
        answers.append(server.post(body, idempotency_key))

    threads = [threading.Thread(target=post) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_parallel_identical_posts_store_one_attestation(server):
    answers = in_parallel(server, BODY)
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [201] + [400] * (PARALLEL - 1), [answer.text for answer in answers]
    refused = [answer.json()["detail"] for answer in answers if answer.status_code == 400]
    assert all("just added this same attestation" in detail for detail in refused)
    assert server.rows() == 1


def test_parallel_posts_with_one_idempotency_key_get_the_same_attestation(server):
    answers = in_parallel(server, BODY, idempotency_key="retry-4f1c")
    assert [answer.status_code for answer in answers] == [201] * PARALLEL, [answer.text for answer in answers]
    assert len({answer.content for answer in answers}) == 1
    assert server.rows() == 1

    replay = server.post(BODY, idempotency_key="retry-4f1c")
    assert (replay.status_code, replay.content) == (201, answers[0].content)
    assert server.rows() == 1


def test_an_idempotency_key_reused_for_another_body_is_refused(server):
    first = server.post(BODY, idempotency_key="once")
    assert first.status_code == 201
    other = server.post({**BODY, "body": "A different statement."}, idempotency_key="once")
    assert other.status_code == 422
    assert "already used for a different attestation" in other.json()["detail"]
    assert server.rows() == 1


@pytest.mark.parametrize("key", ["", "x" * 201, "two words", "naïve"])
def test_a_malformed_idempotency_key_is_a_400(server, key):
    response = server.post(BODY, idempotency_key=key) if key.isascii() else _raw_header_post(server, key)
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["detail"]
    assert server.rows() == 0


def _raw_header_post(server: Server, key: str) -> httpx.Response:
    headers = [(b"Authorization", f"Bearer {server.key}".encode()), (b"Idempotency-Key", key.encode())]
    return httpx.post(f"{server.url}/api/v1/runs/{RUN}/attestations", json=BODY, headers=headers, timeout=60)


def test_the_same_statement_may_be_made_again_after_the_window(loaded_db):
    with loaded_db.sessions.begin() as session:
        ada = accounts.create_user(session, "ada", PASSWORD)
        run = session.scalars(select(Run).where(Run.name == RUN)).one()
        first = attestations.add_attestation(session, ada, run, BODY)
        with pytest.raises(SubmissionError, match="just added this same attestation"), session.begin_nested():
            attestations.add_attestation(session, ada, run, {**BODY, "body": "  Same figure   on my B200. "})
        session.execute(
            update(Attestation)
            .where(Attestation.id == first.id)
            .values(created_at=first.created_at - DUPLICATE_WINDOW - timedelta(seconds=1))
        )
        again = attestations.add_attestation(session, ada, run, BODY)
        assert again.id != first.id
        assert session.scalar(select(func.count()).select_from(Attestation)) == 2
