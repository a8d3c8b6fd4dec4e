"""Ingestion against a misbehaving upstream (PRODUCT.md §9): every case handled and counted."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import joinedload

from kernelindex.db.tables import IngestionReport, ManifestVersion, Run, Workload
from kernelindex.ingest.http import Fetcher, UpstreamError
from kernelindex.ingest.runner import run_ingest
from kernelindex.ingest.sources import ingest as ingest_source
from kernelindex.settings import Settings
from kernelindex.store import ingest as store_ingest
from kernelindex.store.batch import Batch
from tests.multi_gpu_catalogue import NEW_SHA, NOW, PROBLEM_SOURCE, problem_workload
from tests.servers import serving
from tests.upstream import BASE_URL, FakeUpstream, served


def ingest(db, upstream: FakeUpstream, **kwargs):  # type: ignore[no-untyped-def]
    return run_ingest(upstream.adapter(**kwargs), db.sessions, origin="fake upstream")


def runs(db) -> dict[str, Run]:  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        return {run.external_id: run for run in session.scalars(select(Run).options(joinedload(Run.workload)))}


def workload_ids(db) -> set[str]:  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        return set(session.scalars(select(Workload.external_id)))


def test_ingest_paginates_by_total_offset_limit(db):
    upstream = FakeUpstream()
    summary = ingest(db, upstream, page_limit=2)
    assert summary.status == "succeeded"
    pages = [r for r in upstream.requests if r.url.path.endswith("/submissions")]
    assert {(r.url.params["offset"], r.url.params["limit"]) for r in pages} >= {("0", "2"), ("2", "2")}
    assert len(runs(db)) == sum(len(rows) for rows in upstream.submissions.values())


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"data": {"id": 40, "name": "x", "axes": {', id="truncated-json"),
        pytest.param(b'{"data": [1, 2, 3]}', id="wrong-shape"),
        pytest.param(b'{"kernel": {}}', id="not-wrapped-in-data"),
        pytest.param(b'{"data": {"id": 40, "value": NaN}}', id="nan-literal"),
    ],
)
def test_unreadable_kernel_fails_alone_and_writes_nothing_for_it(db, body):
    upstream = FakeUpstream()
    upstream.intercept = lambda r: httpx.Response(200, content=body) if r.url.path.endswith("/kernels/40") else None
    summary = ingest(db, upstream)
    assert summary.status == "partial"
    assert summary.counts["units"] == {"listed": 3, "ingested": 2, "failed": 1}
    assert len(summary.errors) == 1 and "40" in summary.errors[0]
    assert workload_ids(db) == {"39", "62"}
    with db.sessions() as session:
        report = session.get_one(IngestionReport, summary.report_id)
        assert report.status == "partial" and report.errors == summary.errors


@pytest.mark.parametrize(
    ("path", "url", "where"),
    [
        pytest.param("/kernels/40", f"{BASE_URL}kernels/40", "", id="detail"),
        pytest.param(
            "/submissions",
            f"{BASE_URL}submissions?kernel_id=40&offset=0&limit=2",
            "its submissions: ",
            id="submissions-page",
        ),
    ],
)
def test_a_body_that_is_not_json_is_reported_with_the_kernel_and_the_url(db, path, url, where):
    upstream = FakeUpstream()

    def broken(request: httpx.Request) -> httpx.Response | None:
        is_40 = path == "/kernels/40" or request.url.params.get("kernel_id") == "40"
        if request.url.path.endswith(path) and is_40:
            return httpx.Response(200, content=b"<html>Bad gateway</html>")
        return None

    upstream.intercept = broken
    summary = ingest(db, upstream)
    assert summary.errors == [
        f"kernel 40 (040_conv2d_residual_block): {where}{url}: the response is not valid JSON "
        "(Expecting value: line 1 column 1 (char 0))"
    ]
    assert workload_ids(db) == {"39", "62"}


def test_kernel_without_workloads_is_reported_by_field(db):
    upstream = FakeUpstream()
    del upstream.kernels[40]["workloads"]
    summary = ingest(db, upstream)
    assert summary.counts["units"]["failed"] == 1
    assert "workloads" in summary.errors[0]
    assert workload_ids(db) == {"39", "62"}


def test_unknown_upstream_fields_are_accepted_and_reported_as_drift(db):
    upstream = FakeUpstream()
    upstream.kernels[39]["difficulty"] = "hard"
    upstream.submission(39)["energy_joules"] = 1.5
    summary = ingest(db, upstream)
    assert summary.status == "succeeded"
    assert summary.drift == ["kernel.difficulty", "submission.energy_joules"]
    assert len(runs(db)) == 10


def test_server_errors_are_retried_with_backoff_then_succeed(db):
    upstream = FakeUpstream()
    failures = {"left": 2}

    def flaky(request: httpx.Request) -> httpx.Response | None:
        if request.url.path.endswith("/kernels/39") and failures["left"]:
            failures["left"] -= 1
            return httpx.Response(503 if failures["left"] else 429, headers={"Retry-After": "1"})
        return None

    upstream.intercept = flaky
    summary = ingest(db, upstream, retries=3)
    assert summary.status == "succeeded"
    assert sum(r.url.path.endswith("/kernels/39") for r in upstream.requests) == 3


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(lambda r: httpx.Response(500), id="http-500"),
        pytest.param(lambda r: httpx.Response(429), id="http-429"),
        pytest.param(lambda r: (_ for _ in ()).throw(httpx.ReadTimeout("slow", request=r)), id="timeout"),
        pytest.param(lambda r: (_ for _ in ()).throw(httpx.ConnectError("refused", request=r)), id="connect"),
    ],
)
def test_persistent_upstream_failure_fails_the_kernel_after_retries(db, failure):
    upstream = FakeUpstream()
    upstream.intercept = lambda r: failure(r) if r.url.params.get("kernel_id") == "62" else None
    summary = ingest(db, upstream, retries=2)
    assert summary.status == "partial"
    attempts = [r for r in upstream.requests if r.url.params.get("kernel_id") == "62"]
    assert len(attempts) == 3
    assert workload_ids(db) == {"39", "40"}
    assert "submissions" in summary.errors[0]


def test_unlistable_upstream_fails_the_ingest_with_a_report(db):
    upstream = FakeUpstream()
    upstream.intercept = lambda r: httpx.Response(500) if r.url.path.endswith("/kernels") else None
    summary = ingest(db, upstream, retries=1)
    assert summary.status == "failed"
    assert "HTTP 500" in summary.errors[0]
    with db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Workload)) == 0
        assert session.get_one(IngestionReport, summary.report_id).status == "failed"


@pytest.mark.parametrize("latency", [0, -0.5])
def test_non_positive_latency_is_skipped_and_counted(db, latency):
    upstream = FakeUpstream()
    upstream.submission(40)["latency_ms"] = latency
    summary = ingest(db, upstream)
    assert summary.counts["skipped"] == {"non_positive_latency": 1}
    assert str(upstream.submission(40)["id"]) not in runs(db)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"status": "FAILED"}, "not_completed"),
        ({"is_correct": False}, "incorrect"),
        ({"kernel_id": 999}, "wrong_kernel"),
        ({"finished_at": None, "submitted_at": None}, "no_timestamp"),
    ],
)
def test_unusable_submissions_are_skipped_by_reason(db, change, reason):
    upstream = FakeUpstream()
    upstream.submission(39).update(change)
    summary = ingest(db, upstream)
    assert summary.counts["skipped"] == {reason: 1}
    assert str(upstream.submission(39)["id"]) not in runs(db)


def test_naive_timestamps_are_read_as_utc_and_offsets_converted(db):
    upstream = FakeUpstream()
    upstream.submission(39, 0)["finished_at"] = "2026-07-03T03:55:35.544"
    upstream.submission(39, 1)["finished_at"] = "2026-07-03T05:55:35+02:00"
    ingest(db, upstream)
    stored = runs(db)
    first = stored[str(upstream.submission(39, 0)["id"])]
    second = stored[str(upstream.submission(39, 1)["id"])]
    assert json.loads(first.manifest_json)["spec"]["observedAt"] == "2026-07-03T03:55:35.544Z"
    assert json.loads(second.manifest_json)["spec"]["observedAt"] == "2026-07-03T03:55:35Z"
    assert first.observed_at.utcoffset().total_seconds() == 0


def test_submission_listed_on_two_pages_is_stored_once(db):
    upstream = FakeUpstream()
    rows = upstream.submissions[39]
    rows.insert(2, dict(rows[1]))  # the second page starts with the last row of the first
    upstream.totals[39] = len(rows)
    summary = ingest(db, upstream, page_limit=2)
    assert summary.counts["skipped"] == {"duplicate": 1}
    assert len([r for r in runs(db).values() if r.workload.external_id == "39"]) == len(rows) - 1


def test_total_disagreeing_with_pages_is_reported(db):
    upstream = FakeUpstream()
    upstream.totals[40] = 3  # the pages hold 3 rows, but not the 3 it claims beyond them
    upstream.submissions[40] = upstream.submissions[40][:2]
    summary = ingest(db, upstream, page_limit=2)
    assert summary.counts["anomalies"] == {"total_mismatch": 1}
    assert any("total says 3" in line for line in summary.errors)


def test_disqualified_submission_is_stored_as_withdrawn_upstream(db):
    upstream = FakeUpstream()
    upstream.submission(40).update(
        {
            "is_disqualified": True,
            "disqualification_reason": "reward hack",
            "disqualified_at": "2026-08-01T00:00:00",
        }
    )
    summary = ingest(db, upstream)
    run = runs(db)[str(upstream.submission(40)["id"])]
    assert run.upstream_withdrawn and run.upstream_withdrawn_reason == "reward hack"
    assert summary.counts["flags"]["withdrawn_upstream"] == 1
    disqualification = json.loads(run.manifest_json)["spec"]["sourceNative"]["disqualification"]
    assert disqualification == {"reason": "reward hack", "at": "2026-08-01T00:00:00Z"}


def test_run_faster_than_the_sol_bound_is_held_for_review(db):
    upstream = FakeUpstream()
    summary = ingest(db, upstream)
    held = {external_id for external_id, run in runs(db).items() if run.held_for_review}
    assert held == {"33453", "20107", "15511"}  # kernel 62's three runs beat its SOL aggregate
    assert summary.counts["flags"]["held_for_review"] == 3


def test_changed_upstream_value_makes_a_new_digest_and_keeps_the_old(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    target = str(upstream.submission(40)["id"])
    old_digest = runs(db)[target].digest
    upstream.submission(40)["sol_score"] = 0.5
    summary = ingest(db, upstream)
    assert summary.counts["updated"] == {"run": 1}
    new = runs(db)[target]
    assert new.digest != old_digest and new.sol_score == 0.5
    with db.sessions() as session:
        versions = session.execute(
            select(ManifestVersion.digest, ManifestVersion.superseded_at).where(ManifestVersion.name == new.name)
        ).all()
    assert {digest for digest, _ in versions} == {old_digest, new.digest}
    assert {digest for digest, superseded in versions if superseded is None} == {new.digest}


def test_records_missing_upstream_are_kept_and_marked(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    gone_run = upstream.submissions[39].pop(0)
    del upstream.kernels[62]
    summary = ingest(db, upstream)
    stored = runs(db)
    assert stored[str(gone_run["id"])].missing_since is not None
    assert summary.counts["flags"]["missing_upstream"] == 1
    assert summary.counts["flags"]["missing_workloads"] == 1
    with db.sessions() as session:
        kernel_62 = session.scalars(select(Workload).where(Workload.external_id == "62")).one()
        assert kernel_62.missing_since is not None
        assert session.scalar(select(func.count()).select_from(Run)) == len(stored) == 10

    upstream.submissions[39].insert(0, gone_run)
    ingest(db, upstream)
    assert runs(db)[str(gone_run["id"])].missing_since is None


def fail_new_group(monkeypatch, external_id: str, error: Exception | None) -> None:  # type: ignore[no-untyped-def]
    """Make the group of new workloads holding ``external_id`` fail after writing (``error``, or a
    database error without one): the runner then writes each alone, where the patched
    ``apply_batch`` fails that one."""
    real_new = store_ingest.apply_new_batches

    def new_then_fail(session, source, batches, now):  # type: ignore[no-untyped-def]
        written = real_new(session, source, batches, now)
        if any(batch.external_id == external_id for batch in batches):
            if error is not None:
                raise error
            session.execute(text("SELECT * FROM no_such_table WHERE name = :name"), {"name": "secret parameter"})
        return written

    monkeypatch.setattr("kernelindex.ingest.runner.apply_new_batches", new_then_fail)


def test_a_kernel_failing_to_store_leaves_nothing_half_written(db, monkeypatch, caplog):
    upstream = FakeUpstream()
    real_apply = store_ingest.apply_batch

    def apply_then_fail(session, source, batch, now):  # type: ignore[no-untyped-def]
        written = real_apply(session, source, batch, now)
        if batch.external_id == "40":
            raise ValueError("disk full")
        return written

    monkeypatch.setattr("kernelindex.ingest.runner.apply_batch", apply_then_fail)
    fail_new_group(monkeypatch, "40", ValueError("disk full"))
    summary = ingest(db, upstream)
    assert summary.status == "partial"
    # The report is public: one plain line; what went wrong is in the server's log.
    assert summary.errors == [
        "kernel 40 (040_conv2d_residual_block): could not be stored (a database error; the server log has the details)"
    ]
    assert "disk full" in caplog.text
    assert workload_ids(db) == {"39", "62"}
    with db.sessions() as session:
        names = set(session.scalars(select(ManifestVersion.name)))
    assert not any("040" in name for name in names)
    assert {r.workload.external_id for r in runs(db).values()} == {"39", "62"}


def test_changed_workload_definition_replaces_its_cases_and_keeps_its_history(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    with db.sessions() as session:
        old = session.scalars(select(Workload).where(Workload.external_id == "40")).one()
        old_digest, old_cases = old.digest, len(old.cases)
    upstream.kernels[40]["workloads"] = upstream.kernels[40]["workloads"][:5]
    upstream.kernels[40]["description"] = "Changed upstream."
    summary = ingest(db, upstream)
    assert summary.status == "succeeded", summary.errors
    assert summary.counts["updated"]["workload"] == 1
    with db.sessions() as session:
        workload = session.scalars(select(Workload).where(Workload.external_id == "40")).one()
        assert (workload.description, workload.case_count, len(workload.cases)) == ("Changed upstream.", 5, 5)
        assert [case.position for case in workload.cases] == [0, 1, 2, 3, 4]
        digests = set(session.scalars(select(ManifestVersion.digest).where(ManifestVersion.name == workload.name)))
    assert old_cases == 16 and digests == {old_digest, workload.digest}
    # The workload's runs refer to it by digest, so they got new digests too, each with its history.
    assert summary.counts["updated"]["run"] == 3


# --- A real upstream on 127.0.0.1 misbehaving at the socket's level -----------------------

STALL_S = 1.5
TIMEOUT_S = 0.3


async def stall_before_answering(send, path: bytes) -> bool:  # type: ignore[no-untyped-def]
    if not path.endswith(b"/kernels/40"):
        return False
    await asyncio.sleep(STALL_S)
    return True


async def stall_mid_body(send, path: bytes) -> bool:  # type: ignore[no-untyped-def]
    if not path.endswith(b"/kernels/40"):
        return False
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2000")]})
    await send({"type": "http.response.body", "body": b'{"data": {"id": 40, ', "more_body": True})
    await asyncio.sleep(STALL_S)
    return True


async def cut_body_short(send, path: bytes) -> bool:  # type: ignore[no-untyped-def]
    if not path.endswith(b"/kernels/40"):
        return False
    # Fewer bytes than announced, then the connection closes: the server dies mid-response.
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2000")]})
    await send({"type": "http.response.body", "body": b'{"data": {"id": 40, '})
    return True


@pytest.mark.parametrize(
    ("misbehave", "message"),
    [
        pytest.param(stall_before_answering, "timed out 2 times", id="stall-past-timeout"),
        pytest.param(stall_mid_body, "timed out 2 times", id="stall-mid-body"),
        pytest.param(cut_body_short, "connection failed", id="truncated-body"),
    ],
)
def test_real_upstream_stalling_or_cut_short_fails_that_kernel_alone(db, misbehave, message):
    upstream = FakeUpstream()
    settings = Settings(database_url=db.url, http_timeout_s=TIMEOUT_S, http_retries=1)
    with serving(served(upstream, misbehave)) as url:
        started = time.monotonic()
        summary = ingest_source(
            db.sessions, settings, "sol-execbench", options={"base_url": f"{url}/api/"}, sleep=lambda _: None
        )
        elapsed = time.monotonic() - started
    assert summary.status == "partial"
    assert summary.counts["units"] == {"listed": 3, "ingested": 2, "failed": 1}
    assert len(summary.errors) == 1 and "/kernels/40" in summary.errors[0] and message in summary.errors[0]
    assert workload_ids(db) == {"39", "62"}
    # The timeout bounds the wait: two attempts, not two full stalls.
    assert elapsed < 2 * STALL_S


# --- Upstream text and the size and time of an answer -------------------------------------------


def test_a_nul_in_a_username_skips_that_submission_alone(db):
    upstream = FakeUpstream()
    bad = upstream.submission(40)
    bad["username"] = "team\x00x"
    upstream.submission(39)["gpu_type"] = "B200\x1b[31m"
    summary = ingest(db, upstream)
    assert summary.status == "succeeded" and summary.errors == []
    assert summary.counts["skipped"] == {"control_characters": 2}
    stored = runs(db)
    assert str(bad["id"]) not in stored and str(upstream.submission(39)["id"]) not in stored
    assert len(stored) == sum(len(rows) for rows in upstream.submissions.values()) - 2


def test_a_control_character_in_a_kernel_fails_it_with_one_plain_line(db):
    upstream = FakeUpstream()
    upstream.kernels[40]["name"] = "conv\x00"
    summary = ingest(db, upstream)
    assert summary.status == "partial"
    assert summary.errors == [f"kernel 40: {BASE_URL}kernels/40: a text field holds control characters"]
    assert workload_ids(db) == {"39", "62"}


def test_the_source_page_never_shows_a_statement(db, make_app, monkeypatch):
    from fastapi.testclient import TestClient

    upstream = FakeUpstream()
    real_apply = store_ingest.apply_batch

    def apply_then_fail(session, source, batch, now):  # type: ignore[no-untyped-def]
        if batch.external_id == "40":
            session.execute(text("SELECT * FROM no_such_table WHERE name = :name"), {"name": "secret parameter"})
        return real_apply(session, source, batch, now)

    monkeypatch.setattr("kernelindex.ingest.runner.apply_batch", apply_then_fail)
    fail_new_group(monkeypatch, "40", None)
    summary = ingest(db, upstream)
    assert summary.status == "partial"
    with TestClient(make_app(db)) as reader:
        page = reader.get("/sources/sol-execbench")
    assert page.status_code == 200 and "could not be stored" in page.text
    for leak in ("SELECT", "no_such_table", "secret parameter", "sqlalche.me"):
        assert leak not in page.text


async def drip(send, path: bytes) -> bool:  # type: ignore[no-untyped-def]
    if not path.endswith(b"/kernels/40"):
        return False
    # Each byte well within the read timeout, the whole far beyond it.
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2000")]})
    for _ in range(40):
        await send({"type": "http.response.body", "body": b" ", "more_body": True})
        await asyncio.sleep(TIMEOUT_S / 3)
    return True


def test_a_dripping_upstream_is_cut_off_at_the_deadline(db):
    upstream = FakeUpstream()
    settings = Settings(database_url=db.url, http_timeout_s=TIMEOUT_S, http_retries=1)
    with serving(served(upstream, drip)) as url:
        started = time.monotonic()
        summary = ingest_source(
            db.sessions, settings, "sol-execbench", options={"base_url": f"{url}/api/"}, sleep=lambda _: None
        )
        elapsed = time.monotonic() - started
    assert summary.counts["units"] == {"listed": 3, "ingested": 2, "failed": 1}
    assert "/kernels/40" in summary.errors[0] and "timed out 2 times" in summary.errors[0]
    # Two attempts of about the deadline each, not two drips of 40 x TIMEOUT_S / 3.
    assert elapsed < 40 * TIMEOUT_S / 3


def test_reading_stops_at_the_size_cap():
    produced = 0

    def body() -> Iterator[bytes]:
        nonlocal produced
        for _ in range(10_000):
            produced += 1
            yield b" " * 1024

    client = httpx.Client(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, content=body())), base_url=BASE_URL
    )
    fetcher = Fetcher(client, retries=0, max_body_bytes=8 * 1024)
    with pytest.raises(UpstreamError, match="larger than 8192 bytes"):
        fetcher.get("kernels")
    assert produced <= 9


def test_a_declared_length_over_the_cap_is_refused_before_reading():
    client = httpx.Client(
        transport=httpx.MockTransport(
            lambda request: httpx.Response(200, headers={"Content-Length": str(10**9)}, content=b"{}")
        ),
        base_url=BASE_URL,
    )
    with pytest.raises(UpstreamError, match="larger than"):
        Fetcher(client, retries=0).get("kernels")


def test_a_workload_slug_taken_by_another_source_fails_that_kernel_alone(db):
    """Two sources may name a workload alike: the second's is refused, never half-written, and
    the ingest goes on with its other kernels."""
    taken = problem_workload("l1-040-conv2d-residual-block", NEW_SHA, "Another source's workload")
    with db.sessions.begin() as session:
        other = store_ingest.ensure_source(session, PROBLEM_SOURCE)
        store_ingest.apply_batch(session, other, Batch(unit="taken", workload=taken, external_id="taken"), NOW)
    summary = ingest(db, FakeUpstream())
    assert summary.status == "partial"
    assert summary.errors == [
        "kernel 40 (040_conv2d_residual_block): could not be stored (a database error; the server log has the details)"
    ]
    assert workload_ids(db) == {"taken", "39", "62"}
    assert {r.workload.external_id for r in runs(db).values()} == {"39", "62"}
