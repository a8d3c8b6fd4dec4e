"""A hidden attestation's manifest: 410 Gone (with the reason, no body, cached briefly), out
of the catalogue export and the sitemap, its digest shown to maintainers only; unhiding
publishes it again. On SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from bs4 import BeautifulSoup
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.store import accounts, attestations, moderation
from tests.factories import PASSWORD, sign_in

RUN = "sol-submission-16893"
SECRET_WORDS = "Buy cheap GPUs at spam.example"


@dataclass
class Hidden:
    app: FastAPI
    name: str
    digest: str


@pytest.fixture
def hidden(loaded_db, make_app) -> Iterator[Hidden]:
    with loaded_db.sessions.begin() as session:
        mod = accounts.create_user(session, "mod", PASSWORD, maintainer=True)
        ada = accounts.create_user(session, "ada", PASSWORD)
        run = session.scalars(select(Run).where(Run.name == RUN)).one()
        row = attestations.add_attestation(session, ada, run, {"type": "environment_note", "body": SECRET_WORDS})
        name, digest = row.name, row.digest
        moderation.hide_attestation(session, mod, name, "spam")
    yield Hidden(make_app(loaded_db), name, digest)


def export_text(client: TestClient) -> str:
    response = client.get("/exports/catalog.jsonl.gz")
    assert response.status_code == 200
    return gzip.decompress(response.content).decode()


def test_a_hidden_attestations_manifest_is_gone_briefly_cached_and_without_its_body(hidden):
    with TestClient(hidden.app) as client:
        for path in (f"/manifests/{hidden.digest}", f"/manifests/{hidden.digest}.json"):
            response = client.get(path)
            assert response.status_code == 410, path
            assert response.headers["cache-control"] == "public, max-age=60"
            assert "immutable" not in response.headers["cache-control"]
            assert "spam" in response.text and "hidden by a maintainer" in response.text
            assert SECRET_WORDS not in response.text
        problem = client.get(f"/manifests/{hidden.digest}.json").json()
        assert problem["status"] == 410 and "(spam)" in problem["detail"]


def test_a_hidden_attestation_is_left_out_of_the_export_and_the_sitemap(hidden):
    with TestClient(hidden.app) as client:
        exported = export_text(client)
        assert hidden.digest not in exported and SECRET_WORDS not in exported
        sitemap = client.get("/sitemap.xml").text
        assert hidden.digest not in sitemap and hidden.name not in sitemap


def test_only_a_maintainer_sees_a_hidden_attestations_digest(hidden):
    with TestClient(hidden.app) as reader, TestClient(hidden.app) as mod, TestClient(hidden.app) as author:
        page = f"/attestations/{hidden.name}"
        assert hidden.digest not in reader.get(page).text
        assert reader.get(page + ".json").json()["attestation"]["digest"] == ""
        sign_in(author, "ada", next_path="/")
        assert hidden.digest not in author.get(page).text
        sign_in(mod, "mod", next_path="/")
        shown = BeautifulSoup(mod.get(page).text, "html.parser").select_one(".digest code")
        assert shown is not None and shown["title"] == hidden.digest
        row = BeautifulSoup(mod.get("/admin").text, "html.parser").select_one(f"#hidden-{hidden.name}")
        assert row is not None and row.select_one(".digest code")["title"] == hidden.digest


def test_unhiding_publishes_the_manifest_again(hidden, loaded_db):
    with TestClient(hidden.app) as client:
        assert client.get(f"/manifests/{hidden.digest}.json").status_code == 410
        with loaded_db.sessions.begin() as session:
            mod = accounts.find_user(session, "mod")
            assert mod is not None
            moderation.unhide_attestation(session, mod, hidden.name, "reviewed: genuine")
        response = client.get(f"/manifests/{hidden.digest}.json")
        assert response.status_code == 200
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert json.loads(response.content)["spec"]["body"] == SECRET_WORDS
        assert hidden.digest in client.get(f"/attestations/{hidden.name}").text
        assert hidden.digest in export_text(client)
