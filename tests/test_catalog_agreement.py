"""The GPU, implementation, origin-model and source pages' JSON twins and their API
endpoints give the same answers: the same items with the same figures."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


def get_json(client: TestClient, path: str) -> dict:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def workload_slug(url: str) -> str:
    return url.removeprefix("/workloads/")


def test_gpus_page_and_api_list_the_same_gpus_with_the_same_counts(client):
    page = get_json(client, "/gpus.json")
    api = get_json(client, "/api/v1/gpus?limit=200")
    assert api["nextCursor"] is None
    on_page = {g["slug"]: (g["measuredWorkloads"], g["runs"], g["gaps"]) for g in page["gpus"]}
    in_api = {g["slug"]: (g["workloads"], g["runs"], g["gaps"]) for g in api["items"]}
    assert on_page == in_api
    assert on_page["b200"] == (235, 708, 0)
    assert {measured + gaps for measured, _, gaps in in_api.values()} == {page["workloadCount"]}


def page_rows(client: TestClient, path: str) -> list[dict]:
    """Every workload row of a GPU page for ``path``'s filters, page after page, from its JSON twin."""
    rows, number = [], 1
    while True:
        data = get_json(client, f"{path}{'&' if '?' in path else '?'}page={number}")
        rows += data["workloads"]
        if number >= data["pageCount"]:
            return rows
        number += 1


def api_rows(client: TestClient, path: str) -> list[dict]:
    items, cursor = [], None
    while True:
        data = get_json(
            client, f"{path}{'&' if '?' in path else '?'}limit=40" + (f"&cursor={cursor}" if cursor else "")
        )
        items += data["items"]
        cursor = data["nextCursor"]
        if cursor is None:
            return items


@pytest.mark.parametrize("slug", ["b200", "h200"])
def test_gpu_page_and_api_show_the_same_best_runs_and_gaps(client, slug):
    page = get_json(client, f"/gpus/{slug}.json")
    api = get_json(client, f"/api/v1/gpus/{slug}")
    assert (page["gpu"]["runs"], page["gpu"]["measuredWorkloads"], page["gpu"]["gaps"]) == (
        api["runs"],
        api["workloads"],
        api["gaps"],
    )
    tabs = {tab["measured"]: tab["count"] for tab in page["tabs"]}
    assert tabs == {True: api["workloads"], False: api["gaps"]}
    measured = page_rows(client, f"/gpus/{slug}.json?measured=true")
    on_page = sorted(
        (w["slug"], w["best"]["run"], w["best"]["latencyNs"], w["best"]["rank"], w["best"]["groupSize"])
        for w in measured
        if w["best"] is not None
    )
    served = api_rows(client, f"/api/v1/gpus/{slug}/workloads?measured=true")
    in_api = sorted(
        (w["workload"], w["best"]["run"], w["best"]["latencyNs"], 1, w["best"]["groupEligibleRuns"])
        for w in served
        if w["best"] is not None
    )
    assert on_page == in_api
    assert [w["slug"] for w in measured] == [w["workload"] for w in served]
    gaps = page_rows(client, f"/gpus/{slug}.json?measured=false")
    assert [w["slug"] for w in gaps] == [
        w["workload"] for w in api_rows(client, f"/api/v1/gpus/{slug}/workloads?measured=false")
    ]
    if slug == "b200":
        assert len(served) == 235 and gaps == []
        assert len(on_page) == 233  # two workloads have runs on it, none of them eligible
    else:
        assert on_page == [] and len(gaps) == 235
        assert page["measured"] is False  # a GPU nobody measured opens on its gaps


def api_workload_results(client: TestClient, path: str) -> list[dict]:
    """Every row of an implementation's workloadResults, page after page, by its cursors."""
    rows, cursor = [], None
    while True:
        data = get_json(client, f"{path}?limit=40" + (f"&cursor={cursor}" if cursor else ""))
        rows += data["workloadResults"]
        cursor = data["nextCursor"]
        if cursor is None:
            return rows


