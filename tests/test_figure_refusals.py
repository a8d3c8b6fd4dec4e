"""Bad figures from a source are refused row by row, named in the ingest report and never stored;
one upstream id stands for one result; a figure the source changes is kept in the run's history."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.cli import main
from kernelindex.db.tables import Run
from kernelindex.ingest.runner import run_ingest
from tests.servers import serving
from tests.upstream import FakeUpstream, served

KERNEL = 40


def ingest(db: Any, upstream: FakeUpstream, clock: datetime | None = None) -> Any:
    if clock is None:
        return run_ingest(upstream.adapter(), db.sessions, origin="fake upstream")
    return run_ingest(upstream.adapter(), db.sessions, origin="fake upstream", clock=lambda: clock)


def stored(db: Any) -> dict[str, tuple[str, int, float | None, str]]:
    """Each stored run by external id: its workload's external id, latency, SOL score and manifest."""
    with db.sessions() as session:
        return {
            run.external_id: (run.workload.external_id, run.latency_ns, run.sol_score, run.manifest_json)
            for run in session.scalars(select(Run))
        }


SCORE_RANGE = "the range stored (0 to 1, and up to 2 held for review)"


@pytest.mark.parametrize(
    ("field", "value", "reason", "sentence"),
    [
        ("latency_ms", True, "wrong_type", "latency_ms is true, a boolean, not a number"),
        ("sol_score", True, "wrong_type", "sol_score is true, a boolean, not a number"),
        ("sol_score", -7.5, "out_of_range", f"sol_score is -7.5, outside {SCORE_RANGE}"),
        ("sol_score", 1e308, "out_of_range", f"sol_score is 1e+308, outside {SCORE_RANGE}"),
        ("latency_ms", 1e308, "out_of_range", "latency_ms is 1e+308, outside 1 ns to 1 hour"),
        ("latency_ms", 10**400, "out_of_range", "latency_ms is 1000000000000000000000000000000000000000…"),
        ("latency_ms", "0.2", "wrong_type", "latency_ms is the text '0.2', not a number"),
        ("latency_ms", "NaN", "wrong_type", "latency_ms is the text 'NaN', not a number"),
        ("latency_ms", {"mean": 0.2}, "wrong_type", "latency_ms is an object, not a number"),
        ("avg_speedup", [4.0], "wrong_type", "avg_speedup is a list, not a number"),
        ("avg_speedup", 0, "out_of_range", "avg_speedup is 0, outside a positive figure"),
        ("fast_1_count", 16.0, "wrong_type", "fast_1_count is 16.0, not a whole number"),
        ("fast_1_count", -1, "out_of_range", "fast_1_count is -1, outside 0 to"),
        ("fast_1_count", 99, "out_of_range", "fast_1_count is 99, more than fast_1_total"),
    ],
)
def test_a_bad_figure_refuses_its_submission_alone(db, field, value, reason, sentence):
    upstream = FakeUpstream()
    ingest(db, upstream)
    before = stored(db)
    bad = upstream.submission(KERNEL)
    bad[field] = value
    bad["id"] = 999_001  # a new submission: an earlier good figure must not change either
    summary = ingest(db, upstream)

    assert summary.status == "succeeded"
    assert summary.counts["refused"] == {reason: 1}
    line = next(line for line in summary.errors if "submission 999001" in line)
    assert line.startswith(f"warning: kernel {KERNEL} (")
    assert f"submission 999001: refused: {sentence}" in line
    after = stored(db)
    assert "999001" not in after
    assert after == before  # every other figure as it was


