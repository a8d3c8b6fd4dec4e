"""Moderation at /admin: access, the queues, and each action with its audit entry."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.accounts.ratelimit import LIMITS, Limit
from kernelindex.db.account_tables import AuditEntry
from kernelindex.db.tables import Attestation, ManifestVersion, Report, Run
from kernelindex.ingest.runner import run_ingest
from kernelindex.store import accounts, moderation
from tests.factories import PASSWORD, attestation_row, csrf_token, sign_in
from tests.upstream import FakeUpstream

ATTESTED_RUN = "sol-submission-16893"
LEADER = "sol-submission-36270"  # #1 of its group on the leaderboard below
RUNNER_UP = "sol-submission-36339"
WORKLOAD = "l1-040-conv2d-residual-block"
# Every run of kernel 62 beats its suite's speed-of-light bound: all three are held for review.
HELD_WORKLOAD = "l1-062-kv-cache-update-with-rope-backward"
HELD, OTHER_HELD = "sol-submission-33453", "sol-submission-20107"
PUBLISHED, HIDDEN = "att-published", "att-hidden"
CREATED = datetime(2026, 7, 4, 10, 0, tzinfo=UTC)


@dataclass
class Site:
    app: FastAPI
    sessions: sessionmaker[Session]
    report_id: int  # an open report by ada
    anonymous_report_id: int  # an open report by a visitor who was not signed in
    clients: ExitStack

    def client(self, handle: str | None = None) -> TestClient:
        """A browser of its own: signed out, or signed in as ``handle``."""
        client = self.clients.enter_context(TestClient(self.app))
        if handle is not None:
            sign_in(client, handle, next_path="/")
        return client


def token(client: TestClient) -> str:
    """The CSRF token of the admin page's forms."""
    return csrf_token(client, "/admin")


@pytest.fixture
def site(loaded_db, make_app) -> Iterator[Site]:
    with loaded_db.sessions.begin() as session:
        accounts.create_user(session, "mod", PASSWORD, maintainer=True)
        ada = accounts.create_user(session, "ada", PASSWORD)
        run = session.scalar(select(Run).where(Run.name == ATTESTED_RUN))
        session.add_all(
            [
                attestation_row(run, ada, PUBLISHED, "published", CREATED),
                attestation_row(run, ada, HIDDEN, "hidden", CREATED),
            ]
        )
        reports = [
            Report(run_id=run.id, user_id=ada.id, reason="wrong_result", body="Latency looks too good.", state="open"),
            Report(run_id=run.id, user_id=None, reason="reward_hack", body="Skips the reduction.", state="open"),
        ]
        for age, report in enumerate(reports):
            report.created_at = CREATED - timedelta(days=age)
        session.add_all(reports)
        session.flush()
        ids = [report.id for report in reports]
    app = make_app(loaded_db)
    with ExitStack() as clients:
        yield Site(app, loaded_db.sessions, ids[0], ids[1], clients)


def page_of(response) -> BeautifulSoup:  # type: ignore[no-untyped-def]
    return BeautifulSoup(response.text, "html.parser")


def audit_rows(client: TestClient) -> list[list[str]]:
    rows = page_of(client.get("/admin")).select("#audit tbody tr")
    return [[cell.get_text(" ", strip=True) for cell in row.select("td")] for row in rows]


def audit_count(site: Site) -> int:
    with site.sessions() as session:
        return session.scalar(select(func.count()).select_from(AuditEntry))


def withdraw_first(site: Site) -> None:
    with site.sessions.begin() as session:
        mod = accounts.find_user(session, "mod")
        moderation.withdraw_run(session, mod, ATTESTED_RUN, "set up for the test")


