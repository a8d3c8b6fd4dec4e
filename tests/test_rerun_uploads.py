"""Other operators: a maintainer approves an operator's runner key for their account at
/admin/runner-keys, and the operator uploads the bundles it signs with ``POST /api/v1/reruns``.

End to end through the app on both databases: two operators with keys of their own (made here),
bundles signed as the runner signs them (the shipped bundles' payloads, signed again by the
operators' keys), every refusal answered with problem JSON naming its check and leaving the store
as it was, and two operators' agreeing runs on two GPUs labelled "Independently replicated".
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from bs4 import BeautifulSoup
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.account_tables import AuditEntry
from kernelindex.db.rerun_tables import RerunBundle, RerunCase, RerunResult, RunnerKey
from kernelindex.db.tables import Run
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.rerun.bundle import key_id, public_key_b64, public_key_raw, sign_payload
from kernelindex.store import accounts
from kernelindex.web.request_guard import MAX_BUNDLE_UPLOAD_BYTES
from tests.factories import PASSWORD, api_key, csrf_token, sign_in
from tests.rerun_bundles import resign_with_tampering

UPLOAD = "/api/v1/reruns"
KEYS_PAGE = "/admin/runner-keys"
# Two shipped protocol-v1 reruns of one implementation on two physical H200s (same software stack):
# the first operator sends the first one's payload, the second operator the second one's.
SHIPPED = BUNDLED_RERUNS / "bundles"
FIRST = SHIPPED / "l1-040-conv2d-residual-block--kernelindex-040-triton--09c7adfe92ce.json"
SECOND = SHIPPED / "l1-040-conv2d-residual-block--kernelindex-040-triton--ca009b334f5d.json"
# A KernelBench program's rerun: the store under test holds no KernelBench workload.
KERNELBENCH = SHIPPED / "kernelbench-l1-95-crossentropyloss-4cdfaaf1--pytorch-eager--331617b61af4.json"
TABLES = (Run, RerunBundle, RerunResult, RerunCase, AuditEntry, RunnerKey)


def payload_of(path: Any) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(path.read_bytes())["payload"]
    return payload


def signed(payload: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The bundle as the runner writes it (``bundle.write_bundle``)."""
    return (json.dumps(sign_payload(payload, key), indent=1, ensure_ascii=False) + "\n").encode()


def kid(key: Ed25519PrivateKey) -> str:
    return key_id(public_key_raw(key.public_key()))


@dataclass
class Site:
    app: FastAPI
    sessions: sessionmaker[Session]
    clients: ExitStack
    ada_key: Ed25519PrivateKey  # approved for ada (lab A)
    bob_key: Ed25519PrivateKey  # approved for bob (lab B)
    ada_api: str  # ada's API key with the reruns scope
    bob_api: str

    def client(self, handle: str | None = None) -> TestClient:
        client = self.clients.enter_context(TestClient(self.app))
        if handle is not None:
            sign_in(client, handle, next_path="/")
        return client

    def upload(self, body: bytes, api: str | None, **headers: str) -> Any:
        if api is not None:
            headers["Authorization"] = f"Bearer {api}"
        return self.client().post(UPLOAD, content=body, headers={"Content-Type": "application/json", **headers})

    def counts(self) -> dict[str, int]:
        with self.sessions() as session:
            return {t.__tablename__: session.scalar(select(func.count()).select_from(t)) or 0 for t in TABLES}

    def evidence(self, name: str) -> str:
        with self.sessions() as session:
            return str(session.scalar(select(Run.evidence).where(Run.name == name)))


def approve(client: TestClient, handle: str, key: Ed25519PrivateKey | str, name: str, machine: str) -> Any:
    public = key if isinstance(key, str) else public_key_b64(key)
    data = {
        "csrf_token": csrf_token(client, KEYS_PAGE),
        "handle": handle,
        "public_key": public,
        "operator_name": name,
        "machine": machine,
    }
    return client.post(KEYS_PAGE, data=data, follow_redirects=False)


