"""How complete each source's data is: stored against the upstream's own count, and where it was read."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import delete, select

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import IngestionReport, Workload
from kernelindex.ingest.reruns.importer import import_bundled_reruns
from kernelindex.ingest.runner import run_ingest
from kernelindex.ingest.snapshot import SnapshotError, snapshot_facts
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings
from kernelindex.store.completeness import workload_completeness
from tests.rerun_bundles import v1_reruns
from tests.test_web_pages import html, text
from tests.upstream import FakeUpstream

KERNEL_4 = "l1-004-attention-output-projection-with-reshape-backward"
L040 = "l1-040-conv2d-residual-block"
SNAPSHOT_DAY = datetime(2026, 8, 15, 2, 11, tzinfo=UTC)
KERNEL_4_COUNTED = datetime(2026, 8, 14, 16, 43, tzinfo=UTC)
SCOPE = "partial: the top submissions of each kernel's first page of the board, not every submission"
BUNDLED = {
    "readFrom": "bundled",
    "live": False,
    "readAt": "2026-08-15T02:11:00Z",
    "snapshot": {"observedAt": "2026-08-15T02:11:00Z", "scope": SCOPE, "partial": True, "bundled": True},
    "refreshCommand": "kernelindex ingest sol-execbench",
}
KERNEL_4_COMPLETENESS = {
    "stored": 5,
    "noun": "submissions",
    "upstreamTotal": 251,
    "upstreamTotalObservedAt": "2026-08-14T16:43:00Z",
    **BUNDLED,
    "summary": "5 of 251 upstream submissions, from the partial bundled snapshot of 2026-08-15.",
}
L040_COMPLETENESS = {
    "stored": 3,
    "noun": "submissions",
    "upstreamTotal": None,
    "upstreamTotalObservedAt": None,
    **BUNDLED,
    "summary": "3 submissions from the partial bundled snapshot of 2026-08-15; upstream's count was not recorded.",
}
LIVE_HINT = " Run kernelindex ingest sol-execbench for the live data."


# --- What the ingest records ----------------------------------------------------------------


def test_the_bundled_snapshot_stores_only_the_upstream_totals_it_names(loaded_db):
    with loaded_db.sessions() as session:
        totals = session.execute(
            select(Workload.external_id, Workload.upstream_total, Workload.upstream_total_observed_at).where(
                Workload.upstream_total.is_not(None)
            )
        ).all()
    # api/kernels.json holds a submission_count for all 235 kernels; only kernel 4's is upstream's.
    assert totals == [("4", 251, KERNEL_4_COUNTED)]


def test_the_report_of_a_bundled_snapshot_ingest_holds_its_date_and_scope(loaded_db):
    with loaded_db.sessions() as session:
        report = session.scalars(select(IngestionReport)).one()
    assert (report.read_from, report.snapshot_observed_at, report.snapshot_scope) == ("bundled", SNAPSHOT_DAY, SCOPE)


def test_another_snapshot_folder_is_a_snapshot_not_the_bundled_one(db, tmp_path):
    copy = tmp_path / "sol-copy"
    shutil.copytree(BUNDLED_SNAPSHOT, copy)
    facts = json.loads((copy / "snapshot.json").read_text())
    del facts["upstreamTotals"]
    (copy / "snapshot.json").write_text(json.dumps(facts))
    summary = ingest(db.sessions, Settings(database_url=db.url), "sol-execbench", snapshot=copy)
    with db.sessions() as session:
        report = session.get_one(IngestionReport, summary.report_id)
        counted = session.scalars(select(Workload.external_id).where(Workload.upstream_total.is_not(None))).all()
    assert (report.read_from, report.snapshot_scope) == ("snapshot", SCOPE)
    # Without the list of upstream counts, no count in the snapshot is taken for upstream's.
    assert counted == []
    with db.sessions() as session:
        workload = session.scalars(select(Workload).where(Workload.name == L040)).one()
        assert workload_completeness(session, workload).summary == (
            "3 submissions from a partial snapshot of 2026-08-15; upstream's count was not recorded."
        )
    # A snapshot that does not describe itself is said to be one, of a date not recorded.
    (copy / "snapshot.json").unlink()
    ingest(db.sessions, Settings(database_url=db.url), "sol-execbench", snapshot=copy)
    with db.sessions() as session:
        workload = session.scalars(select(Workload).where(Workload.name == L040)).one()
        answer = workload_completeness(session, workload)
    assert (answer.read_from, answer.read_at, answer.summary) == (
        "snapshot",
        None,
        "3 submissions from a snapshot (its date not recorded).",
    )


def test_a_live_ingest_keeps_the_listed_counts_as_read_then(db, make_app):
    upstream = FakeUpstream()
    upstream.listing_extra = {40: {"submission_count": 17}}
    read_at = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    run_ingest(upstream.adapter(), db.sessions, origin="fake upstream", clock=lambda: read_at)
    with db.sessions() as session:
        counts = session.execute(
            select(Workload.external_id, Workload.upstream_total, Workload.upstream_total_observed_at)
        ).all()
    assert sorted(counts) == [("39", None, None), ("40", 17, read_at), ("62", None, None)]
    with TestClient(make_app(db)) as browser:
        completeness = browser.get(f"/api/v1/workloads/{L040}").json()["completeness"]
    assert completeness == {
        "stored": 3,
        "noun": "submissions",
        "upstreamTotal": 17,
        "upstreamTotalObservedAt": "2026-12-01T09:30:00Z",
        "readFrom": "live",
        "live": True,
        "readAt": "2026-12-01T09:30:00Z",
        "snapshot": None,
        "refreshCommand": None,
        "summary": "3 of 17 upstream submissions, from the live upstream, read on 2026-12-01.",
    }


def test_an_older_count_never_replaces_a_newer_one(db):
    upstream = FakeUpstream()
    upstream.listing_extra = {40: {"submission_count": 17}}
    now = datetime(2026, 12, 1, tzinfo=UTC)
    run_ingest(upstream.adapter(), db.sessions, origin="fake upstream", clock=lambda: now)
    upstream.listing_extra = {40: {"submission_count": 9}}
    older = upstream.adapter()
    older.counted, older.counted_at = frozenset({"40"}), datetime(2026, 8, 14, tzinfo=UTC)
    run_ingest(older, db.sessions, origin="an old snapshot", clock=lambda: now)
    with db.sessions() as session:
        workload = session.scalars(select(Workload).where(Workload.external_id == "40")).one()
        assert (workload.upstream_total, workload.upstream_total_observed_at) == (17, now)


@pytest.mark.parametrize(
    "document",
    [
        pytest.param({"upstreamTotals": {"units": [4]}}, id="unit-not-text"),
        pytest.param({"upstreamTotals": ["4"]}, id="not-an-object"),
        pytest.param({"observedAt": "2026-08-15T02:11:00"}, id="no-time-zone"),
        pytest.param({"scope": 3}, id="scope-not-text"),
    ],
)
def test_a_malformed_snapshot_description_is_refused(tmp_path: Path, document):
    (tmp_path / "snapshot.json").write_text(json.dumps(document))
    with pytest.raises(SnapshotError):
        snapshot_facts(tmp_path)


# --- What the pages and the API say ---------------------------------------------------------


def test_the_workload_page_says_how_many_of_the_upstream_count_it_holds(client):
    page = html(client, f"/workloads/{KERNEL_4}")
    assert [text(p) for p in page.select("#overview .completeness")] == [KERNEL_4_COMPLETENESS["summary"] + LIVE_HINT]
    assert client.get(f"/workloads/{KERNEL_4}.json").json()["completeness"] == KERNEL_4_COMPLETENESS
    assert client.get(f"/api/v1/workloads/{KERNEL_4}").json()["completeness"] == KERNEL_4_COMPLETENESS


def test_a_workload_without_a_recorded_count_says_so(client):
    page = html(client, f"/workloads/{L040}")
    assert [text(p) for p in page.select("#overview .completeness")] == [L040_COMPLETENESS["summary"] + LIVE_HINT]
    assert client.get(f"/api/v1/workloads/{L040}").json()["completeness"] == L040_COMPLETENESS


SOL_SUMMARY = (
    "708 submissions from the partial bundled snapshot of 2026-08-15; upstream's count is recorded for 1 of 235 "
    "workloads (5 of 251 submissions there)."
)
SOL_COMPLETENESS = {
    "stored": 708,
    "noun": "submissions",
    "upstreamTotal": 251,
    "upstreamTotalObservedAt": "2026-08-14T16:43:00Z",
    **BUNDLED,
    "summary": SOL_SUMMARY,
    "workloads": 235,
    "countedWorkloads": 1,
    "storedInCounted": 5,
}


def test_the_source_page_and_its_twins_say_how_complete_the_source_is(client):
    page = html(client, "/sources/sol-execbench")
    assert [text(p) for p in page.select(".completeness")] == [SOL_SUMMARY + LIVE_HINT]
    facts = {text(dt): text(dt.find_next_sibling("dd")) for dt in page.select(".source-facts dt")}
    assert facts["Snapshot"] == f"bundled, recorded 2026-08-15: {SCOPE}"
    assert client.get("/sources/sol-execbench.json").json()["completeness"] == SOL_COMPLETENESS
    assert client.get("/api/v1/sources/sol-execbench").json()["completeness"] == SOL_COMPLETENESS
    listed = client.get("/api/v1/sources").json()["items"]
    assert [item["completeness"] for item in listed] == [SOL_COMPLETENESS]
    report = client.get("/api/v1/sources/sol-execbench").json()["reports"][0]
    assert (report["readFrom"], report["snapshotObservedAt"], report["snapshotScope"]) == (
        "bundled",
        "2026-08-15T02:11:00Z",
        SCOPE,
    )


def test_the_home_page_says_it_once_per_source(client):
    page = html(client, "/")
    assert [text(p) for p in page.select("#sources .completeness")] == [SOL_SUMMARY + LIVE_HINT]
    assert [source["completeness"]["summary"] for source in client.get("/index.json").json()["sources"]] == [
        SOL_SUMMARY
    ]


# --- A source loaded by import ---------------------------------------------------------------


def test_the_reruns_source_counts_what_it_measured_and_its_imports(loaded_db, make_app):
    assert all(result.error is None for result in import_bundled_reruns(loaded_db.sessions, v1_reruns()))
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    with TestClient(make_app(loaded_db)) as browser:
        response = browser.get("/sources/kernelindex-reruns")
        detail = browser.get("/api/v1/sources/kernelindex-reruns").json()
    page = BeautifulSoup(response.text, "html.parser")
    figures = [text(p) for p in page.select(".source-figures p")]
    assert figures[0] == "2 workloads measured"
    assert "No ingestion yet." not in response.text
    assert [text(p) for p in page.select(".completeness")] == [
        f"17 runs from imported files, the last imported on {today}."
    ]
    assert (detail["workloads"], detail["workloadsMeasured"], detail["runs"], detail["reportCount"]) == (0, 2, 17, 1)
    report = detail["reports"][0]
    assert (report["origin"], report["readFrom"], report["status"]) == (
        "bundled reruns (17 bundles)",
        "import",
        "succeeded",
    )
    assert report["counts"]["added"] == {"run": 17}
    assert detail["completeness"]["refreshCommand"] is None


def test_reruns_imported_before_imports_were_recorded_get_one_report(committed_catalogue_url):
    engine = make_engine(committed_catalogue_url)
    sessions = make_sessionmaker(engine)
    import_bundled_reruns(sessions, v1_reruns())
    with sessions.begin() as session:
        session.execute(delete(IngestionReport).where(IngestionReport.read_from == "import"))
    migrate.downgrade(committed_catalogue_url, "0009")
    migrate.upgrade(committed_catalogue_url)
    with sessions() as session:
        report = session.scalars(select(IngestionReport).where(IngestionReport.read_from == "import")).one()
        assert (report.origin, report.status, report.counts) == (
            "rerun bundles imported before imports were recorded",
            "succeeded",
            {"added": {"run": 17}},
        )
        assert report.started_at <= report.finished_at <= datetime.now(UTC)
    engine.dispose()
