"""Test data made the way a person or the site makes it: accounts signed in through the
forms (with this browser's CSRF token), API keys, and attestation manifests and rows."""

from __future__ import annotations

from datetime import datetime

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.tables import Attestation, Run, User
from kernelindex.manifests import Attestation as AttestationManifest
from kernelindex.store.manifests import manifest_text

PASSWORD = "correct horse battery"


# --- Through the site's forms ---------------------------------------------------------------


def csrf_token(client: TestClient, path: str) -> str:
    """The CSRF token of this client's session, as the first form at ``path`` carries it."""
    page = BeautifulSoup(client.get(path).text, "html.parser")
    return page.select_one('input[name="csrf_token"]')["value"]


def signup(client: TestClient, handle: str = "ada", password: str = PASSWORD, confirm: str | None = None) -> Response:
    """Submit the sign-up form; a new account is signed in (303 to /account)."""
    data = {
        "csrf_token": csrf_token(client, "/signup"),
        "handle": handle,
        "password": password,
        "confirm": confirm or password,
    }
    return client.post("/signup", data=data, follow_redirects=False)


def sign_in(client: TestClient, handle: str, password: str = PASSWORD, next_path: str | None = None) -> Response:
    """Sign ``client`` in through the form; fails the test unless it is (303)."""
    data = {"csrf_token": csrf_token(client, "/signin"), "handle": handle, "password": password}
    if next_path is not None:
        data["next"] = next_path
    response = client.post("/signin", data=data, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response


def api_key(client: TestClient, scopes: list[str], label: str = "ci") -> str:
    """A new API key of the signed-in account, read from the page that shows it once."""
    response = client.post(
        "/account/keys", data={"csrf_token": csrf_token(client, "/account"), "label": label, "scope": scopes}
    )
    assert response.status_code == 200, response.text
    return BeautifulSoup(response.text, "html.parser").select_one(".card code").get_text()


# --- Straight into the store ----------------------------------------------------------------


def attestation_manifest(run: Run, name: str, author: str, body: str, created_at: datetime) -> AttestationManifest:
    """A "reproduced" attestation of ``run`` by ``author`` (a handle)."""
    return AttestationManifest.model_validate(
        {
            "apiVersion": "kernelindex.dev/v1alpha1",
            "kind": "Attestation",
            "metadata": {"name": name},
            "spec": {
                "runDigest": run.digest,
                "type": "reproduced",
                "body": body,
                "author": {"handle": author},
                "createdAt": created_at.isoformat(),
            },
        }
    )


def attestation_row(run: Run, author: User, name: str, state: str, created_at: datetime) -> Attestation:
    """An attestation row (published or hidden as spam) with its manifest, not yet added to a session."""
    manifest = attestation_manifest(run, name, author.handle, f"Reproduced on my B200 within 2% ({name}).", created_at)
    return Attestation(
        name=name,
        digest=manifest.digest,
        manifest_json=manifest_text(manifest),
        run_id=run.id,
        user_id=author.id,
        type="reproduced",
        state=state,
        hidden_reason="spam" if state == "hidden" else None,
        created_at=created_at,
        updated_at=created_at,
    )


def count(sessions: sessionmaker[Session], table: type) -> int:
    """The number of rows of ``table``."""
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(table)) or 0