# (method, path, form data a maintainer sends, what to prepare so the action can succeed)
ROUTES: list[tuple[str, str, dict[str, str], Callable[[Site], None] | None]] = [
    ("GET", "/admin", {}, None),
    ("GET", f"/admin?run={ATTESTED_RUN}", {}, None),
    ("POST", "/admin/reports/{report}/resolve", {"note": "Confirmed and withdrawn."}, None),
    ("POST", "/admin/reports/{report}/dismiss", {"note": "Measured correctly."}, None),
    ("POST", f"/admin/attestations/{PUBLISHED}/hide", {"reason": "Spam."}, None),
    ("POST", f"/admin/attestations/{HIDDEN}/unhide", {"reason": "Not spam after all."}, None),
    ("POST", f"/admin/runs/{ATTESTED_RUN}/withdraw", {"reason": "Wrong result."}, None),
    ("POST", f"/admin/runs/{ATTESTED_RUN}/restore", {"reason": "The report was mistaken."}, withdraw_first),
    ("POST", f"/admin/runs/{HELD}/release", {"note": "Checked the trace: the bound is wrong."}, None),
    ("POST", f"/admin/runs/{HELD}/reject", {"note": "Skips work on the large cases."}, None),
]
ROUTE_IDS = [f"{method} {path.split('?')[0]}{'?run' if '?' in path else ''}" for method, path, _, _ in ROUTES]


def send(client: TestClient, method: str, path: str, data: dict[str, str], site: Site, csrf: str | None = None):  # type: ignore[no-untyped-def]
    path = path.format(report=site.report_id)
    if method == "GET":
        return client.get(path, follow_redirects=False)
    form = {**data, "csrf_token": csrf} if csrf is not None else data
    return client.post(path, data=form, follow_redirects=False, headers={"Accept": "text/html"})


# --- Access -------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "data", "prepare"), ROUTES, ids=ROUTE_IDS)
def test_admin_route_sends_signed_out_visitors_to_sign_in(site, method, path, data, prepare):
    client = site.client()
    response = send(client, method, path, data, site, csrf=csrf_token(client, "/signin"))
    assert response.status_code == 303
    expected = "/signin?next=" + (path.replace("?", "%3F").replace("=", "%3D") if method == "GET" else "/admin")
    assert response.headers["location"] == expected
    assert audit_count(site) == 0


@pytest.mark.parametrize(("method", "path", "data", "prepare"), ROUTES, ids=ROUTE_IDS)
def test_admin_route_refuses_accounts_that_are_not_maintainers(site, method, path, data, prepare):
    client = site.client("ada")
    response = send(client, method, path, data, site, csrf=csrf_token(client, "/account"))
    assert response.status_code == 403
    assert "for maintainers only" in page_of(response).select_one("main").get_text()
    assert audit_count(site) == 0


@pytest.mark.parametrize(("method", "path", "data", "prepare"), ROUTES, ids=ROUTE_IDS)
def test_admin_route_serves_maintainers(site, method, path, data, prepare):
    if prepare:
        prepare(site)
    before = audit_count(site)
    client = site.client("mod")
    response = send(client, method, path, data, site, csrf=token(client))
    if method == "GET":
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        assert page_of(response).select_one("h1").get_text() == "Moderation"
        assert audit_count(site) == before
    else:
        assert response.status_code == 303 and response.headers["location"] == "/admin"
        assert audit_count(site) == before + 1
        notice = page_of(client.get("/admin")).select_one('[role="status"]').get_text()
        assert notice and "is" in notice
        # The notice is shown once.
        assert page_of(client.get("/admin")).select_one('[role="status"]') is None


@pytest.mark.parametrize(("method", "path", "data", "prepare"), [r for r in ROUTES if r[0] == "POST"])
@pytest.mark.parametrize("given", [None, "forged-token"])
def test_admin_action_without_this_sessions_csrf_token_is_refused(site, method, path, data, prepare, given):
    if prepare:
        prepare(site)
    client = site.client("mod")
    before = admin_state(site)
    response = send(client, method, path, data, site, csrf=given)
    assert response.status_code == 403
    assert "did not come from this site" in response.text
    assert admin_state(site) == before


def admin_state(site: Site) -> tuple[object, ...]:
    """Everything an action may change."""
    with site.sessions() as session:
        return (
            session.scalar(select(func.count()).select_from(AuditEntry)),
            tuple(session.execute(select(Report.id, Report.state, Report.resolution_note).order_by(Report.id))),
            tuple(session.execute(select(Attestation.name, Attestation.state, Attestation.hidden_reason))),
            tuple(session.execute(select(Run.name, Run.withdrawn_at).where(Run.withdrawn_at.is_not(None)))),
            tuple(
                session.execute(
                    select(Run.name, Run.held_for_review, Run.review_state, Run.review_note)
                    .where(Run.held_for_review.is_(True) | Run.review_state.is_not(None))
                    .order_by(Run.name)
                )
            ),
        )


# --- The page ---------------------------------------------------------------------------


