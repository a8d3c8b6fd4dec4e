"""The first pages: the home page, its JSON twin and run permalinks."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from kernelindex.app import create_app
from kernelindex.settings import Settings
from kernelindex.verify import verify_document


@pytest.fixture
def client(loaded_db):
    with TestClient(create_app(Settings(database_url=loaded_db.url), sessions=loaded_db.sessions)) as client:
        yield client


def test_home_lists_every_workload_by_collection_with_its_best_run(client):
    response = client.get("/")
    assert response.status_code == 200
    page = BeautifulSoup(response.text, "html.parser")
    headings = [h.get_text(" ", strip=True) for h in page.select("section.collection h2")]
    assert headings == [
        "L1 94 workloads",
        "L2 82 workloads",
        "Quant 33 workloads",
        "FlashInfer-Bench 26 workloads",
    ]
    assert len(page.select("section.collection tbody tr")) == 235
    row = next(tr for tr in page.select("tbody tr") if "l1-040-conv2d-residual-block" in tr.get_text())
    cells = [td.get_text(" ", strip=True) for td in row.select("td")]
    assert cells[0].startswith("Conv2d residual block")
    assert cells[3] == "25.9 µs mean"  # the fastest of the bundled runs of 040
    assert page.select_one('link[rel="alternate"][type="application/json"]')["href"] == "/index.json"
    assert response.headers["link"] == '</index.json>; rel="alternate"; type="application/json"'


def test_home_json_twin_has_the_same_figures(client):
    data = client.get("/index.json").json()
    assert data["workloadCount"] == 235
    assert data["eligibleRunCount"] == 708 - 9
    workloads = {w["slug"]: w for c in data["collections"] for w in c["workloads"]}
    best = workloads["l1-039-adaptive-instance-normalization-2d-backward"]["best"]
    # The v1.1 run 30122 beats the v1.0 seed run 16893 (209.8 µs): fastest across groups.
    assert best["run"] == "sol-submission-30122"
    assert best["latencyNs"] == 138884
    assert best["environment"] == "SOL-ExecBench NVIDIA B200, stack v1.1"
    assert data["sources"][0]["lastObservedAt"] == "2026-08-15T02:11:00Z"


def test_run_permalink_serves_manifests_whose_digests_recompute(client):
    response = client.get("/runs/sol-submission-16893.json")
    assert response.status_code == 200
    data = response.json()
    assert data["run"]["manifest"]["metadata"]["name"] == "sol-submission-16893"
    assert data["evidence"] == "reported"
    assert data["protocol"]["digest"] == "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
    checks = verify_document(data)
    assert [c.kind for c in checks] == [
        "BenchmarkRun",
        "WorkloadSuite",
        "Implementation",
        "BenchmarkProtocol",
        "ExecutionEnvironment",
    ]
    assert all(check.ok for check in checks), checks
    assert data["history"] == [
        {"digest": data["run"]["digest"], "recordedAt": "2026-08-15T02:11:00Z", "supersededAt": None}
    ]


def test_unknown_run_is_a_real_404_problem(client):
    response = client.get("/runs/sol-submission-1.json")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json() == {
        "type": "about:blank",
        "title": "Not found",
        "status": 404,
        "detail": "No run is named 'sol-submission-1'.",
    }


@pytest.mark.parametrize("path", ["/", "/index.json", "/runs/sol-submission-16893.json", "/no-such-page"])
def test_every_response_carries_the_security_headers(client, path):
    headers = client.get(path).headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "strict-origin-when-cross-origin"
