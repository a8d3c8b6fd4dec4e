"""Submitted runs: every refusal names its check and leaves the store as it was, and a valid one goes
through the review queue to a ranked run credited to its submitter (on SQLite and PostgreSQL)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.accounts.ratelimit import LIMITS, Limit
from kernelindex.cli import main
from kernelindex.db.account_tables import AuditEntry
from kernelindex.db.submission_tables import SubmissionRecord
from kernelindex.db.tables import Implementation, ManifestVersion, Protocol, Run, Source, Workload
from kernelindex.manifests import parse_manifest
from kernelindex.store import accounts
from kernelindex.submissions.document import MAX_BYTES, case_digest
from tests.factories import PASSWORD, api_key, csrf_token, sign_in
from tests.servers import serving

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "example.json"
WORKLOAD = "l1-040-conv2d-residual-block"
OTHER_WORKLOAD = "l1-062-kv-cache-update-with-rope-backward"
API = "/api/v1/submissions"
REPORTED_BY = "Reported by ada, reviewed by maintainers"


@dataclass
class Site:
    app: FastAPI
    sessions: sessionmaker[Session]
    clients: ExitStack
    key: str  # ada's key with the submissions:write scope

    def client(self, handle: str | None = None) -> TestClient:
        client = self.clients.enter_context(TestClient(self.app))
        if handle is not None:
            sign_in(client, handle, next_path="/")
        return client

    def submit(self, document: dict[str, Any] | bytes, key: str | None = None) -> Any:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key or self.key}"}
        return self.client().post(API, content=body, headers=headers)


@pytest.fixture
def site(loaded_db, make_app) -> Iterator[Site]:
    with loaded_db.sessions.begin() as session:
        accounts.create_user(session, "mod", PASSWORD, maintainer=True)
        accounts.create_user(session, "ada", PASSWORD)
    app = make_app(loaded_db)
    with ExitStack() as clients:
        ada = clients.enter_context(TestClient(app))
        sign_in(ada, "ada", next_path="/")
        yield Site(app, loaded_db.sessions, clients, api_key(ada, ["submissions:write"]))


def example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def signed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every digest computed again from its manifests, as an honest client would."""
    document = copy.deepcopy(document)
    for role in ("implementation", "environment", "protocol"):
        document["digests"][role] = parse_manifest(document[role]).digest
    spec = document["run"]["spec"]
    spec["implementationDigest"] = document["digests"]["implementation"]
    spec["environmentDigest"] = document["digests"]["environment"]
    spec["protocolDigest"] = document["digests"]["protocol"]
    document["digests"]["run"] = parse_manifest(document["run"]).digest
    return document


def stored(sessions: sessionmaker[Session]) -> dict[str, int]:
    """How many rows of what a submission could write the store holds."""
    with sessions() as session:
        return {
            table.__tablename__: session.scalar(select(func.count()).select_from(table)) or 0
            for table in (SubmissionRecord, Run, ManifestVersion, Implementation, Protocol, AuditEntry, Source)
        }


def workload_of(sessions: sessionmaker[Session], slug: str) -> Workload:
    with sessions() as session:
        workload = session.scalar(select(Workload).where(Workload.name == slug))
        assert workload is not None
        session.expunge(workload)
        return workload


# --- The path of a valid submission -----------------------------------------------------------------