def test_admin_page_lists_open_reports_newest_first_with_counts(site):
    page = page_of(site.client("mod").get("/admin"))
    rows = page.select("#reports tbody tr")
    assert [row["id"] for row in rows] == [f"report-{site.report_id}", f"report-{site.anonymous_report_id}"]
    cells = [[cell.get_text(" ", strip=True) for cell in row.select("td")[:5]] for row in rows]
    assert cells[0][0] == "2026-07-04" and cells[0][2:] == ["Wrong result", "Latency looks too good.", "ada"]
    assert cells[1][0] == "2026-07-03" and cells[1][2:] == ["Reward hack", "Skips the reduction.", "anonymous"]
    assert rows[0].select_one("td a")["href"] == f"/runs/{ATTESTED_RUN}"
    counts = {
        name: page.select_one(f"#count-{name}").get_text() for name in ("reports", "withdrawn", "hidden", "audit")
    }
    assert counts == {"reports": "2", "withdrawn": "0", "hidden": "1", "audit": "0"}
    assert [row["id"] for row in page.select("#hidden tbody tr")] == [f"hidden-{HIDDEN}"]
    assert [row["id"] for row in page.select("#attestations tbody tr")] == [f"attestation-{PUBLISHED}"]
    assert page.select_one("#audit tbody").get_text(strip=True) == "Nothing has been done yet."


def test_admin_lookup_finds_a_run_to_act_on_or_says_there_is_none(site):
    client = site.client("mod")
    found = page_of(client.get(f"/admin?run={LEADER}"))
    form = found.select_one("#run-found form")
    assert form["action"] == f"/admin/runs/{LEADER}/withdraw" and form.select_one('input[name="reason"]')
    missing = client.get("/admin?run=sol-submission-0")
    assert missing.status_code == 404
    assert "no run named 'sol-submission-0'" in page_of(missing).select_one("#admin-error").get_text()
    held = page_of(client.get(f"/admin?run={HELD}")).select("#run-found form")
    assert [form["action"] for form in held] == [f"/admin/runs/{HELD}/release", f"/admin/runs/{HELD}/withdraw"]
    assert held[0].select_one("button[formaction]")["formaction"] == f"/admin/runs/{HELD}/reject"
    attestation_card = page_of(client.get(f"/admin?attestation={HIDDEN}")).select_one("#attestation-found form")
    assert attestation_card["action"] == f"/admin/attestations/{HIDDEN}/unhide"


# --- Withdrawing a run -------------------------------------------------------------------


def ranked_names(client: TestClient) -> list[str]:
    return [row["name"] for row in client.get(f"/workloads/{WORKLOAD}.json").json()["ranked"]]


def test_withdrawing_a_run_unranks_it_keeps_its_record_and_restoring_ranks_it_again(site):
    client, reader = site.client("mod"), site.client()
    assert ranked_names(reader)[:2] == [LEADER, RUNNER_UP]
    with site.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == LEADER))
        digest, versions = run.digest, session.scalar(select(func.count()).where(ManifestVersion.name == LEADER))
    reason = "Timing harness bypassed (see report)."

    response = client.post(f"/admin/runs/{LEADER}/withdraw", data={"csrf_token": token(client), "reason": reason})
    assert response.status_code == 200  # followed the 303 to /admin
    assert str(response.url).endswith("/admin") and response.history[0].status_code == 303
    today = datetime.now(UTC).strftime("%Y-%m-%d")

    run_page = page_of(reader.get(f"/runs/{LEADER}"))
    banners = [banner.get_text() for banner in run_page.select(".banner")]
    assert any(reason in banner and today in banner for banner in banners), banners
    board = reader.get(f"/workloads/{WORKLOAD}.json").json()
    assert LEADER not in [row["name"] for row in board["ranked"]]
    assert (board["ranked"][0]["name"], board["ranked"][0]["rank"]) == (RUNNER_UP, 1)
    assert [row["reasons"] for row in board["ineligible"] if row["name"] == LEADER] == [["withdrawn by a maintainer"]]
    run_json = reader.get(f"/runs/{LEADER}.json")
    assert run_json.status_code == 200 and run_json.json()["digest"] == digest
    assert reader.get(f"/manifests/{digest}").status_code == 200
    with site.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == LEADER))
        assert run.digest == digest and run.withdrawn_reason == reason
        assert run.withdrawn_at is not None and datetime.now(UTC) - run.withdrawn_at < timedelta(minutes=5)
        assert session.scalar(select(func.count()).where(ManifestVersion.name == LEADER)) == versions

    admin = page_of(client.get("/admin"))
    withdrawn = admin.select_one(f"#withdrawn-{LEADER}").get_text(" ", strip=True)
    assert reason in withdrawn and today in withdrawn
    assert audit_rows(client)[0][1:] == ["mod", "run.withdraw", f"run {LEADER}", reason]
    assert audit_rows(client)[0][0].startswith(today)

    again = client.post(f"/admin/runs/{LEADER}/withdraw", data={"csrf_token": token(client), "reason": reason})
    assert again.status_code == 409 and "already withdrawn" in page_of(again).select_one("#admin-error").get_text()

    restored = client.post(
        f"/admin/runs/{LEADER}/restore", data={"csrf_token": token(client), "reason": "The report was wrong."}
    )
    assert restored.status_code == 200 and restored.history[0].status_code == 303
    assert ranked_names(reader)[:2] == [LEADER, RUNNER_UP]
    assert not [b for b in page_of(reader.get(f"/runs/{LEADER}")).select(".banner") if reason in b.get_text()]
    assert [row[1:] for row in audit_rows(client)] == [
        ["mod", "run.restore", f"run {LEADER}", "The report was wrong."],
        ["mod", "run.withdraw", f"run {LEADER}", reason],
    ]


