"""Comparing runs: the pure rules, then /compare as HTML, JSON twin, CSV and API, on both backends."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select
from sqlalchemy.orm import aliased

from kernelindex.compare import ComparedRun, CompareError, compare_runs
from kernelindex.db.tables import Run
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.uncertainty import Uncertainty
from kernelindex.web.compare import comparison_result

L039 = "l1-039-adaptive-instance-normalization-2d-backward"
L040 = "l1-040-conv2d-residual-block"


def l040_v1_1_runs() -> list[str]:
    """The v1.1 submissions of kernel 40 in the bundled snapshot, as run names."""
    data = json.loads((BUNDLED_SNAPSHOT / "api" / "submissions" / "kernel-40.json").read_text())
    return [f"sol-submission-{s['id']}" for s in data["data"]["submissions"] if s["evaluation_stack_version"] == "v1.1"]


# --- The pure rules ---------------------------------------------------------------------

BASE = ComparedRun(
    name="a",
    digest="sha256:" + "a" * 64,
    comparison_key="sha256:" + "1" * 64,
    status="passed",
    evidence="reported",
    availability="license unknown · no source · no install recipe",
    latency_ns=1000,
    primary_statistic="mean",
    sol_score=0.5,
    avg_speedup=2.0,
    fast_count=3,
    fast_total=4,
    observed_at=datetime(2026, 8, 1, tzinfo=UTC),
    rank=1,
    workload_slug="l1-001-w",
    workload_title="W",
    workload_digest="sha256:" + "2" * 64,
    project="P",
    project_slug="p",
    revision="submission-1",
    protocol_name="proto-v1-1",
    protocol_title="Proto v1.1",
    protocol_family="sol_execbench_leaderboard",
    harness_name="SOL-ExecBench evaluation stack",
    harness_version="v1.1",
    protocol_digest="sha256:" + "3" * 64,
    environment_name="env-b200-v1-1",
    environment_title="B200 v1.1",
    environment_label="NVIDIA B200 · stack v1.1",
    gpu_product="NVIDIA B200",
    gpu_slug="b200",
    stack="v1.1",
    environment_digest="sha256:" + "4" * 64,
)


def run(name: str, **changes: object) -> ComparedRun:
    return replace(BASE, name=name, digest="sha256:" + name[0] * 64, **changes)  # type: ignore[arg-type]


def field(comparison, key: str):  # type: ignore[no-untyped-def]
    return next(f for f in comparison.fields if f.key == key)


def test_same_group_all_eligible_names_the_fastest():
    comparison = compare_runs([run("b", latency_ns=1200, rank=2), run("a"), run("c", latency_ns=2000, rank=3)])
    assert comparison.comparable and comparison.winner == "a"
    assert comparison.reasons == ()
    assert comparison.runs == ("b", "a", "c")  # the order asked for
    assert field(comparison, "latencyNs").values == (1200, 1000, 2000)
    assert field(comparison, "latencyNs").differs
    assert field(comparison, "vsFastest").values == (1.2, 1.0, 2.0)
    assert not field(comparison, "gpu").differs
    assert comparison.verdict.startswith("a (P) is fastest, 1.20× faster than the next.")


def test_a_fastest_run_inside_the_next_ones_interval_is_no_winner():
    a = run("a", uncertainty=Uncertainty("source-noise", 950, 1050), rank_range=(1, 2))
    b = run("b", latency_ns=1080, rank=2, uncertainty=Uncertainty("source-noise", 1026, 1134), rank_range=(1, 2))
    comparison = compare_runs([a, b])
    assert comparison.comparable and comparison.winner is None
    assert comparison.verdict.startswith("No winner beyond the noise: a (P) is fastest by its figure")
    assert field(comparison, "rankRange").values == ("1–2", "1–2")
    # Beyond the noise of both, the fastest wins again.
    far = replace(b, latency_ns=1300, uncertainty=Uncertainty("source-noise", 1235, 1365), rank_range=(2, 2))
    assert compare_runs([a, far]).winner == "a"
    # Of unknown spread, figures are points: strictly faster wins, as before.
    assert compare_runs([run("a"), run("b", latency_ns=1001, rank=2)]).winner == "a"


def test_equal_fastest_latencies_name_no_single_winner():
    comparison = compare_runs([run("a"), run("b")])
    assert comparison.comparable and comparison.winner is None
    assert "share the fastest latency" in comparison.verdict


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"gpu_product": "NVIDIA H100", "gpu_slug": "h100"}, "different GPUs"),
        ({"stack": "v1.0"}, "different evaluation stacks"),
        ({"harness_version": "v1.0"}, "different evaluation stacks"),
        ({"workload_slug": "l1-002-x", "workload_digest": "sha256:" + "9" * 64}, "different workloads"),
        ({"workload_digest": "sha256:" + "9" * 64}, "different versions of the workload definition"),
        ({"protocol_family": "kernelindex_rerun"}, "different benchmark protocols"),
        ({"environment_digest": "sha256:" + "8" * 64}, "different execution environments"),
        ({"held_for_review": True, "rank": None}, "run b is held for review"),
        ({"withdrawn": True, "rank": None}, "run b was withdrawn by a maintainer"),
        ({"upstream_withdrawn": True, "rank": None}, "run b was disqualified by the source"),
        ({"status": "failed", "rank": None}, "run b did not pass correctness (status failed)"),
    ],
)
def test_no_winner_and_the_reason_why(changes, reason):
    other = run("b", latency_ns=900, comparison_key="sha256:" + "5" * 64, **changes)
    if "held_for_review" in changes or "withdrawn" in changes or "status" in changes or "upstream_withdrawn" in changes:
        other = replace(other, comparison_key=BASE.comparison_key)
    comparison = compare_runs([run("a"), other])
    assert not comparison.comparable and comparison.winner is None
    assert len(comparison.reasons) == 1 and comparison.reasons[0].startswith(reason)
    assert comparison.verdict.startswith("No winner: " + reason)
    assert not any(f.key == "vsFastest" for f in comparison.fields)


def test_a_v1_0_and_a_v1_1_run_differ_in_stack_and_protocol_but_give_one_reason():
    old = run("b", stack="v1.0", harness_version="v1.0", comparison_key="sha256:" + "6" * 64)
    comparison = compare_runs([run("a"), old])
    assert comparison.reasons == ("different evaluation stacks",)
    assert field(comparison, "stack").differs and field(comparison, "comparisonKey").differs


def test_a_field_differs_only_where_the_shown_values_differ():
    # 26,085 ns and 26,087 ns both read "26.09 µs", observed on one day at different hours.
    runs = [
        run("a", latency_ns=26085, observed_at=datetime(2026, 8, 1, 9, tzinfo=UTC)),
        run("b", latency_ns=26087, observed_at=datetime(2026, 8, 1, 17, tzinfo=UTC)),
    ]
    result = comparison_result(compare_runs(runs), runs)
    shown = {f.key: (f.display, f.differs) for f in result.fields}
    assert shown["latencyNs"] == (["26.09 µs", "26.09 µs"], False)
    assert shown["observedAt"] == (["2026-08-01", "2026-08-01"], False)
    assert shown["vsFastest"] == (["1.00×", "1.00×"], False)
    assert shown["digest"][1] is True
    assert next(f for f in compare_runs(runs).fields if f.key == "latencyNs").differs


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([BASE], "Compare needs 2 to 8 runs"),
        ([], "Compare needs 2 to 8 runs"),
        ([run(f"r{i}") for i in range(9)], "at most 8 runs"),
        ([run("a"), run("a")], "listed more than once"),
    ],
)
def test_too_few_too_many_or_repeated_runs_are_refused(runs, message):
    with pytest.raises(CompareError, match=message):
        compare_runs(runs)


# --- The page, its JSON twin, CSV and the API ---------------------------------------------


def query(names: list[str]) -> str:
    return "&".join(f"run={name}" for name in names)


def test_two_runs_of_one_group_get_a_winner(client):
    names = l040_v1_1_runs()[:2]
    assert names == ["sol-submission-36339", "sol-submission-36270"]
    data = client.get(f"/compare.json?{query(names)}").json()["comparison"]
    assert data["comparable"] is True
    assert data["winner"] == "sol-submission-36270"
    assert data["reasons"] == []
    fields = {f["key"]: f for f in data["fields"]}
    assert fields["latencyNs"]["values"] == [26085, 25913]
    assert fields["latencyNs"]["display"] == ["26.09 µs", "25.91 µs"]
    assert fields["rank"]["values"] == [2, 1]
    assert fields["solScore"]["values"] == [0.873128, 0.873692]
    # The source's own score under its own name, and the share of its bound named apart.
    assert (fields["solScore"]["label"], fields["solScore"]["display"]) == ("SOL score", ["0.873", "0.874"])
    assert fields["shareOfBound"]["label"] == "% of SOL bound"
    assert all(isinstance(value, float) for value in fields["shareOfBound"]["values"])
    assert all(text.endswith(" % (SOL-ExecBench T_SOL)") for text in fields["shareOfBound"]["display"])
    assert not any(f["label"] == "% of SOL" for f in data["fields"])
    assert fields["casesFaster"]["values"] == ["16/16", "16/16"]
    assert fields["casesFaster"]["differs"] is False
    assert fields["workload"]["values"] == [L040, L040]
    assert fields["stack"]["values"] == ["v1.1", "v1.1"]
    assert fields["gpu"]["values"] == ["NVIDIA B200", "NVIDIA B200"]
    assert fields["eligibility"]["values"] == ["eligible", "eligible"]
    assert fields["comparisonKey"]["differs"] is False
    assert fields["observedAt"]["values"] == ["2026-08-12T22:52:04.031Z", "2026-08-12T12:38:20.914Z"]
    assert [column["winner"] for column in data["runs"]] == [False, True]


def test_compare_page_shows_the_verdict_and_highlights_differing_rows(client):
    names = l040_v1_1_runs()
    response = client.get(f"/compare?{query(names)}")
    assert response.status_code == 200
    assert response.headers["link"] == f'</compare.json?{query(names)}>; rel="alternate"; type="application/json"'
    page = BeautifulSoup(response.text, "html.parser")
    verdict = page.select_one("#verdict")
    assert " ".join(verdict.get_text(" ", strip=True).split()) == "Fastest: Geometric sol-submission-36270"
    headers = [th.select_one("a.slug").get_text(strip=True) for th in page.select("table.compare thead th")[1:]]
    assert headers == names
    rows = {
        tr.select_one("th").get_text(" ", strip=True).removesuffix(" differs"): tr for tr in page.select("tbody tr")
    }
    assert len(rows["Latency"].select("td.diff")) == 3
    assert "differs" in rows["Latency"].select_one("th").get_text()
    assert rows["GPU"].select("td.diff") == []
    assert [td.get_text(strip=True) for td in rows["GPU"].select("td")] == ["NVIDIA B200"] * 3
    assert [td.get_text(strip=True) for td in rows["Rank in its group"].select("td")] == ["#2", "#1", "#3"]
    assert page.select_one('link[rel="alternate"][type="application/json"]')["href"] == f"/compare.json?{query(names)}"
    assert page.select_one(f'a[href="/compare.csv?{query(names)}"]')


def test_a_v1_0_and_a_v1_1_run_get_no_winner_for_different_stacks(client):
    names = ["sol-submission-16893", "sol-submission-30122"]  # both of workload 039, stacks v1.0 and v1.1
    data = client.get(f"/api/v1/compare?{query(names)}").json()
    assert data["comparable"] is False and data["winner"] is None
    assert data["reasons"] == ["different evaluation stacks"]
    fields = {f["key"]: f for f in data["fields"]}
    assert fields["stack"]["values"] == ["v1.0", "v1.1"] and fields["stack"]["differs"]
    assert fields["workload"]["differs"] is False
    assert fields["rank"]["values"] == [1, 1]  # each #1 of its own group: not comparable
    page = BeautifulSoup(client.get(f"/compare?{query(names)}").text, "html.parser")
    assert page.select_one("#verdict").get_text(strip=True) == "No winner"
    assert [li.get_text(strip=True) for li in page.select(".banner li")] == ["different evaluation stacks"]
    assert len(page.select("tr td.diff")) > 0


def test_runs_of_different_workloads_get_no_winner(client):
    data = client.get(f"/api/v1/compare?{query(['sol-submission-36270', 'sol-submission-16893'])}").json()
    assert data["reasons"] == ["different workloads", "different evaluation stacks"]


def test_a_held_run_gets_no_winner_and_is_named(client, loaded_db):
    peer = aliased(Run)
    with loaded_db.sessions() as session:
        held, other = session.execute(
            select(Run.name, peer.name)
            .join(peer, (peer.comparison_key == Run.comparison_key) & (peer.name != Run.name))
            .where(Run.held_for_review.is_(True), peer.held_for_review.is_(False))
            .order_by(Run.name, peer.name)
            .limit(1)
        ).one()
    data = client.get(f"/api/v1/compare?{query([other, held])}").json()
    assert data["winner"] is None
    assert data["reasons"] == [f"run {held} is held for review (faster than the suite's speed-of-light bound)"]
    fields = {f["key"]: f for f in data["fields"]}
    assert fields["rank"]["values"][1] is None and fields["rank"]["display"][1] == "not ranked"


def test_csv_export_parses_and_matches_the_json(client):
    names = l040_v1_1_runs()
    response = client.get(f"/compare.csv?{query(names)}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == f'attachment; filename="compare-{"-vs-".join(names)}.csv"'
    assert response.headers["etag"]
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0] == ["field", "label", *names, "differs"]
    labels = {row[0]: row[1] for row in rows[1:]}
    assert (labels["solScore"], labels["shareOfBound"]) == ("SOL score", "% of SOL bound")
    data = client.get(f"/compare.json?{query(names)}").json()["comparison"]
    assert len(rows) == 1 + len(data["fields"])
    for row, expected in zip(rows[1:], data["fields"], strict=True):
        key, label, *values, differs = row
        assert (key, label) == (expected["key"], expected["label"])
        assert differs == ("true" if expected["differs"] else "false")
        for cell, value in zip(values, expected["values"], strict=True):
            if value is None:
                assert cell == ""
            elif isinstance(value, float):
                assert float(cell) == value
            else:
                assert cell == str(value)


def test_api_compare_is_the_page_comparison(client):
    names = l040_v1_1_runs()
    assert (
        client.get(f"/api/v1/compare?{query(names)}").json()
        == (client.get(f"/compare.json?{query(names)}").json()["comparison"])
    )


@pytest.mark.parametrize(
    ("names", "status", "detail"),
    [
        (["sol-submission-36270"], 400, "Compare needs 2 to 8 runs (run=A&run=B…); 1 run was given."),
        ([], 400, "Compare needs 2 to 8 runs (run=A&run=B…); no run was given."),
        ([f"sol-submission-{i}" for i in range(9)], 400, "Compare takes at most 8 runs at once; 9 were given."),
        (
            ["sol-submission-36270", "sol-submission-36270"],
            400,
            "Run 'sol-submission-36270' is listed more than once; list each run once.",
        ),
        (["sol-submission-36270", "sol-submission-1"], 404, "No run is named 'sol-submission-1'."),
        (["sol-submission-36270", ""], 400, "A run name is empty"),
        (["sol-submission-36270", "x%00"], 400, "contains control characters"),
    ],
)
def test_bad_run_lists_are_clear_errors_as_html_and_problem_json(client, names, status, detail):
    for path in ("/compare.json", "/compare.csv", "/api/v1/compare"):
        response = client.get(f"{path}?{query(names)}")
        assert response.status_code == status
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["status"] == status and detail in problem["detail"]
    response = client.get(f"/compare?{query(names)}", headers={"Accept": "text/html"})
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    page = BeautifulSoup(response.text, "html.parser")
    assert detail in page.select_one("section.error p:not(.eyebrow)").get_text(strip=True)


def test_compare_page_answers_304_to_its_etag(client):
    path = f"/compare?{query(l040_v1_1_runs()[:2])}"
    etag = client.get(path).headers["etag"]
    assert client.get(path, headers={"If-None-Match": etag}).status_code == 304