@pytest.fixture
def site(loaded_db, make_app) -> Iterator[Site]:
    with loaded_db.sessions.begin() as session:
        accounts.create_user(session, "mod", PASSWORD, maintainer=True)
        for handle in ("ada", "bob", "eve"):
            accounts.create_user(session, handle, PASSWORD)
    app = make_app(loaded_db)
    ada_key, bob_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    with ExitStack() as clients:
        site = Site(app, loaded_db.sessions, clients, ada_key, bob_key, "", "")
        mod = site.client("mod")
        assert approve(mod, "ada", ada_key, "Ada Lovelace, Lab A", "H200 SXM, host a1").status_code == 303
        assert approve(mod, "bob", bob_key, "Bob Babbage, Lab B", "H200 SXM, host b7").status_code == 303
        site.ada_api = api_key(site.client("ada"), ["reruns"])
        site.bob_api = api_key(site.client("bob"), ["reruns"])
        yield site


def refused(site: Site, body: bytes, api: str | None, status: int, check: str) -> dict[str, Any]:
    """Upload ``body``; it must be refused with ``status`` naming ``check``, and leave the store as it was."""
    before = site.counts()
    response = site.upload(body, api)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["check"] == check and problem["status"] == status and problem["detail"]
    assert site.counts() == before
    return problem


def test_maintainers_approve_and_revoke_runner_keys(site) -> None:
    mod = site.client("mod")
    page = BeautifulSoup(mod.get(KEYS_PAGE).text, "html.parser")
    row = page.select_one(f'tr[id="key-{kid(site.ada_key)}"]').get_text(" ", strip=True)
    assert "Ada Lovelace, Lab A" in row and "H200 SXM, host a1" in row and "by mod" in row and "account:ada" in row
    # Clear refusals, input kept: a key that is not 32 bytes of base64, an unknown account, a key approved already.
    for handle, key, status, words in [
        ("ada", "not base64!", 400, "not base64"),
        ("ada", base64.b64encode(b"x" * 16).decode(), 400, "16 bytes"),
        ("nobody", Ed25519PrivateKey.generate(), 404, "no account 'nobody'"),
        ("bob", site.ada_key, 409, "already approved, for ada"),
    ]:
        response = approve(mod, handle, key, "Someone", "A GPU")
        shown = BeautifulSoup(response.text, "html.parser")
        assert response.status_code == status and words in shown.select_one("#admin-error").get_text()
        assert shown.select_one('input[name="operator_name"]')["value"] == "Someone"
    assert approve(mod, "eve", Ed25519PrivateKey.generate(), " ", "A GPU").status_code == 400
    # Not a maintainer: 403; no CSRF token: 403; nothing approved by either.
    before = site.counts()
    eve = site.client("eve")
    assert eve.get(KEYS_PAGE).status_code == 403
    fields = {"handle": "eve", "public_key": public_key_b64(Ed25519PrivateKey.generate()), "operator_name": "Eve"}
    fields["machine"] = "A GPU"
    token = {"csrf_token": csrf_token(eve, "/account")}
    assert eve.post(KEYS_PAGE, data=fields | token, follow_redirects=False).status_code == 403
    assert mod.post(KEYS_PAGE, data=fields, follow_redirects=False).status_code == 403
    assert site.counts() == before

    revoke = f"{KEYS_PAGE}/{kid(site.bob_key)}/revoke"
    token = csrf_token(mod, KEYS_PAGE)
    assert mod.post(revoke, data={"csrf_token": token, "reason": ""}, follow_redirects=False).status_code == 400
    done = mod.post(revoke, data={"csrf_token": token, "reason": "lab B left"}, follow_redirects=False)
    assert done.status_code == 303
    assert "is revoked" in mod.get(KEYS_PAGE).text
    assert mod.post(revoke, data={"csrf_token": token, "reason": "again"}, follow_redirects=False).status_code == 409
    # A revoked key is never approved again.
    assert approve(mod, "bob", site.bob_key, "Bob", "H200").status_code == 409
    with site.sessions() as session:
        actions = set(session.scalars(select(AuditEntry.action)))
    assert {"runner_key.approve", "runner_key.revoke"} <= actions