# --- Reviewing runs held for review ---------------------------------------------------------


def held_board(client: TestClient) -> tuple[list[str], dict[str, list[str]]]:
    board = client.get(f"/workloads/{HELD_WORKLOAD}.json").json()
    return [row["name"] for row in board["ranked"]], {row["name"]: row["reasons"] for row in board["ineligible"]}


def banners(client: TestClient, run: str) -> list[str]:
    return [banner.get_text(" ", strip=True) for banner in page_of(client.get(f"/runs/{run}")).select(".banner")]


def test_the_queue_lists_each_held_run_with_its_reason_and_figures(site):
    page = page_of(site.client("mod").get("/admin"))
    rows = {row["id"]: row for row in page.select("#held tbody tr")}
    with site.sessions() as session:
        held = session.scalars(select(Run).where(Run.held_for_review.is_(True))).all()
    assert set(rows) == {f"held-{run.name}" for run in held} and len(held) == 9
    assert page.select_one("#count-held").get_text() == "9"
    row = rows[f"held-{HELD}"]
    cells = [cell.get_text(" ", strip=True) for cell in row.select("td")]
    assert row.select_one("td a")["href"] == f"/runs/{HELD}"
    assert cells[1] == "KV cache update with RoPE backward" or HELD_WORKLOAD in row.select("td a")[1]["href"]
    assert cells[2] == "Faster than the suite's speed-of-light bound"
    latency, bound, percent = cells[3:6]
    assert latency.endswith("µs") and bound.endswith("µs")
    assert float(percent.rstrip("%")) < 100  # what put it in the queue
    assert cells[6] == next(run.observed_at for run in held if run.name == HELD).strftime("%Y-%m-%d")
    form = row.select_one("form")
    assert form["action"] == f"/admin/runs/{HELD}/release" and form.select_one('input[name="note"][required]')
    assert form.select_one("button[formaction]")["formaction"] == f"/admin/runs/{HELD}/reject"


def test_releasing_a_held_run_ranks_it_shows_the_note_and_is_audited(site):
    client, reader = site.client("mod"), site.client()
    ranked, ineligible = held_board(reader)  # read first, so a cached page would be served stale
    assert ranked == [] and ineligible[HELD] == ["held for review: faster than the suite's speed-of-light bound"]
    note = "Checked the trace: the bound on these shapes is wrong."

    response = client.post(f"/admin/runs/{HELD}/release", data={"csrf_token": token(client), "note": note})
    assert response.status_code == 200 and response.history[0].status_code == 303
    page = page_of(response)
    assert f"The run {HELD} is released" in page.select_one('[role="status"]').get_text()
    assert page.select_one(f"#held-{HELD}") is None and page.select_one("#count-held").get_text() == "8"
    assert note in page.select_one(f"#reviewed-{HELD}").get_text()

    ranked, ineligible = held_board(reader)
    assert ranked == [HELD] and HELD not in ineligible
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    api = reader.get(f"/api/v1/runs/{HELD}").json()
    assert api["heldForReview"] is False and api["rank"] == 1 and api["ineligibilityReasons"] == []
    run = reader.get(f"/runs/{HELD}.json").json()
    assert run["rank"] == 1 and run["review"] == api["review"]
    assert run["review"]["state"] == "released" and run["review"]["note"] == note
    assert run["review"]["at"].startswith(today)
    assert any("Released on review" in b and note.rstrip(".") in b and today in b for b in banners(reader, HELD))
    assert audit_rows(client)[0][1:] == ["mod", "run.release", f"run {HELD}", note]

    again = client.post(f"/admin/runs/{HELD}/reject", data={"csrf_token": token(client), "note": "x"})
    assert again.status_code == 409 and "already released" in page_of(again).select_one("#admin-error").get_text()
    assert audit_count(site) == 1


