"""Attestations and reports on a run: forms, permalinks, the API, limits, and inert input."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.db.tables import Attestation, Report, Run
from kernelindex.store import accounts
from kernelindex.verify import verify_document
from tests.factories import api_key, count, csrf_token, signup

RUN = "sol-submission-16893"
XSS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    '"><svg onload=alert(1)>',
]


def attest(client: TestClient, run: str = RUN, **fields: str):  # type: ignore[no-untyped-def]
    data = {
        "csrf_token": csrf_token(client, f"/runs/{run}/report"),
        "type": "reproduced",
        "body": "Same figure on my B200.",
        **fields,
    }
    return client.post(f"/runs/{run}/attestations", data=data, follow_redirects=False)


def test_signed_out_readers_are_invited_to_sign_in(client):
    page = BeautifulSoup(client.get(f"/runs/{RUN}").text, "html.parser")
    section = page.select_one("#attestations")
    assert "Community attestations never change the evidence level" in section.get_text()
    assert section.select_one(f'a[href="/signin?next=/runs/{RUN}%23attestations"]')
    assert not section.select("form")
    assert attest(client).headers["location"].startswith("/signin")


def test_an_attestation_is_listed_newest_first_with_a_verifiable_permalink(client, loaded_db):
    signup(client)
    assert attest(client, body="First note.").status_code == 303
    assert attest(client, type="environment_note", body="Second, on driver 575.").status_code == 303
    page = BeautifulSoup(client.get(f"/runs/{RUN}").text, "html.parser")
    notes = [article.select_one(".body").get_text(strip=True) for article in page.select("#attestations article")]
    assert notes == ["Second, on driver 575.", "First note."]
    data = client.get(f"/runs/{RUN}.json").json()
    newest = data["attestations"][0]
    assert (newest["author"], newest["typeLabel"]) == ("ada", "Environment note")
    permalink = client.get(newest["url"] + ".json").json()
    assert permalink["manifest"]["spec"]["runDigest"] == data["digest"]
    checks = verify_document({"digest": newest["digest"], "manifest": permalink["manifest"]})
    assert [check.ok for check in checks] == [True]
    assert client.get(newest["url"]).status_code == 200
    account = BeautifulSoup(client.get("/account").text, "html.parser")
    rows = [tr.get_text(" ", strip=True) for tr in account.select("section[aria-labelledby=h-attestations] tbody tr")]
    assert len(rows) == 2 and all(RUN in row for row in rows)


@pytest.mark.parametrize("payload", XSS)
@pytest.mark.parametrize("body_format", ["plain", "markdown"])
def test_hostile_text_is_rendered_inert(client, payload, body_format):
    signup(client)
    response = attest(client, body=payload, body_format=body_format, environment_summary=payload)
    assert response.status_code == 303
    html = client.get(f"/runs/{RUN}").text
    section = html.split('id="attestations"', 1)[1].split("</section>", 1)[0]
    page = BeautifulSoup(section, "html.parser")
    assert not page.select("script") and not page.select("svg") and not page.select("img")
    assert not [tag for tag in page.find_all(True) if any(attr.startswith("on") for attr in tag.attrs)]
    assert not [a for a in page.select("a[href]") if a["href"].lower().startswith("javascript")]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"evidence_url": "http://example.com/log"}, "evidence_url", "https://"),
        ({"evidence_url": "javascript:alert(1)"}, "evidence_url", "URL"),
        ({"type": "verified"}, "type", "Input should be"),
        ({"body": "x" * 2001}, "body", "2000 characters"),
        ({"body": ""}, "body", "at least 1 character"),
        ({"measured_latency_ns": "fast"}, "measured_latency_ns", "integer"),
        ({"measured_latency_ns": "0"}, "measured_latency_ns", "greater than 0"),
    ],
)
def test_bad_attestations_are_explained_on_the_form_with_the_input_kept(client, loaded_db, fields, field, message):
    signup(client)
    before = count(loaded_db.sessions, Attestation)
    response = attest(client, **{"body": "kept text", **fields})
    assert response.status_code == 400
    page = BeautifulSoup(response.text, "html.parser")
    assert message.lower() in page.select_one("#attestations").get_text().lower()
    if field != "body":
        assert page.select_one("#f-body").get_text() == "kept text"
    assert count(loaded_db.sessions, Attestation) == before


def test_a_double_submit_is_stored_once(client, loaded_db):
    signup(client)
    assert attest(client).status_code == 303
    again = attest(client)
    assert again.status_code == 400 and "just added this same attestation" in again.text
    assert count(loaded_db.sessions, Attestation) == 1


def test_attesting_a_run_that_does_not_exist_is_a_404(client):
    signup(client)
    response = client.post("/runs/sol-submission-1/attestations", data={"csrf_token": csrf_token(client, "/account")})
    assert response.status_code == 404


def test_many_reproductions_never_move_the_evidence_level_or_rank(loaded_db, make_app):
    app = make_app(loaded_db)
    with TestClient(app) as reader:
        before = reader.get(f"/runs/{RUN}.json").json()
        board = reader.get("/workloads/l1-039-adaptive-instance-normalization-2d-backward.json").json()
    people = LIMITS["signup"].count  # as many accounts as one address may open
    for n in range(people):
        with TestClient(app) as person:
            assert signup(person, f"user{n}").status_code == 303
            for attempt in range(3):
                response = attest(person, body=f"Reproduced, try {attempt} by user{n}.")
                assert response.status_code == 303 and response.headers["location"].startswith(f"/runs/{RUN}")
    with TestClient(app) as reader:
        after = reader.get(f"/runs/{RUN}.json").json()
        board_after = reader.get("/workloads/l1-039-adaptive-instance-normalization-2d-backward.json").json()
    assert len(after["attestations"]) == people * 3
    for key in ("evidence", "evidenceSentence", "rank", "groupSize", "digest", "latencyNs"):
        assert after[key] == before[key]
    assert board_after["ranked"] == board["ranked"] and board_after["groups"] == board["groups"]
    with loaded_db.sessions() as session:
        assert session.scalar(select(Run.evidence).where(Run.name == RUN)) == "reported"


def test_attestations_are_limited_per_account_per_day(client, loaded_db):
    signup(client)
    limit = LIMITS["attest"].count
    statuses = [attest(client, body=f"note {n}").status_code for n in range(limit + 1)]
    assert statuses == [303] * limit + [429]
    assert count(loaded_db.sessions, Attestation) == limit


def test_the_api_accepts_attestations_with_an_attest_key_only(client, loaded_db):
    signup(client)
    attest_key, read_key = api_key(client, ["attest"]), api_key(client, ["read"])
    client.cookies.clear()
    body = {"type": "could_not_reproduce", "body": "Twice as slow here.", "measuredLatencyNs": 420000}
    url = f"/api/v1/runs/{RUN}/attestations"
    created = client.post(url, json=body, headers={"Authorization": f"Bearer {attest_key}"})
    assert created.status_code == 201, created.text
    assert created.json()["manifest"]["spec"]["measuredLatencyNs"] == 420000
    for headers, status in (
        ({}, 401),
        ({"Authorization": f"Bearer {read_key}"}, 403),
        ({"Authorization": "Bearer ki_000000000000_nope"}, 401),
    ):
        refused = client.post(url, json=body, headers=headers)
        assert refused.status_code == status and "attest scope" in refused.json()["detail"]
    assert client.post(url, content=b"{not json", headers={"Authorization": f"Bearer {attest_key}"}).status_code == 400
    bad = client.post(
        url, json={**body, "evidenceUrl": "http://x.example"}, headers={"Authorization": f"Bearer {attest_key}"}
    )
    assert bad.status_code == 400 and "https://" in bad.json()["detail"]
    assert (
        client.post(
            "/api/v1/runs/nope/attestations", json=body, headers={"Authorization": f"Bearer {attest_key}"}
        ).status_code
        == 404
    )
    with loaded_db.sessions() as session:
        key_id = session.scalar(select(accounts.ApiKey.id).where(accounts.ApiKey.scopes.isnot(None)).limit(1))
        user = session.scalar(select(accounts.User).where(accounts.User.handle == "ada"))
        for key in accounts.api_keys(session, user):
            accounts.revoke_api_key(session, user, key.id)
        session.commit()
    assert key_id
    assert client.post(url, json=body, headers={"Authorization": f"Bearer {attest_key}"}).status_code == 401
    assert count(loaded_db.sessions, Attestation) == 1


def test_anyone_can_report_a_run_and_bad_reports_are_explained(client, loaded_db):
    csrf = csrf_token(client, f"/runs/{RUN}/report")
    sent = client.post(
        f"/runs/{RUN}/reports", data={"csrf_token": csrf, "reason": "reward_hack", "report_body": "Too fast."}
    )
    assert sent.status_code == 200 and "in the maintainers' queue" in sent.text
    bad = client.post(f"/runs/{RUN}/reports", data={"csrf_token": csrf, "reason": "boring", "report_body": "kept"})
    assert bad.status_code == 400 and "Choose one of" in bad.text
    assert BeautifulSoup(bad.text, "html.parser").select_one("#f-report_body").get_text() == "kept"
    assert client.post(f"/runs/{RUN}/reports", data={"reason": "other", "report_body": "x"}).status_code == 403
    with loaded_db.sessions() as session:
        reports = session.scalars(select(Report)).all()
    assert [(r.reason, r.body, r.state, r.user_id) for r in reports] == [("reward_hack", "Too fast.", "open", None)]


def test_a_signed_out_reader_reports_through_the_form_page_with_a_signed_cookie_token(client, loaded_db):
    run_page = BeautifulSoup(client.get(f"/runs/{RUN}").text, "html.parser")
    assert not run_page.select("#report form") and not run_page.select('input[name="csrf_token"]')
    assert run_page.select_one(f'#report a[href="/runs/{RUN}/report"]')
    form_page = client.get(f"/runs/{RUN}/report")
    assert form_page.headers["cache-control"] == "private, no-cache"
    assert (
        "kernelindex_csrf=" in form_page.headers["set-cookie"]
        and "kernelindex_session" not in form_page.headers["set-cookie"]
    )
    token = BeautifulSoup(form_page.text, "html.parser").select_one('#report input[name="csrf_token"]')["value"]
    data = {"reason": "duplicate", "report_body": "Same as 16892."}
    refused = [
        client.post(f"/runs/{RUN}/reports", data=data),  # no token
        client.post(f"/runs/{RUN}/reports", data={**data, "csrf_token": "forged"}),
    ]
    client.cookies.set("kernelindex_csrf", "forged.cookie.value")
    refused.append(client.post(f"/runs/{RUN}/reports", data={**data, "csrf_token": "forged"}))
    for response in refused:
        assert response.status_code == 403 and "did not come from this site" in response.text
    assert "set-cookie" not in client.get(f"/runs/{RUN}").headers
    assert count(loaded_db.sessions, Report) == 0
    client.cookies.clear()
    token = csrf_token(client, f"/runs/{RUN}/report")
    sent = client.post(f"/runs/{RUN}/reports", data={**data, "csrf_token": token})
    assert sent.status_code == 200 and "in the maintainers' queue" in sent.text
    assert "kernelindex_session" not in client.cookies
    assert count(loaded_db.sessions, Report) == 1


def test_reports_are_limited_per_address(client):
    csrf = csrf_token(client, f"/runs/{RUN}/report")
    limit = LIMITS["report"].count
    statuses = [
        client.post(
            f"/runs/{RUN}/reports", data={"csrf_token": csrf, "reason": "other", "report_body": f"r{n}"}
        ).status_code
        for n in range(limit + 1)
    ]
    assert statuses == [200] * limit + [429]


def test_run_json_twin_lists_attestations_as_manifests(client):
    signup(client)
    attest(client)
    data = client.get(f"/runs/{RUN}.json").json()
    assert json.dumps(data).count('"kind": "Attestation"') == 0  # listed as parts, linked by URL and digest
    assert data["attestations"][0]["digest"].startswith("sha256:")


def test_pages_carrying_a_session_are_never_cached_publicly(client):
    anonymous_board = client.get("/workloads/l1-040-conv2d-residual-block")
    assert anonymous_board.headers["cache-control"].startswith("public")
    run_page = client.get(f"/runs/{RUN}")  # no form with a token: the report form is a page of its own
    assert run_page.headers["cache-control"].startswith("public") and "set-cookie" not in run_page.headers
    report_form = client.get(f"/runs/{RUN}/report")  # holds this visitor's CSRF token
    assert report_form.headers["cache-control"] == "private, no-cache"
    signup(client)
    for path in ("/", "/workloads/l1-040-conv2d-residual-block", f"/runs/{RUN}"):
        response = client.get(path)
        assert response.headers["cache-control"] == "private, no-cache", path
        assert "Cookie" in response.headers["vary"]