def test_a_submission_goes_through_review_to_a_ranked_credited_run(site: Site) -> None:
    response = site.submit(example())
    assert response.status_code == 202, response.text
    received = response.json()
    assert received["status"] == "pending"
    public_id = received["id"]
    assert received["url"] == f"http://testserver/submissions/{public_id}"
    assert response.headers["location"] == received["url"]

    ada = site.client("ada")
    page = ada.get(f"/submissions/{public_id}.json").json()
    assert page["submission"]["status"] == "pending"
    assert page["submission"]["submitter"] == "ada"
    # Nothing is published before the review.
    assert site.client().get(f"/runs/submission-{public_id}").status_code == 404

    mod = site.client("mod")
    queue = BeautifulSoup(mod.get("/admin").text, "html.parser")
    assert queue.select_one(f"#submission-{public_id}") is not None
    review = BeautifulSoup(mod.get(f"/submissions/{public_id}").text, "html.parser")
    assert review.select_one(f'form[action="/admin/submissions/{public_id}/reject"]') is not None
    assert ada.get(f"/submissions/{public_id}").text.count("/admin/submissions/") == 0
    token = csrf_token(mod, "/admin")
    accepted = mod.post(
        f"/admin/submissions/{public_id}/accept",
        data={"csrf_token": token, "note": "Evidence checked."},
        follow_redirects=False,
    )
    assert accepted.status_code == 303, accepted.text

    run_name = f"submission-{public_id}"
    run_page = site.client().get(f"/runs/{run_name}")
    assert run_page.status_code == 200
    shown = BeautifulSoup(run_page.text, "html.parser")
    assert REPORTED_BY in shown.get_text(" ")
    evidence = [a["href"] for a in shown.select("#artifacts a")]
    assert example()["evidenceUrl"] in evidence and example()["artifacts"][0]["url"] in evidence
    run_json = site.client().get(f"/runs/{run_name}.json").json()
    assert run_json["submittedBy"] == "ada"
    assert run_json["digest"] == example()["digests"]["run"]  # the submitter's digest, kept

    # Ranked in the SOL-ExecBench B200 group it shares protocol and environment with: the fastest.
    board = site.client().get(f"/workloads/{WORKLOAD}.json?runs=all").json()
    assert [(row["name"], row["latencyNs"]) for row in board["ranked"]][:2] == [
        (run_name, 25868),
        ("sol-submission-36270", 25913),
    ]
    assert board["ranked"][0]["rank"] == 1

    account = BeautifulSoup(ada.get("/account").text, "html.parser")
    assert account.select_one(f'a[href="/runs/{run_name}"]') is not None
    assert site.client().get("/sources/submissions").status_code == 200
    assert "Submitted runs" in site.client().get("/sources").text
    assert ada.get(f"/submissions/{public_id}.json").json()["submission"]["runName"] == run_name
    credits = site.client().get("/users/ada.json").json()
    assert [(r["runName"], r["latencyNs"], r["withdrawn"]) for r in credits["runs"]] == [(run_name, 25868, False)]
    assert 'href="/users/ada"' in run_page.text

    # Withdrawn by its submitter: out of the ranking, the reason on its page, in the audit log.
    token = csrf_token(ada, f"/submissions/{public_id}")
    no_reason = ada.post(f"/submissions/{public_id}/withdraw", data={"csrf_token": token, "reason": " "})
    assert no_reason.status_code == 400 and "Give a reason" in no_reason.text
    withdrawn = ada.post(
        f"/submissions/{public_id}/withdraw",
        data={"csrf_token": token, "reason": "Timer bug found."},
        follow_redirects=False,
    )
    assert withdrawn.status_code == 303, withdrawn.text
    board = site.client().get(f"/workloads/{WORKLOAD}.json?runs=all").json()
    assert run_name not in [row["name"] for row in board["ranked"]]
    assert "Timer bug found." in site.client().get(f"/runs/{run_name}").text
    assert site.client().get("/users/ada.json").json()["runs"][0]["withdrawn"] is True
    assert site.client().get("/users/nobody").status_code == 404
    with site.sessions() as session:
        actions = session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)).all()
    assert actions[-3:] == ["submission.submit", "submission.accept", "run.withdraw"]