def test_rejecting_a_held_run_keeps_it_shown_and_out_of_the_rankings(site):
    client, reader = site.client("mod"), site.client()
    with site.sessions() as session:
        digest = session.scalar(select(Run.digest).where(Run.name == OTHER_HELD))
    assert held_board(reader)[0] == []
    note = "Skips the work on the large cases."

    response = client.post(f"/admin/runs/{OTHER_HELD}/reject", data={"csrf_token": token(client), "note": note})
    assert response.status_code == 200 and response.history[0].status_code == 303
    assert page_of(response).select_one(f"#held-{OTHER_HELD}") is None

    ranked, ineligible = held_board(reader)
    assert ranked == []
    rejected = "rejected on review by a maintainer: faster than the suite's speed-of-light bound"
    assert ineligible[OTHER_HELD] == [rejected]
    api = reader.get(f"/api/v1/runs/{OTHER_HELD}").json()
    assert api["digest"] == digest and api["rank"] is None and api["heldForReview"] is True
    run = reader.get(f"/runs/{OTHER_HELD}.json").json()
    assert run["rank"] is None and run["review"] == api["review"]
    assert (run["review"]["state"], run["review"]["note"]) == ("rejected", note)
    assert any("Rejected on review" in b and note.rstrip(".") in b for b in banners(reader, OTHER_HELD))
    assert not any(b.startswith("Held for review") for b in banners(reader, OTHER_HELD))
    assert audit_rows(client)[0][1:] == ["mod", "run.reject", f"run {OTHER_HELD}", note]


def test_a_decision_outlives_a_re_ingest_of_the_same_runs(db):
    upstream = FakeUpstream()
    run_ingest(upstream.adapter(), db.sessions, origin="fake upstream")
    released, rejected = "sol-submission-33453", "sol-submission-20107"
    with db.sessions.begin() as session:
        mod = accounts.create_user(session, "mod", PASSWORD, maintainer=True)
        moderation.release_run(session, mod, released, "The bound is wrong for these shapes.")
        moderation.reject_run(session, mod, rejected, "Skips the work on the large cases.")
    # New upstream values for both: new digests, so the ingest rewrites the two rows. The
    # rejected run is now slower than the bound, which alone would no longer hold it.
    for submission in upstream.submissions[62]:
        if submission["id"] == 33453:
            submission["sol_score"] = 0.5
        if submission["id"] == 20107:
            submission["latency_ms"] *= 100
    summary = run_ingest(upstream.adapter(), db.sessions, origin="fake upstream")
    assert summary.counts["updated"] == {"run": 2}
    with db.sessions() as session:
        stored = {run.name: run for run in session.scalars(select(Run).where(Run.name.in_([released, rejected])))}
    assert (stored[released].held_for_review, stored[released].review_state) == (False, "released")
    assert (stored[rejected].held_for_review, stored[rejected].review_state) == (True, "rejected")
    assert stored[rejected].review_note == "Skips the work on the large cases."


def test_moderation_actions_are_rate_limited_per_maintainer(site, monkeypatch):
    monkeypatch.setitem(LIMITS, "moderate", Limit("moderate", 1, 3600, "Too many moderation actions."))
    client = site.client("mod")
    first = client.post(f"/admin/runs/{HELD}/release", data={"csrf_token": token(client), "note": "fine"})
    assert first.status_code == 200
    before = admin_state(site)
    second = client.post(f"/admin/runs/{OTHER_HELD}/reject", data={"csrf_token": token(client), "note": "no"})
    assert second.status_code == 429 and second.headers["retry-after"] == "3600"
    assert "Too many moderation actions." in page_of(second).select_one("#admin-error").get_text()
    assert admin_state(site) == before