def test_an_approved_operator_uploads_a_bundle(site) -> None:
    body = signed(payload_of(FIRST), site.ada_key)
    assert 64 * 1024 < len(body) <= MAX_BUNDLE_UPLOAD_BYTES  # over the general body limit, under this one
    before = site.counts()
    response = site.upload(body, site.ada_api)
    assert response.status_code == 201, response.text
    created = response.json()
    name = created["run"]
    assert created["url"] == f"/runs/{name}" and created["jsonUrl"] == f"/runs/{name}.json"
    assert created["bundleUrl"] == f"/reruns/bundles/{created['bundleId']}.json"
    assert created["operator"] == "account:ada" and created["keyId"] == kid(site.ada_key)
    assert created["evidence"] == "verified" and created["replicatedBy"] == []
    after = site.counts()
    assert after["run"] == before["run"] + 1 and after["rerun_bundle"] == before["rerun_bundle"] + 1
    assert after["rerun_case"] == before["rerun_case"] + len(payload_of(FIRST)["cases"])

    reader = site.client()
    twin = reader.get(created["jsonUrl"]).json()
    assert twin["evidence"] == "verified" and twin["rerun"]["operator"] == "account:ada"
    assert twin["rerun"]["approvedKey"]["operatorName"] == "Ada Lovelace, Lab A"
    page = BeautifulSoup(reader.get(created["url"]).text, "html.parser").get_text(" ", strip=True)
    assert "Ada Lovelace, Lab A (account ada), measuring on H200 SXM, host a1" in page
    # Labelled as the operator's verified rerun, not as one of KernelIndex's own.
    assert twin["evidenceSentence"].startswith("Verified rerun by Ada Lovelace, Lab A (account ada):")
    # The signed bytes are served as uploaded: anyone can check the signature again.
    assert reader.get(created["bundleUrl"]).content == body
    # The protocol page says how operators upload.
    protocol = BeautifulSoup(reader.get("/protocols/kernelindex-rerun-v1").text, "html.parser")
    assert UPLOAD in protocol.get_text(" ", strip=True)


def test_refusals_name_their_check_and_write_nothing(site) -> None:
    payload = payload_of(FIRST)
    good = signed(payload, site.ada_key)
    first = site.upload(good, site.ada_api)
    assert first.status_code == 201
    stored = first.json()["run"]

    # The request itself: no key, a key without the reruns scope, a body that is not a bundle, too large.
    refused(site, good, None, 401, "api-key")
    refused(site, good, "ki_000000000000_not-a-real-key-at-all-000", 401, "api-key")
    read_only = api_key(site.client("ada"), ["read", "attest"], label="read only")
    refused(site, good, read_only, 403, "api-key-scope")
    refused(site, b"{not json", site.ada_api, 400, "bundle-json")
    refused(site, b'["a list"]', site.ada_api, 400, "bundle-json")
    refused(site, good + b" " * (MAX_BUNDLE_UPLOAD_BYTES + 1 - len(good)), site.ada_api, 413, "body-size")
    # Streamed without a length, too: counted as it arrives.
    before = site.counts()
    chunks = iter([good, b" " * MAX_BUNDLE_UPLOAD_BYTES])
    streamed = site.client().post(UPLOAD, content=chunks, headers={"Authorization": f"Bearer {site.ada_api}"})
    assert streamed.status_code == 413 and streamed.json()["check"] == "body-size" and site.counts() == before

    # The key: never approved, approved for another account, revoked.
    other = payload_of(SECOND)
    stranger = Ed25519PrivateKey.generate()
    refused(site, signed(other, stranger), site.ada_api, 403, "runner-key-approved")
    refused(site, signed(other, site.ada_key), site.bob_api, 403, "runner-key-account")
    mod = site.client("mod")
    retired = Ed25519PrivateKey.generate()
    assert approve(mod, "ada", retired, "Ada Lovelace, Lab A", "old host").status_code == 303
    token = csrf_token(mod, KEYS_PAGE)
    revoke = f"{KEYS_PAGE}/{kid(retired)}/revoke"
    assert (
        mod.post(revoke, data={"csrf_token": token, "reason": "key leaked"}, follow_redirects=False).status_code == 303
    )
    refused(site, signed(other, retired), site.ada_api, 403, "runner-key-revoked")

    # The signature: forged, the payload changed after signing, another public key under the approved id.
    forged = json.loads(signed(other, site.ada_key))
    forged["signature"]["value"] = base64.b64encode(stranger.sign(b"something else")).decode()
    refused(site, json.dumps(forged).encode(), site.ada_api, 422, "signature")
    altered = json.loads(signed(other, site.ada_key))
    altered["payload"]["suite"]["latencyNs"] //= 2
    refused(site, json.dumps(altered).encode(), site.ada_api, 422, "signature")
    swapped = json.loads(signed(other, stranger))
    swapped["signature"]["keyId"] = kid(site.ada_key)
    refused(site, json.dumps(swapped).encode(), site.ada_api, 422, "signature")

    # A stored bundle: replayed, the same payload signed again by another approved key, its id reused.
    assert f"as the run {stored}" in refused(site, good, site.ada_api, 409, "replay")["detail"]
    refused(site, signed(payload, site.bob_key), site.bob_api, 409, "re-signed")
    reused = {**other, "bundleId": payload["bundleId"]}
    refused(site, signed(reused, site.ada_key), site.ada_api, 409, "bundle-id")
    # The stored measurement under a new id, from the other operator: it would look independent.
    copied = {**payload, "bundleId": "0" * 32, "sessionId": "1" * 32}
    refused(site, signed(copied, site.bob_key), site.bob_api, 409, "copied-samples")

    # The content, signed by the approved key: figures that do not follow from the samples, an unknown workload.
    def halve_a_median(p: dict[str, Any]) -> None:
        p["cases"][0]["timing"]["medianNs"] //= 2

    refused(
        site,
        resign_with_tampering(signed(other, site.ada_key), site.ada_key, halve_a_median),
        site.ada_api,
        422,
        "figures",
    )
    refused(
        site,
        signed({**other, "protocol": {**other["protocol"], "version": "9"}}, site.ada_key),
        site.ada_api,
        422,
        "protocol",
    )
    refused(site, signed({k: v for k, v in other.items() if k != "suite"}, site.ada_key), site.ada_api, 422, "payload")
    nul = {**other, "environment": {**other["environment"], "hostname": "vm\x00"}}
    refused(site, signed(nul, site.ada_key), site.ada_api, 422, "payload")
    # A roofline claimed for a workload this registry has no model of; a KernelBench program it does not hold.
    elsewhere = {**other, "workload": {**other["workload"], "slug": "l1-999-not-in-this-registry"}}
    refused(site, signed(elsewhere, site.ada_key), site.ada_api, 422, "claims")
    refused(site, signed(payload_of(KERNELBENCH), site.ada_key), site.ada_api, 422, "workload")
    # After all that, the bundle the second operator ran is still taken.
    assert site.upload(signed(other, site.bob_key), site.bob_api).status_code == 201