def test_kernelindex_submit_sends_a_run_through_review_to_the_ranking(site: Site) -> None:
    """The command line end to end: ``kernelindex submit`` against the app served on 127.0.0.1, the
    maintainers' acceptance, the run ranked first in its group."""
    with serving(site.app) as base:
        result = CliRunner().invoke(
            main,
            ["submit", str(EXAMPLE), "--registry", base, "--api-key", site.key, "--json"],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        receipt = json.loads(result.stdout)
        assert receipt["status"] == "pending"
        again = CliRunner().invoke(main, ["submit", str(EXAMPLE), "--registry", base, "--api-key", site.key])
        assert again.exit_code == 1 and "check: duplicate" in again.output
    mod = site.client("mod")
    accepted = mod.post(
        f"/admin/submissions/{receipt['id']}/accept",
        data={"csrf_token": csrf_token(mod, "/admin"), "note": ""},
        follow_redirects=False,
    )
    assert accepted.status_code == 303, accepted.text
    board = site.client().get(f"/workloads/{WORKLOAD}.json?runs=all").json()
    assert (board["ranked"][0]["name"], board["ranked"][0]["rank"]) == (f"submission-{receipt['id']}", 1)


def test_the_maintainers_reject_or_ask_for_changes_and_decide_once(site: Site) -> None:
    first = site.submit(example()).json()["id"]
    second_document = example()
    second_document["run"]["spec"]["observedAt"] = "2026-12-01T09:00:00Z"
    second = site.submit(signed(second_document)).json()["id"]
    mod = site.client("mod")
    token = csrf_token(mod, "/admin")

    no_reason = mod.post(f"/admin/submissions/{first}/reject", data={"csrf_token": token, "reason": " "})
    assert no_reason.status_code == 400
    rejected = mod.post(
        f"/admin/submissions/{first}/reject",
        data={"csrf_token": token, "reason": "The evidence link is private."},
        follow_redirects=False,
    )
    assert rejected.status_code == 303
    again = mod.post(f"/admin/submissions/{first}/accept", data={"csrf_token": token, "note": ""})
    assert again.status_code == 409
    changes = mod.post(
        f"/admin/submissions/{second}/request-changes",
        data={"csrf_token": token, "note": "Add the raw timings as an artifact."},
        follow_redirects=False,
    )
    assert changes.status_code == 303

    ada = site.client("ada")
    assert ada.get(f"/submissions/{first}.json").json()["submission"]["status"] == "rejected"
    sent_back = ada.get(f"/submissions/{second}.json").json()["submission"]
    assert sent_back["status"] == "changes-requested"
    assert sent_back["reviewNote"] == "Add the raw timings as an artifact."
    assert "The evidence link is private." in ada.get(f"/submissions/{first}").text
    # A rejected run may be submitted again (it is no duplicate), and is published by no decision above.
    assert site.submit(example()).status_code == 202
    with site.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Run).where(Run.name.like("submission-%"))) == 0


def test_a_submission_is_seen_by_its_submitter_and_the_maintainers_alone(site: Site) -> None:
    public_id = site.submit(example()).json()["id"]
    with site.sessions.begin() as session:
        accounts.create_user(session, "eve", PASSWORD)
    assert site.client("eve").get(f"/submissions/{public_id}").status_code == 404
    assert site.client("mod").get(f"/submissions/{public_id}").status_code == 200
    signed_out = site.client().get(f"/submissions/{public_id}", follow_redirects=False)
    assert signed_out.status_code == 303


# --- Refusals ------------------------------------------------------------------------------------------


def _http_evidence(d: dict[str, Any]) -> None:
    d["evidenceUrl"] = "http://example.com/run"


def _unknown_field(d: dict[str, Any]) -> None:
    d["speedup"] = 3


def _other_source(d: dict[str, Any]) -> None:
    d["run"]["spec"]["sourceNative"] = {"source": "sol-execbench", "benchmark": "x", "externalId": "1"}


def _forged_run_digest(d: dict[str, Any]) -> None:
    d["digests"]["run"] = "sha256:" + "0" * 64


def _run_names_another_implementation(d: dict[str, Any]) -> None:
    d["run"]["spec"]["implementationDigest"] = "sha256:" + "1" * 64
    d["digests"]["run"] = parse_manifest(d["run"]).digest


def _unknown_workload(d: dict[str, Any]) -> None:
    d["workload"]["slug"] = "no-such-workload"


def _someone_elses_workload(d: dict[str, Any]) -> None:
    d["workload"]["slug"] = OTHER_WORKLOAD


def _unknown_case_digest(d: dict[str, Any]) -> None:
    d["cases"][3]["caseDigest"] = case_digest({"batch_size": 3})


def _missing_case(d: dict[str, Any]) -> None:
    del d["cases"][-1]
    del d["run"]["spec"]["caseResults"][-1]


def _case_out_of_range(d: dict[str, Any]) -> None:
    d["cases"][0]["caseIndex"] = 99


def _microseconds(d: dict[str, Any]) -> None:
    for result in d["run"]["spec"]["caseResults"]:
        result["latencyNs"]["mean"] //= 1000
    d["run"]["spec"]["timing"]["latencyNs"]["mean"] //= 1000


def _statistic_not_the_protocols(d: dict[str, Any]) -> None:
    spec = d["run"]["spec"]
    spec["timing"] = {"latencyNs": {"median": 25868}, "primaryStatistic": "median"}
    for result in spec["caseResults"]:
        result["latencyNs"] = {"median": result["latencyNs"]["mean"]}