# --- Reports and attestations -------------------------------------------------------------


@pytest.mark.parametrize(("action", "state"), [("resolve", "resolved"), ("dismiss", "dismissed")])
def test_closing_a_report_takes_it_off_the_queue_and_is_audited(site, action, state):
    client = site.client("mod")
    path = f"/admin/reports/{site.report_id}/{action}"
    response = client.post(path, data={"csrf_token": token(client), "note": "Checked the logs."})
    assert response.status_code == 200 and response.history[0].status_code == 303
    page = page_of(response)
    assert f"#{site.report_id} is {state}" in page.select_one('[role="status"]').get_text()
    assert [row["id"] for row in page.select("#reports tbody tr")] == [f"report-{site.anonymous_report_id}"]
    assert page.select_one("#count-reports").get_text() == "1"
    with site.sessions() as session:
        report = session.get(Report, site.report_id)
        mod = accounts.find_user(session, "mod")
        assert (report.state, report.resolution_note, report.resolved_by_id) == (state, "Checked the logs.", mod.id)
        assert report.resolved_at is not None and report.body == "Latency looks too good."
    expected = ["mod", f"report.{action}", f"report #{site.report_id} on {ATTESTED_RUN}", "Checked the logs."]
    assert audit_rows(client)[0][1:] == expected

    again = client.post(path, data={"csrf_token": token(client), "note": "twice"})
    assert again.status_code == 409
    assert f"Report #{site.report_id} is already {state}." in page_of(again).select_one("#admin-error").get_text()
    assert audit_count(site) == 1


def test_a_report_may_be_closed_without_a_note(site):
    client = site.client("mod")
    response = client.post(f"/admin/reports/{site.anonymous_report_id}/dismiss", data={"csrf_token": token(client)})
    assert response.status_code == 200
    assert audit_rows(client)[0][1:] == [
        "mod",
        "report.dismiss",
        f"report #{site.anonymous_report_id} on {ATTESTED_RUN}",
        "–",
    ]


def published_attestations(client: TestClient) -> list[str]:
    return [item["name"] for item in client.get(f"/runs/{ATTESTED_RUN}.json").json()["attestations"]]


def test_hiding_an_attestation_takes_it_off_the_run_page_and_unhiding_brings_it_back(site):
    client, reader = site.client("mod"), site.client()
    assert published_attestations(reader) == [PUBLISHED]

    hidden = client.post(f"/admin/attestations/{PUBLISHED}/hide", data={"csrf_token": token(client), "reason": "Spam."})
    assert hidden.status_code == 200 and hidden.history[0].status_code == 303
    assert published_attestations(reader) == []
    row = page_of(hidden).select_one(f"#hidden-{PUBLISHED}").get_text(" ", strip=True)
    assert "Spam." in row and ATTESTED_RUN in row
    with site.sessions() as session:
        stored = session.scalar(select(Attestation).where(Attestation.name == PUBLISHED))
        assert (stored.state, stored.hidden_reason) == ("hidden", "Spam.")
        assert stored.manifest_json  # hidden, not deleted

    shown = client.post(
        f"/admin/attestations/{PUBLISHED}/unhide", data={"csrf_token": token(client), "reason": "Reviewed: genuine."}
    )
    assert shown.status_code == 200
    assert published_attestations(reader) == [PUBLISHED]
    with site.sessions() as session:
        stored = session.scalar(select(Attestation).where(Attestation.name == PUBLISHED))
        assert (stored.state, stored.hidden_reason) == ("published", None)
    assert [row[1:] for row in audit_rows(client)] == [
        ["mod", "attestation.unhide", f"attestation {PUBLISHED}", "Reviewed: genuine."],
        ["mod", "attestation.hide", f"attestation {PUBLISHED}", "Spam."],
    ]


# --- Refusals -----------------------------------------------------------------------------