def test_two_operators_agreeing_on_two_gpus_are_independently_replicated(site) -> None:
    first, second = payload_of(FIRST), payload_of(SECOND)
    assert first["environment"]["gpu"]["uuid"] != second["environment"]["gpu"]["uuid"]
    a = site.upload(signed(first, site.ada_key), site.ada_api).json()
    assert a["evidence"] == "verified"
    b = site.upload(signed(second, site.bob_key), site.bob_api).json()
    assert b["evidence"] == "replicated" and b["replicatedBy"] == [a["run"]]
    assert site.evidence(a["run"]) == site.evidence(b["run"]) == "replicated"

    reader = site.client()
    for mine, theirs in ((a, b), (b, a)):
        twin = reader.get(mine["jsonUrl"]).json()
        assert twin["evidence"] == "replicated"
        assert twin["replicatedBy"] == [theirs["run"]] and twin["reproducedBy"] == [theirs["run"]]
        page = BeautifulSoup(reader.get(mine["url"]).text, "html.parser")
        assert page.select_one(".badge.evidence-replicated").get_text() == "Independently replicated"
        assert page.select_one(f'#replicated-by a[href="/runs/{theirs["run"]}"]') is not None


def test_one_operator_on_two_gpus_is_reproduced_not_replicated(site) -> None:
    """The control: the same two measurements, both by one operator's account (two keys, two GPUs)."""
    second_key = Ed25519PrivateKey.generate()
    assert approve(site.client("mod"), "ada", second_key, "Ada Lovelace, Lab A", "H200 SXM, host a2").status_code == 303
    a = site.upload(signed(payload_of(FIRST), site.ada_key), site.ada_api).json()
    b = site.upload(signed(payload_of(SECOND), second_key), site.ada_api).json()
    assert b["evidence"] == "reproduced" and b["reproducedBy"] == [a["run"]] and b["replicatedBy"] == []
    assert site.evidence(a["run"]) == "reproduced"
    twin = site.client().get(a["jsonUrl"]).json()
    assert twin["replicatedBy"] == [] and twin["evidenceSentence"].startswith("Reproduced by Ada Lovelace, Lab A")