def _below_the_bound(d: dict[str, Any]) -> None:
    # Case 2's T_SOL is 0.0007 ms = 700 ns.
    d["run"]["spec"]["caseResults"][2]["latencyNs"]["mean"] = 650


REFUSALS = {
    "evidence over http": (_http_evidence, "schema", 400),
    "unknown field": (_unknown_field, "schema", 400),
    "another source's figure": (_other_source, "schema", 422),
    "forged run digest": (_forged_run_digest, "digest", 422),
    "run names another implementation": (_run_names_another_implementation, "digest", 422),
    "unknown workload": (_unknown_workload, "workload", 422),
    "someone else's workload slug": (_someone_elses_workload, "workload", 422),
    "unknown case digest": (_unknown_case_digest, "case", 422),
    "a case missing from a suite run": (_missing_case, "case", 422),
    "a case the workload lacks": (_case_out_of_range, "case", 422),
    "figures in microseconds": (_microseconds, "unit", 422),
    "a statistic the protocol does not measure": (_statistic_not_the_protocols, "unit", 422),
    "a figure below the speed-of-light bound": (_below_the_bound, "below-bound", 422),
}


@pytest.mark.parametrize("change", list(REFUSALS), ids=list(REFUSALS))
def test_each_refusal_names_its_check_and_stores_nothing(site: Site, change: str) -> None:
    mutate, check, status = REFUSALS[change]
    document = example()
    mutate(document)
    if check not in ("digest", "schema"):
        document = signed(document)  # only the check under test may fail
    before = stored(site.sessions)
    response = site.submit(document)
    assert response.status_code == status, response.text
    problem = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert (problem["check"], problem["status"]) == (check, status)
    assert problem["detail"]
    assert stored(site.sessions) == before


def test_a_figure_below_the_bound_is_refused_with_the_bound(site: Site) -> None:
    document = example()
    _below_the_bound(document)
    problem = site.submit(signed(document)).json()
    assert (problem["caseIndex"], problem["latencyNs"]) == (2, 650)
    assert problem["boundNs"] == pytest.approx(700)
    assert "650 ns" in problem["detail"] and "700 ns" in problem["detail"]


def test_a_run_is_submitted_once(site: Site) -> None:
    assert site.submit(example()).status_code == 202
    before = stored(site.sessions)
    again = site.submit(example())
    assert (again.status_code, again.json()["check"]) == (409, "duplicate")
    assert stored(site.sessions) == before


def test_a_published_run_is_no_new_submission(site: Site) -> None:
    public_id = site.submit(example()).json()["id"]
    mod = site.client("mod")
    token = csrf_token(mod, "/admin")
    mod.post(f"/admin/submissions/{public_id}/accept", data={"csrf_token": token, "note": ""}, follow_redirects=False)
    before = stored(site.sessions)
    again = site.submit(example())
    assert (again.status_code, again.json()["check"]) == (409, "duplicate")
    assert stored(site.sessions) == before


@pytest.mark.parametrize(
    ("body", "check", "status"),
    [
        (b'{"apiVersion": "kernelindex.dev/v1alpha1",\x00 "kind": "Submission"}', "schema", 400),
        (b"not json", "schema", 400),
        (b"[]", "schema", 400),
        (b"\xff\xfe{}", "schema", 400),
        (b'{"a": "' + b"x" * (MAX_BYTES + 10) + b'"}', "size", 413),
    ],
    ids=["a NUL byte", "not JSON", "not an object", "not UTF-8", "oversized"],
)
def test_bad_bodies_are_refused_with_their_check(site: Site, body: bytes, check: str, status: int) -> None:
    before = stored(site.sessions)
    response = site.submit(body)
    assert response.status_code == status
    assert response.json()["check"] == check
    assert stored(site.sessions) == before


def test_an_escaped_nul_in_a_manifest_is_refused(site: Site) -> None:
    document = example()
    document["implementation"]["metadata"]["title"] = "fused\u0000conv"
    response = site.submit(signed(document))
    assert (response.status_code, response.json()["check"]) == (400, "schema")
    assert "implementation.metadata.title" in response.json()["detail"]