NEEDS_REASON = [
    (f"/admin/runs/{HELD}/release", f"release:{HELD}", None),
    (f"/admin/runs/{HELD}/reject", f"reject:{HELD}", None),
    (f"/admin/attestations/{PUBLISHED}/hide", f"hide:{PUBLISHED}", None),
    (f"/admin/attestations/{HIDDEN}/unhide", f"unhide:{HIDDEN}", None),
    (f"/admin/runs/{LEADER}/withdraw", f"withdraw:{LEADER}", None),
    (f"/admin/runs/{ATTESTED_RUN}/restore", f"restore:{ATTESTED_RUN}", withdraw_first),
]


@pytest.mark.parametrize(("path", "key", "prepare"), NEEDS_REASON)
# A line break in this one-line field is refused before the action (see the control-character test).
@pytest.mark.parametrize("reason", [None, "", "   "])
def test_an_action_without_a_reason_is_refused_on_the_page_and_changes_nothing(site, path, key, prepare, reason):
    if prepare:
        prepare(site)
    client = site.client("mod")
    before = admin_state(site)
    field = "note" if key.startswith(("release:", "reject:")) else "reason"
    data = {"csrf_token": token(client)} | ({} if reason is None else {field: reason})
    response = client.post(path, data=data, follow_redirects=False)
    assert response.status_code == 400
    page = page_of(response)
    assert ("Write a note" if field == "note" else "Give a reason") in page.select_one("#admin-error").get_text()
    invalid = page.select('input[aria-invalid="true"]')
    assert invalid and all(field["aria-describedby"] == "admin-error" for field in invalid)
    assert admin_state(site) == before


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/admin/reports/999999/resolve", "There is no report #999999."),
        (f"/admin/reports/{2**40}/dismiss", f"There is no report #{2**40}."),
        ("/admin/attestations/att-nobody/hide", "There is no attestation named 'att-nobody'."),
        ("/admin/attestations/att-nobody/unhide", "There is no attestation named 'att-nobody'."),
        ("/admin/runs/sol-submission-0/withdraw", "There is no run named 'sol-submission-0'."),
        ("/admin/runs/sol-submission-0/restore", "There is no run named 'sol-submission-0'."),
        ("/admin/runs/sol-submission-0/release", "There is no run named 'sol-submission-0'."),
        ("/admin/runs/sol-submission-0/reject", "There is no run named 'sol-submission-0'."),
    ],
)
def test_an_action_on_an_unknown_record_is_a_404_on_the_page(site, path, message):
    client = site.client("mod")
    before = admin_state(site)
    response = client.post(path, data={"csrf_token": token(client), "reason": "x", "note": "x"})
    assert response.status_code == 404
    assert page_of(response).select_one("#admin-error").get_text() == message
    assert admin_state(site) == before


@pytest.mark.parametrize(
    ("path", "data", "message"),
    [
        (f"/admin/attestations/{PUBLISHED}/unhide", {"reason": "x"}, "is already published"),
        (f"/admin/attestations/{HIDDEN}/hide", {"reason": "x"}, "is already hidden"),
        (f"/admin/runs/{LEADER}/restore", {"reason": "x"}, "is not withdrawn"),
        (f"/admin/runs/{LEADER}/withdraw", {"reason": "x" * 501}, "Keep it to 500 characters"),
        (f"/admin/runs/{LEADER}/release", {"note": "x"}, "is not held for review"),
        (f"/admin/runs/{HELD}/reject", {"note": "x" * 2001}, "Keep it to 2,000 characters"),
        ("/admin/reports/{report}/resolve", {"note": "x" * 2001}, "Keep it to 2,000 characters"),
    ],
)
def test_an_action_that_cannot_be_met_is_explained_and_keeps_the_input(site, path, data, message):
    client = site.client("mod")
    before = admin_state(site)
    response = client.post(path.format(report=site.report_id), data={"csrf_token": token(client), **data})
    assert response.status_code in (400, 409)
    page = page_of(response)
    assert message in page.select_one("#admin-error").get_text()
    assert admin_state(site) == before
    if "Keep it to" in message:  # a refused form keeps what was typed
        assert page.select_one('input[aria-invalid="true"]')["value"] == next(iter(data.values()))


def test_a_reason_with_a_control_character_is_refused_before_any_action(site):
    client = site.client("mod")
    before = admin_state(site)
    response = client.post(
        f"/admin/runs/{LEADER}/withdraw", data={"csrf_token": token(client), "reason": "bad\x00byte"}
    )
    assert response.status_code == 400
    assert "control characters" in page_of(response).select_one("section.error").get_text()
    assert admin_state(site) == before
