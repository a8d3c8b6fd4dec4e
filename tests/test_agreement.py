"""One answer per question: every page's JSON twin and the matching API endpoint agree.

For each question (workloads with filters and sorts, a workload's groups and ranked runs,
a run's standing, records and search) the page and the API are asked the same thing on
the bundled catalogue, and must return the same items, in the same order, with the same
figures. They may shape the answer differently (the API pages by cursor), never compute
it differently.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from kernelindex.web.search import PAGE_LIMIT

L039 = "l1-039-adaptive-instance-normalization-2d-backward"
L040 = "l1-040-conv2d-residual-block"


def page_twin_workloads(client: TestClient, query: dict[str, str]) -> list[dict]:
    """Every workload the ``/workloads`` page lists for ``query``, page after page, from its JSON twin."""
    items, number = [], 1
    while True:
        response = client.get("/workloads.json?" + urlencode({**query, "page": number}))
        assert response.status_code == 200, response.text
        data = response.json()
        items += data["workloads"]
        if number >= data["pageCount"]:
            return items
        number += 1


def api_workloads(client: TestClient, query: dict[str, str]) -> list[dict]:
    """Every workload ``/api/v1/workloads`` lists for ``query``, cursor after cursor."""
    items, cursor = [], None
    while True:
        response = client.get(
            "/api/v1/workloads?" + urlencode({**query, "limit": 37, **({"cursor": cursor} if cursor else {})})
        )
        assert response.status_code == 200, response.text
        data = response.json()
        items += data["items"]
        cursor = data["nextCursor"]
        if cursor is None:
            return items


WORKLOAD_QUERIES = [
    {},
    {"q": "residual"},
    {"q": "conv2d residual"},
    {"collection": "Quant"},
    {"collection": "l2"},
    {"tag": "normalization"},
    {"model": "NAFNet"},
    {"model": "nafnet", "sort": "-runs"},
    {"gpu": "b200", "sort": "best_sol"},
    {"gpu": "h200"},
    {"sort": "last_record"},
    {"sort": "runs"},
    {"q": "norm", "collection": "L1", "sort": "last_record"},
]


@pytest.mark.parametrize("query", WORKLOAD_QUERIES, ids=lambda q: urlencode(q) or "everything")
def test_the_workloads_page_and_api_list_the_same_workloads_with_the_same_figures(client, query):
    page, api = page_twin_workloads(client, query), api_workloads(client, query)
    assert [w["slug"] for w in page] == [w["slug"] for w in api]
    for shown, served in zip(page, api, strict=True):
        fastest = served["fastest"]
        assert (
            shown["eligibleRuns"],
            shown["bestSolScore"],
            shown["lastRecordAt"],
            shown["bestLatencyNs"],
            shown["bestRun"],
        ) == (
            served["eligibleRuns"],
            served["bestSolScore"],
            served["lastRecordAt"],
            fastest["latencyNs"] if fastest else None,
            fastest["run"] if fastest else None,
        ), shown["slug"]


def test_the_residual_search_and_the_last_record_dates_agree(client):
    """The two disagreements a reader met: 35 workloads against 16, and "last record" dates."""
    page, api = page_twin_workloads(client, {"q": "residual"}), api_workloads(client, {"q": "residual"})
    assert len(page) == len(api) == 35
    first_fifty = page_twin_workloads(client, {})[:50]
    api_by_slug = {w["slug"]: w for w in api_workloads(client, {})}
    assert all(w["lastRecordAt"] == api_by_slug[w["slug"]]["lastRecordAt"] for w in first_fifty)


def leaderboard_ranked(client: TestClient, slug: str, group: str) -> list[dict]:
    ranked, number = [], 1
    while True:
        data = client.get(f"/workloads/{slug}.json?group={group}&runs=all&page={number}").json()
        ranked += data["ranked"]
        if number >= data["pageCount"]:
            return ranked
        number += 1


@pytest.mark.parametrize(
    "slug",
    [
        L039,
        L040,
        "l1-004-attention-output-projection-with-reshape-backward",
        "l2-001-fused-vision-multihead-attention-with-norms-backward",
        "quant-001-fp8-attention-output-projection",
    ],
)
def test_a_workloads_groups_and_ranked_runs_agree_with_the_api(client, slug):
    board, detail = client.get(f"/workloads/{slug}.json").json(), client.get(f"/api/v1/workloads/{slug}").json()
    assert {g["key"] for g in board["groups"]} == {g["comparisonKey"] for g in detail["groups"]}
    api_groups = {g["comparisonKey"]: g for g in detail["groups"]}
    for group in board["groups"]:
        served = api_groups[group["key"]]
        assert (group["runCount"], group["eligibleCount"]) == (served["runs"], served["eligibleRuns"])
        assert group["bestLatencyNs"] == (served["best"]["latencyNs"] if served["best"] else None)
        ranked = leaderboard_ranked(client, slug, group["key"].removeprefix("sha256:")[:16])
        runs = client.get(
            "/api/v1/runs?"
            + urlencode(
                {"workload": slug, "comparison_key": group["key"], "eligible": "true", "sort": "latency", "limit": 100}
            )
        ).json()["items"]
        assert [(r["name"], r["latencyNs"]) for r in ranked] == [(r["name"], r["latencyNs"]) for r in runs]
        for row in ranked:
            run = client.get(f"/api/v1/runs/{row['name']}").json()
            assert (row["rank"], row["vsBest"]) == (run["rank"], run["vsBest"])
    # The headline and the group the page opens on are the same as the API's.
    fastest = detail["fastest"]
    assert (board["fastest"]["name"] if board["fastest"] else None) == (fastest["run"] if fastest else None)
    assert board["selectedGroup"]["key"] == detail["defaultGroup"]
    if fastest:
        assert any(r["name"] == fastest["run"] for r in leaderboard_ranked(client, slug, "")), (
            "the leaderboard opens on the group of the fastest run it shows"
        )


@pytest.mark.parametrize("name", ["sol-submission-16893", "sol-submission-30122", "sol-submission-19926"])
def test_a_runs_page_and_the_api_give_the_same_standing(client, name):
    page, api = client.get(f"/runs/{name}.json").json(), client.get(f"/api/v1/runs/{name}").json()
    assert (page["rank"], page["groupSize"], page["notRankedBecause"]) == (
        api["rank"],
        api["groupSize"],
        api["ineligibilityReasons"],
    )
    assert page["comparisonKey"] == api["comparisonKey"]


def test_the_records_page_agrees_with_each_leaderboards_history(client):
    records = client.get("/records.json").json()["records"]
    assert records
    for entry in records[:12]:
        group = entry["comparisonKey"].removeprefix("sha256:")[:16]
        history = client.get(f"/workloads/{entry['workloadSlug']}.json?group={group}").json()["history"]
        match = [h for h in history if h["run"] == entry["run"]]
        assert len(match) == 1, entry["run"]
        assert (match[0]["latencyNs"], match[0]["observedAt"], match[0]["improvement"]) == (
            entry["latencyNs"],
            entry["observedAt"],
            entry["improvement"],
        )


@pytest.mark.parametrize("q", ["residual", "conv2d", "rmsnorm", "b200", "nafnet", "gemm fp8", "attention"])
def test_search_page_and_api_return_the_same_hits(client, q):
    """The page groups its hits by kind; within each kind they are the API's, in the API's order."""
    page = client.get("/search.json?" + urlencode({"q": q})).json()
    api = client.get("/api/v1/search?" + urlencode({"q": q, "limit": PAGE_LIMIT})).json()
    assert page["groups"], q
    served: dict[str, list[str]] = {}
    for hit in api["hits"]:
        served.setdefault(hit["kind"], []).append(hit["slug"])
    shown = {group["kind"]: [hit["slug"] for hit in group["hits"]] for group in page["groups"]}
    assert shown == served
    assert page["didYouMean"] == api["didYouMean"]