def test_without_a_key_of_the_scope_nothing_is_submitted(site: Site) -> None:
    ada = site.client("ada")
    read_key = api_key(ada, ["attest"], label="attester")
    before = stored(site.sessions)
    no_key = site.client().post(API, content=EXAMPLE.read_bytes(), headers={"Content-Type": "application/json"})
    assert (no_key.status_code, no_key.json()["check"]) == (401, "auth")
    wrong_scope = site.submit(example(), key=read_key)
    assert (wrong_scope.status_code, wrong_scope.json()["check"]) == (403, "auth")
    forged = site.submit(example(), key=site.key[:-4] + "AAAA")
    assert forged.status_code == 401
    assert stored(site.sessions) == before


def test_the_daily_limit_refuses_with_the_rate_check(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LIMITS, "submit", Limit("submit", 1, 86400, "One a day in this test."))
    assert site.submit(example()).status_code == 202
    other = example()
    other["run"]["spec"]["observedAt"] = "2026-12-01T09:00:00Z"
    before = stored(site.sessions)
    limited = site.submit(signed(other))
    assert (limited.status_code, limited.json()["check"]) == (429, "rate")
    assert "retry-after" in limited.headers
    assert stored(site.sessions) == before


# --- The form ------------------------------------------------------------------------------------------


def test_the_form_submits_for_signed_in_users_and_shows_refusals_beside_the_document(site: Site) -> None:
    assert site.client().get("/submit", follow_redirects=False).status_code == 303
    ada = site.client("ada")
    token = csrf_token(ada, "/submit")
    assert ada.post("/submit", data={"document": EXAMPLE.read_text()}).status_code == 403  # no CSRF token

    document = example()
    _unknown_case_digest(document)
    before = stored(site.sessions)
    refused = ada.post("/submit", data={"csrf_token": token, "document": json.dumps(signed(document))})
    assert refused.status_code == 422
    error = BeautifulSoup(refused.text, "html.parser").select_one("#e-document")
    assert error is not None and "case check" in error.get_text()
    assert stored(site.sessions) == before

    sent = ada.post("/submit", data={"csrf_token": token, "document": EXAMPLE.read_text()}, follow_redirects=False)
    assert sent.status_code == 303
    assert sent.headers["location"].startswith("/submissions/")
    key_form = BeautifulSoup(ada.get("/account").text, "html.parser")
    assert key_form.select_one('input[name="scope"][value="submissions:write"]') is not None


def test_the_example_names_a_bundled_workload_at_its_digest(site: Site) -> None:
    workload = workload_of(site.sessions, WORKLOAD)
    document = example()
    assert document["workload"] == {"slug": WORKLOAD, "digest": workload.digest}
    cases = json.loads(workload.manifest_json)["spec"]["cases"]
    assert [case["caseDigest"] for case in document["cases"]] == [case_digest(case["axes"]) for case in cases]


def test_the_openapi_document_publishes_the_submission_schema(site: Site) -> None:
    document = site.client().get("/api/openapi.json").json()
    operation = document["paths"][API]["post"]
    assert operation["operationId"] == "createSubmission"
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert "#/$defs/" not in json.dumps(schema)  # self-contained: nothing points outside the document
    assert {"workload", "cases", "run", "implementation", "environment", "protocol", "digests"} <= set(
        schema["required"]
    )
    assert schema["properties"]["run"]["properties"]["kind"]["const"] == "BenchmarkRun"
    problem = operation["responses"]["4XX"]["content"]["application/problem+json"]["schema"]
    assert "check" in problem["required"]


def test_a_workload_revised_while_waiting_is_not_accepted(site: Site) -> None:
    public_id = site.submit(example()).json()["id"]
    with site.sessions.begin() as session:
        workload = session.scalar(select(Workload).where(Workload.name == WORKLOAD))
        assert workload is not None
        workload.digest = "sha256:" + "9" * 64  # as a re-ingest of a changed definition leaves it
    before = stored(site.sessions)
    mod = site.client("mod")
    refused = mod.post(
        f"/admin/submissions/{public_id}/accept", data={"csrf_token": csrf_token(mod, "/admin"), "note": ""}
    )
    assert refused.status_code == 409 and "was revised since" in refused.text
    assert stored(site.sessions) == before
    assert site.client("ada").get(f"/submissions/{public_id}.json").json()["submission"]["status"] == "pending"