def test_a_bad_figure_in_a_stored_run_leaves_the_stored_figure_unchanged(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    before = stored(db)
    upstream.submission(KERNEL)["sol_score"] = -7.5
    summary = ingest(db, upstream)
    assert summary.counts["refused"] == {"out_of_range": 1}
    target = str(upstream.submission(KERNEL)["id"])
    # Refused, not missing: it is still listed, and keeps what was stored.
    assert stored(db) == before
    with db.sessions() as session:
        assert session.scalars(select(Run).where(Run.external_id == target)).one().missing_since is None


def test_a_sol_score_above_one_is_held_for_review(db):
    upstream = FakeUpstream()
    upstream.submission(KERNEL)["sol_score"] = 1.2
    summary = ingest(db, upstream)
    assert "refused" not in summary.counts
    with db.sessions() as session:
        run = session.scalars(select(Run).where(Run.external_id == str(upstream.submission(KERNEL)["id"]))).one()
        assert run.held_for_review and run.sol_score == 1.2


@pytest.mark.parametrize(
    ("value", "sentence"), [(True, "true, a boolean"), (1e308, "1e+308, outside a positive figure up to 3.6e+06")]
)
def test_a_bad_case_bound_fails_its_kernel_alone_with_a_sentence(db, value, sentence):
    upstream = FakeUpstream()
    upstream.kernels[KERNEL]["workloads"][0]["sol_ms"] = value
    summary = ingest(db, upstream)
    assert summary.status == "partial"
    assert summary.errors[0].startswith(f"kernel {KERNEL} (")
    assert f"workloads.0.sol_ms: Value error, sol_ms is {sentence}" in summary.errors[0]
    assert {run[0] for run in stored(db).values()} == {"39", "62"}


def test_the_command_line_prints_each_refusal_as_a_sentence_not_a_traceback(tmp_path):
    upstream = FakeUpstream()
    upstream.submission(KERNEL)["latency_ms"] = 1e308
    upstream.submission(39)["sol_score"] = True
    url = f"sqlite:///{tmp_path}/cli.db"
    with serving(served(upstream)) as base:
        result = CliRunner().invoke(
            main,
            ["ingest", "sol-execbench", "--base-url", f"{base}/api", "--database-url", url],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "OverflowError" not in result.output
    text = " ".join(result.output.split())
    assert f"submission {upstream.submission(KERNEL)['id']}: refused: latency_ms is 1e+308, outside 1 ns" in text
    assert f"submission {upstream.submission(39)['id']}: refused: sol_score is true, a boolean" in text


# --- One id, one result -------------------------------------------------------------------------


def test_an_id_listed_under_two_kernels_with_other_figures_is_refused_both_times(db):
    upstream = FakeUpstream()
    copy = dict(upstream.submission(KERNEL), kernel_id=39, latency_ms=0.05, sol_score=0.9)
    upstream.submissions[39].append(copy)
    summary = ingest(db, upstream)

    assert summary.counts["refused"] == {"duplicate_id": 2}
    named = [line for line in summary.errors if "one id, two results" in line]
    assert len(named) == 2
    assert any(line.startswith("warning: kernel 39 (") and "under another workload" in line for line in named)
    assert any(line.startswith(f"warning: kernel {KERNEL} (") and "under another workload" in line for line in named)
    assert str(copy["id"]) not in stored(db)


def test_an_id_listed_twice_alike_is_stored_once(db):
    upstream = FakeUpstream()
    upstream.submissions[KERNEL].append(dict(upstream.submission(KERNEL)))
    summary = ingest(db, upstream)
    assert "refused" not in summary.counts
    assert summary.counts["skipped"] == {"duplicate": 1}
    assert str(upstream.submission(KERNEL)["id"]) in stored(db)


def test_an_id_listed_twice_in_one_kernel_with_other_figures_is_refused_both_times(db):
    upstream = FakeUpstream()
    upstream.submissions[KERNEL].append(dict(upstream.submission(KERNEL), latency_ms=0.5))
    summary = ingest(db, upstream)
    assert summary.counts["refused"] == {"duplicate_id": 2}
    assert str(upstream.submission(KERNEL)["id"]) not in stored(db)


def test_a_stored_run_never_moves_to_another_workload(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    before = stored(db)
    moved = upstream.submissions[KERNEL].pop(0)
    upstream.submissions[39].append(dict(moved, kernel_id=39, latency_ms=0.05))
    summary = ingest(db, upstream)

    assert summary.counts["refused"] == {"duplicate_id": 1}
    assert any("stored as a result of another" in line for line in summary.errors)
    assert stored(db)[str(moved["id"])] == before[str(moved["id"])]


def test_a_new_workload_cannot_take_a_stored_run(db):
    upstream = FakeUpstream()
    newcomer = upstream.kernels.pop(62)
    ingest(db, upstream)
    before = stored(db)
    upstream.kernels[62] = newcomer
    taken = dict(upstream.submissions[KERNEL].pop(0), kernel_id=62)
    upstream.submissions[62].append(taken)
    summary = ingest(db, upstream)

    assert summary.counts["refused"] == {"duplicate_id": 1}
    assert summary.counts["added"]["workload"] == 1
    after = stored(db)
    assert after[str(taken["id"])] == before[str(taken["id"])]
    assert {external_id for external_id, run in after.items() if run[0] == "62"} == {"33453", "20107", "15511"}


# --- A changed figure is a new observation -------------------------------------------------------


def test_a_figure_the_source_changes_is_kept_in_the_run_history_and_shown(db, make_app):
    upstream = FakeUpstream()
    ingest(db, upstream, clock=datetime(2026, 8, 1, tzinfo=UTC))
    submission = upstream.submission(KERNEL)
    old = (submission["latency_ms"], submission["sol_score"])
    submission.update(latency_ms=0.5, sol_score=0.25)
    summary = ingest(db, upstream, clock=datetime(2026, 9, 2, tzinfo=UTC))
    assert summary.counts["updated"] == {"run": 1}

    name = f"sol-submission-{submission['id']}"
    with TestClient(make_app(db)) as client:
        page = client.get(f"/runs/{name}.json").json()
        html = BeautifulSoup(client.get(f"/runs/{name}").text, "html.parser")
        api = client.get(f"/api/v1/runs/{name}").json()
    first, second = api["history"]
    assert first["figureChanges"] == []
    assert second["figureChanges"] == [
        {"figure": "latencyNs.mean", "was": round(old[0] * 1_000_000), "now": 500_000},
        {"figure": "sol_score", "was": old[1], "now": 0.25},
        {"figure": "latency_ms", "was": old[0], "now": 0.5},
    ]
    assert [line["figure"] for line in page["figureChanges"]] == ["latency (mean)", "SOL score", "Latency"]
    assert page["figureChanges"][1] == {
        "changedOn": "2026-09-02",
        "figure": "SOL score",
        "was": repr(old[1]),
        "now": "0.25",
    }
    shown = [p.get_text(" ", strip=True) for p in html.select("p.figure-change")]
    was = page["figureChanges"][0]["was"]
    assert shown[0] == f"The source changed this figure on 2026-09-02: latency (mean) was {was}, now 500.0 µs."
    assert len(shown) == 3