def row_figures(workload: str, row: dict, run_key: str) -> tuple:
    """(workload, GPU, runs there, best run, its latency, rank, group size) of a row."""
    best = row["best"] or dict.fromkeys((run_key, "latencyNs", "rank", "groupSize"))  # none of its runs eligible
    return (workload, row["gpu"], row["runs"], best[run_key], best["latencyNs"], best["rank"], best["groupSize"])


@pytest.mark.parametrize("slug", ["geometric", "ac4k"])
def test_implementation_page_and_api_show_the_same_best_runs_with_the_same_ranks(client, slug):
    page = get_json(client, f"/implementations/{slug}.json")
    api = get_json(client, f"/api/v1/implementations/{slug}")
    on_page = [row_figures(w["slug"], w, "run") for w in page_rows(client, f"/implementations/{slug}.json")]
    in_api = [
        row_figures(w["workload"], w, "name") for w in api_workload_results(client, f"/api/v1/implementations/{slug}")
    ]
    assert on_page == in_api
    assert len(on_page) == page["total"] == api["workloads"] > 50  # one GPU: a row per workload, on pages
    assert sum(row[2] for row in on_page) == page["runCount"] == api["runs"]
    assert (page["project"], page["revisions"], page["workloadCount"], page["gpuCount"], page["firstPlaces"]) == (
        api["project"],
        api["revisionList"],
        api["workloads"],
        api["gpus"],
        api["firstPlaces"],
    )
    assert len(page["revisions"]) == api["revisions"]
    for row in [row for row in on_page if row[3]][:5]:  # the API's run detail ranks the same runs alike
        run = get_json(client, f"/api/v1/runs/{row[3]}")
        assert (run["rank"], run["groupSize"]) == row[5:]


def test_implementation_page_counts_first_places_by_comparison_group(client):
    runs = api_rows(client, "/api/v1/runs?implementation=geometric&eligible=true")
    led = set()
    for key in {run["comparisonKey"] for run in runs}:
        fastest = get_json(client, f"/api/v1/runs?comparison_key={key}&eligible=true&limit=1")["items"][0]
        if fastest["implementation"] == "geometric":
            led.add(key)
    assert get_json(client, "/api/v1/implementations/geometric")["firstPlaces"] == len(led) > 0
    assert get_json(client, "/implementations/geometric.json")["firstPlaces"] == len(led)


def test_model_page_and_api_show_the_same_workloads_and_best_runs(client):
    page = get_json(client, "/models/nafnet.json")
    api = get_json(client, "/api/v1/models/nafnet")
    assert page["name"] == api["name"] == "NAFNet"
    assert [w["slug"] for w in page["workloads"]] == [w["slug"] for w in api["workloadList"]]
    on_page = sorted((workload_slug(r["workloadUrl"]), r["run"], r["latencyNs"]) for r in page["bestRuns"])
    in_api = sorted((w["slug"], b["run"], b["latencyNs"]) for w in api["workloadList"] for b in w["bestByGpu"])
    assert on_page == in_api and len(in_api) == 4
    assert ("l1-040-conv2d-residual-block", "sol-submission-36270") in [(w, r) for w, r, _ in on_page]


def test_source_page_and_api_show_the_same_counts_and_reports(client):
    page = get_json(client, "/sources/sol-execbench.json")
    api = get_json(client, "/api/v1/sources/sol-execbench")
    assert (page["workloadCount"], page["runCount"]) == (api["workloads"], api["runs"]) == (235, 708)
    assert (page["name"], page["url"], page["licence"], page["lastObservedAt"]) == (
        api["name"],
        api["website"],
        api["licence"],
        api["lastObservedAt"],
    )
    assert page["reports"] == api["reports"] and len(api["reports"]) == api["reportCount"] == 1
