"""The read pages, parsed as a reader's browser would, and their JSON twins by exact value."""

from __future__ import annotations

import json
import re

import pytest
from bs4 import BeautifulSoup

from kernelindex.gpus import TRACKED_GPUS
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.verify import verify_document

L039 = "l1-039-adaptive-instance-normalization-2d-backward"
L040 = "l1-040-conv2d-residual-block"
PROTOCOL_V1_0 = "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
# Every tracked GPU but the B200, which measured all of 040's runs, in the tracked table's order.
NOT_MEASURED_040_LINKS = [{"product": g.product, "url": f"/gpus/{g.slug}"} for g in TRACKED_GPUS if g.slug != "b200"]


def html(client, path: str) -> BeautifulSoup:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return BeautifulSoup(response.text, "html.parser")


def text(node) -> str:  # type: ignore[no-untyped-def]
    return " ".join(node.get_text(" ", strip=True).split())


def table_rows(section) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [[text(td) for td in tr.select("td")] for tr in section.select("tbody tr")]


# --- The leaderboard ----------------------------------------------------------------


def test_leaderboard_has_the_eight_sections_in_order(client):
    page = html(client, f"/workloads/{L040}")
    ids = [node["id"] for node in page.select("main > header[id], main > section[id]")]
    assert ids == [
        "overview",
        "fastest",
        "records",
        "leaderboard",
        "implementations",
        "history",
        "semantics",
        "sources",
    ]
    assert text(page.select_one("h1")) == "Conv2d residual block"
    assert "3 eligible runs of 3" in text(page.select_one("#overview"))
    assert "origin model NAFNet" in text(page.select_one("#overview"))


def test_leaderboard_of_040_ranks_and_figures_follow_the_rules(client):
    page = html(client, f"/workloads/{L040}")
    fastest = text(page.select_one("#fastest"))
    # SOL-ExecBench's score under its own name; the share of its T_SOL bound, computed here, named apart.
    assert fastest.startswith(
        "Fastest reported 25.91 µs mean · SOL score 0.874 · 4.5 % of SOL bound (SOL-ExecBench T_SOL) "
        "Geometric on NVIDIA B200 · stack v1.1"
    )
    assert "Reported by source; not independently reproduced." in fastest
    # One row per implementation by default: Geometric's three submissions are one implementation.
    ranked = table_rows(page.select_one("table.ranked"))
    assert [row[1:7] for row in ranked] == [["1", "Geometric best of 3", "25.91 µs mean", "0.874", "4.5 %", "1.00×"]]
    # No run here publishes a spread: no interval column, and the note under the table says why.
    assert ranked[0][7] == "Reported license unknown · no source · no install recipe"
    headers = [th.get_text(" ", strip=True) for th in page.select("table.ranked thead th")]
    assert "Interval" not in headers
    assert "no run of this table publishes a spread" in text(page.select_one(".rank-note"))
    all_runs = html(client, page.select_one("nav.run-modes a")["href"])
    assert [row[1:7] for row in table_rows(all_runs.select_one("table.ranked"))] == [
        ["1", "Geometric", "25.91 µs mean", "0.874", "4.5 %", "1.00×"],
        ["2", "Geometric", "26.09 µs mean", "0.873", "4.4 %", "1.01×"],
        ["3", "Geometric", "27.74 µs mean", "0.867", "4.2 %", "1.07×"],
    ]
    not_measured = page.select_one("#records p.not-measured")
    first = NOT_MEASURED_040_LINKS[0]["product"]
    assert text(not_measured).startswith(f"Not measured on {first} ,")
    links = [(a.get_text(), a["href"]) for a in not_measured.select("a[href^='/gpus/']")]
    assert links == [(link["product"], link["url"]) for link in NOT_MEASURED_040_LINKS]
    history = table_rows(page.select_one("#history table"))
    assert history == [
        ["2026-08-12", "Geometric", "25.91 µs", "1.07× faster"],
        ["2026-08-12", "Geometric", "27.74 µs", "first record"],
    ]
    # Both records fall on one day: the time axis spans a week around it, one tick a day.
    chart = page.select_one("#history svg")
    assert chart.select_one("path.series")["d"].startswith("M")
    assert text(chart.select_one("title")) == "Latency of the #1 over time, log scale"
    dates = [text(tick) for tick in chart.select("text.tick") if "-" in text(tick)]
    assert "2026-08-12" in dates and len(dates) == len(set(dates)) >= 3
    cases = table_rows(page.select_one("table.cases"))
    assert len(cases) == 16
    # T_b and T_SOL are each written in one unit down their column.
    for column in (-2, -1):
        assert len({row[column].split(" ")[-1] for row in cases}) == 1
    first = json.loads((BUNDLED_SNAPSHOT / "api" / "kernels" / "40.json").read_text())["data"]["workloads"][0]
    assert cases[0][:4] == [
        "1",
        str(first["axes"]["batch_size"]),
        str(first["axes"]["height"]),
        str(first["axes"]["width"]),
    ]


def test_leaderboard_json_twin_has_exact_values(client):
    response = client.get(f"/workloads/{L040}.json")
    assert response.status_code == 200
    data = response.json()
    assert data["workload"]["slug"] == L040
    assert data["workload"]["eligibleCount"] == 3
    assert data["runs"] == "best"
    assert [(r["rank"], r["name"], r["implementationRuns"]) for r in data["ranked"]] == [(1, "sol-submission-36270", 3)]
    every = client.get(f"/workloads/{L040}.json?runs=all").json()
    assert every["runs"] == "all"
    assert [(r["rank"], r["name"], r["latencyNs"], r["vsBestText"]) for r in every["ranked"]] == [
        (1, "sol-submission-36270", 25913, "1.00×"),
        (2, "sol-submission-36339", 26085, "1.01×"),
        (3, "sol-submission-36257", 27739, "1.07×"),
    ]
    assert every["ranked"][1]["vsBest"] == 26085 / 25913
    assert data["fastest"]["name"] == "sol-submission-36270"
    assert [h["run"] for h in data["history"]] == ["sol-submission-36270", "sol-submission-36257"]
    assert data["history"][0]["improvement"] == 27739 / 25913
    assert data["cases"][0]["solLatencyMs"] > 0
    assert data["notMeasuredOn"] == NOT_MEASURED_040_LINKS


def test_leaderboard_of_039_never_ranks_across_stacks(client):
    data = client.get(f"/workloads/{L039}.json").json()
    groups = {g["label"]: g for g in data["groups"]}
    assert set(groups) == {"NVIDIA B200 · stack v1.0", "NVIDIA B200 · stack v1.1"}
    assert groups["NVIDIA B200 · stack v1.1"]["selected"]
    assert [(r["rank"], r["name"]) for r in data["ranked"]] == [
        (1, "sol-submission-30122"),
        (2, "sol-submission-20275"),
        (3, "sol-submission-19926"),
    ]
    # Following the v1.0 group's link selects that group, on the page and in its JSON twin.
    v1_0_url = groups["NVIDIA B200 · stack v1.0"]["url"]
    page = html(client, v1_0_url)
    assert table_rows(page.select_one("table.ranked"))[0][1:7] == [
        "1",
        "ac4k",
        "209.8 µs mean",
        "0.806",
        "10.0 %",
        "1.00×",
    ]
    assert page.select_one('nav.groups a[aria-current="page"]').get_text().startswith("NVIDIA B200 · stack v1.0")
    path, query = v1_0_url.split("?", 1)
    v1_0 = client.get(f"{path}.json?{query}").json()
    assert [g["label"] for g in v1_0["groups"] if g["selected"]] == ["NVIDIA B200 · stack v1.0"]
    assert [(r["rank"], r["name"]) for r in v1_0["ranked"]][:1] == [(1, "sol-submission-16893")]
    history = client.get(f"/workloads/{L039}.json").json()["history"]
    assert [(h["run"], round(h["improvement"], 4) if h["improvement"] else None) for h in history] == [
        ("sol-submission-30122", round(209442 / 138884, 4)),
        ("sol-submission-20275", None),
    ]


def test_leaderboard_sort_and_filter_work_without_javascript(client):
    page = html(client, f"/workloads/{L039}?sort=observed")
    assert [row[2] for row in table_rows(page.select_one("table.ranked"))] == [
        "Amir M. Mir | SF Tensor",
        "Databricks",
        "ac4k",
    ]
    page = html(client, f"/workloads/{L039}?implementation=data")
    assert [row[2] for row in table_rows(page.select_one("table.ranked"))] == ["Databricks"]
    form = page.select_one("#leaderboard form")
    assert form["method"] == "get" and form.select_one('input[name="group"]')["value"]


def test_run_faster_than_the_sol_bound_is_shown_apart_with_its_reason(client):
    page = html(client, "/workloads/l1-062-kv-cache-update-with-rope-backward")
    assert table_rows(page.select_one("table.ranked")) == [["No eligible runs."]]
    reasons = table_rows(page.select_one("table.ineligible"))
    assert reasons and all("held for review: faster than the suite's speed-of-light bound" in row[2] for row in reasons)
    data = client.get("/workloads/l1-062-kv-cache-update-with-rope-backward.json").json()
    held = [r["name"] for g in data["groups"] for r in client.get(g["url"].replace("?", ".json?")).json()["ineligible"]]
    assert sorted(held) == ["sol-submission-15511", "sol-submission-20107", "sol-submission-33453"]
    assert data["fastest"] is None and data["workload"]["eligibleCount"] == 0


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("sort=fastest", "sort must be one of rank, observed, sol, implementation"),
        ("page=0", "page must be a whole number"),
        ("page=-3", "page must be a whole number"),
        ("page=99999999999", "page must be a whole number"),
        ("page=2", "past the last page"),
        ("group=abc", "is not a comparison group of this workload"),
        ("group=" + "0" * 16, "is not a comparison group of this workload"),
        ("implementation=" + "x" * 101, "at most 100 characters"),
    ],
)
def test_leaderboard_bad_parameters_are_400_with_a_message(client, query, message):
    response = client.get(f"/workloads/{L040}?{query}")
    assert response.status_code == 400
    assert message in response.text
    json_response = client.get(f"/workloads/{L040}.json?{query}")
    assert json_response.status_code == 400
    assert json_response.headers["content-type"] == "application/problem+json"
    assert message in json_response.json()["detail"]


# --- The run page ------------------------------------------------------------------


def test_run_page_of_16893_shows_what_is_known(client):
    page = html(client, "/runs/sol-submission-16893")
    measurement = text(page.select_one("#measurement"))
    assert "209.8 µs geometric mean of case latencies (inferred)" in measurement
    assert "Rank 1 of 1 in its comparison group" in measurement
    assert "SOL score 0.806 · 4.05× reference · 16/16 cases faster" in measurement
    assert "Reported by source; not independently reproduced." in measurement
    identity = page.select_one("#identity")
    data = client.get("/runs/sol-submission-16893.json").json()
    # Digests are shown short, whole in the title and the copy button.
    digests = {text(dd.find_previous_sibling("dt")): dd.select_one("code") for dd in identity.select("dd")}
    assert digests["Comparison key"]["title"] == data["comparisonKey"]
    assert digests["Run digest"]["title"] == data["digest"]
    assert text(digests["Run digest"]) == data["digest"][:19] + "…"
    assert "Revision submission-16893" in text(identity) and "Id at the source submission 16893" in text(identity)
    assert "Marked passed by the source; the correctness policy was not published." in text(
        page.select_one("#correctness")
    )
    assert "NVIDIA B200 (sm_100)" in text(page.select_one("#environment"))
    assert "SOL-ExecBench evaluation stack v1.0" in text(page.select_one("#protocol"))
    assert "Community attestations never change the evidence level" in text(page.select_one("#attestations"))
    manifests = page.select("#manifest details.manifest")
    assert [text(d.select_one("summary")).split()[0] for d in manifests] == [
        "BenchmarkRun",
        "BenchmarkProtocol",
        "ExecutionEnvironment",
        "Implementation",
        "WorkloadSuite",
    ]
    assert not any(d.has_attr("open") for d in manifests)


def test_run_page_has_the_ten_sections_in_order(client):
    page = html(client, "/runs/sol-submission-16893")
    ids = [node["id"] for node in page.select("main > section[id]")]
    assert ids == [
        "measurement",
        "identity",
        "correctness",
        "workload",
        "measurements",
        "protocol",
        "environment",
        "artifacts",
        "attestations",
        "manifest",
        "cite",
        "report",
    ]


def test_run_json_twin_has_exact_values_and_verifiable_manifests(client):
    data = client.get("/runs/sol-submission-16893.json").json()
    assert (data["latencyNs"], data["latency"], data["statistic"]) == (209838, "209.8 µs", "mean")
    assert (data["rank"], data["groupSize"], data["solScore"]) == (1, 1, 0.805502)
    assert (data["timesReference"], data["casesFaster"]) == ("4.05× reference", "16/16 cases faster")
    assert data["evidenceSentence"] == "Reported by source; not independently reproduced."
    protocol = next(b for b in data["manifests"] if b["role"] == "protocol")
    assert protocol["digest"] == PROTOCOL_V1_0
    checks = verify_document(data)
    assert len(checks) == 5 and all(check.ok for check in checks), checks


def test_run_page_citation_uses_the_access_date(client):
    data = client.get("/runs/sol-submission-16893.json?accessed=2026-09-01").json()
    assert data["citation"]["accessed"] == "2026-09-01"
    assert "Accessed 2026-09-01." in data["citation"]["text"]
    assert client.get("/runs/sol-submission-16893?accessed=yesterday").status_code == 400


def test_held_run_page_says_why_it_is_not_ranked(client):
    page = html(client, "/runs/sol-submission-33453")
    assert "Held for review" in text(page.select_one(".banner"))
    assert "Not ranked: held for review" in text(page.select_one("#measurement"))


# --- The other pages ---------------------------------------------------------------


def test_home_groups_workloads_by_collection(client):
    page = html(client, "/")
    headings = [text(h) for h in page.select("section.collection h3")]
    assert headings == ["L1 94 workloads", "L2 82 workloads", "Quant 33 workloads", "FlashInfer-Bench 26 workloads"]
    assert page.select_one('link[rel="alternate"][type="application/json"]')["href"] == "/index.json"
    data = client.get("/index.json").json()
    assert (data["workloadCount"], data["eligibleRunCount"]) == (235, 708 - 9)
    [sol] = data["catalogue"]
    assert [c["workloadCount"] for c in sol["collections"]] == [94, 82, 33, 26]
    newest = data["newestRecords"]
    assert len(newest) == 8
    assert [r["observedAt"] for r in newest] == sorted((r["observedAt"] for r in newest), reverse=True)
    assert len(page.select("#newest-records tbody tr")) == 8


def test_workloads_list_filters_sorts_and_paginates(client):
    data = client.get("/workloads.json?collection=Quant").json()
    assert data["total"] == 33 and {w["collection"] for w in data["workloads"]} == {"Quant"}
    data = client.get("/workloads.json?model=NAFNet&sort=-runs").json()
    assert data["workloads"][0]["slug"] == L039  # four runs, the most of NAFNet's workloads
    assert all(w["originModel"] == "NAFNet" for w in data["workloads"])
    assert client.get("/workloads.json?model=nafnet").json()["total"] == data["total"]  # a name or its slug
    fewest = client.get("/workloads.json?model=NAFNet&sort=runs").json()["workloads"]
    assert [w["eligibleRuns"] for w in fewest] == sorted(w["eligibleRuns"] for w in fewest)
    first, second = client.get("/workloads.json").json(), client.get("/workloads.json?page=2").json()
    assert first["pageCount"] == 5 and len(first["workloads"]) == 50
    assert not {w["slug"] for w in first["workloads"]} & {w["slug"] for w in second["workloads"]}
    assert client.get("/workloads.json?q=conv2d residual").json()["workloads"][0]["slug"] == L040
    assert client.get("/workloads.json?gpu=h200&measured=true").json()["total"] == 0
    assert client.get("/workloads?sort=size").status_code == 400
    assert client.get("/workloads?page=6").status_code == 400


def test_gpu_pages_show_coverage_and_gaps(client):
    data = client.get("/gpus.json").json()
    by_slug = {g["slug"]: g for g in data["gpus"]}
    assert (by_slug["b200"]["measuredWorkloads"], by_slug["b200"]["runs"], by_slug["b200"]["gaps"]) == (235, 708, 0)
    assert (by_slug["h200"]["measuredWorkloads"], by_slug["h200"]["gaps"]) == (0, 235)
    h200 = client.get("/gpus/h200.json").json()
    assert (h200["gpu"]["gaps"], h200["measured"], h200["total"]) == (235, False, 235)
    assert all(w["best"] is None and w["runs"] == 0 for w in h200["workloads"])
    assert [tab["count"] for tab in h200["tabs"]] == [0, 235]
    assert client.get("/gpus/nope").status_code == 404


def test_implementation_model_and_source_pages(client):
    impl = client.get("/implementations/ac4k.json").json()
    assert impl["project"] == "ac4k" and "submission-16893" in impl["revisions"]
    # A SOL-ExecBench label names one submission to the board, not a revision of published code.
    assert [(g["source"], g["unit"]) for g in impl["revisionsBySource"]] == [("sol-execbench", "submission")]
    assert [r["revision"] for r in impl["revisionsBySource"][0]["revisions"]] == sorted(impl["revisions"])
    section = html(client, "/implementations/ac4k").select_one("#revisions")
    assert section.select_one("h2").get_text() == "Submissions"
    revisions = section.get_text(" ", strip=True)
    count = len(impl["revisions"])
    assert f"{count} submission{'s' if count > 1 else ''} to NVIDIA SOL-ExecBench" in revisions
    assert "is not a revision of published code" in revisions
    model = client.get("/models/nafnet.json").json()
    assert L040 in [w["slug"] for w in model["workloads"]]
    source = client.get("/sources/sol-execbench.json").json()
    assert (source["workloadCount"], source["runCount"]) == (235, 708)
    assert source["reports"][0]["status"] == "succeeded"
    assert source["reports"][0]["origin"] == "snapshot sol-execbench"
    for path in ("/implementations/nobody", "/models/nomodel", "/sources/nosource"):
        assert client.get(path).status_code == 404


def test_manifest_by_digest_is_immutable_and_verifiable(client):
    response = client.get(f"/manifests/{PROTOCOL_V1_0}.json")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    checks = verify_document(response.json(), expected_digest=PROTOCOL_V1_0)
    assert [check.ok for check in checks] == [True]
    assert client.get(f"/manifests/{PROTOCOL_V1_0}").headers["cache-control"].endswith("immutable")
    assert client.get("/manifests/sha256:" + "0" * 64).status_code == 404
    assert client.get("/manifests/sha256:XYZ").status_code == 400


@pytest.mark.parametrize("kind", ["WorkloadSuite", "BenchmarkRun", "Attestation"])
def test_schemas_are_served(client, kind):
    response = client.get(f"/schemas/v1alpha1/{kind}.json")
    assert response.status_code == 200
    assert response.json()["$id"].endswith(f"/{kind}.json")
    assert client.get("/schemas/v1alpha1/Nope.json").status_code == 404


# --- Across pages ------------------------------------------------------------------

PAGES = [
    "/",
    "/workloads",
    f"/workloads/{L040}",
    "/runs/sol-submission-16893",
    "/gpus",
    "/gpus/b200",
    "/models/nafnet",
    "/implementations/geometric",
    "/sources/sol-execbench",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_announces_its_json_twin_and_supports_conditional_get(client, path):
    response = client.get(path)
    twin = "/index.json" if path == "/" else f"{path}.json"
    assert response.headers["link"] == f'<{twin}>; rel="alternate"; type="application/json"'
    page = BeautifulSoup(response.text, "html.parser")
    assert page.select_one('link[rel="alternate"][type="application/json"]')["href"] == twin
    assert page.select_one('meta[property="og:title"]')["content"]
    assert client.get(twin).status_code == 200
    etag = response.headers["etag"]
    again = client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    json_etag = client.get(twin).headers["etag"]
    assert client.get(twin, headers={"If-None-Match": json_etag}).status_code == 304


@pytest.mark.parametrize("path", PAGES)
def test_pages_have_no_inline_script_or_style(client, path):
    page = BeautifulSoup(client.get(path).text, "html.parser")
    assert all(script.get("src") for script in page.select("script"))
    assert not page.select("style") and not page.select("[style]")
    assert not [tag for tag in page.find_all(True) if any(attr.startswith("on") for attr in tag.attrs)]


@pytest.mark.parametrize("path", ["/runs/sol-submission-1", "/workloads/no-such-workload", "/no-such-page"])
def test_unknown_things_are_real_404s_in_html_and_json(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert "text/html" in response.headers["content-type"]
    assert BeautifulSoup(response.text, "html.parser").select_one("h1").get_text() == "Not found"
    twin = client.get(path + ".json")
    assert twin.status_code == 404
    assert twin.json()["status"] == 404 and twin.json()["title"] == "Not found"


@pytest.mark.parametrize("path", ["/", "/index.json", f"/workloads/{L040}", "/runs/sol-submission-16893.json", "/nope"])
def test_every_response_carries_the_security_headers(client, path):
    headers = client.get(path).headers
    policy = headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "strict-origin-when-cross-origin"


def test_pages_escape_what_they_show(client):
    response = client.get("/workloads?q=<script>alert(1)</script>")
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in response.text
    assert re.search(r"&lt;script&gt;alert\(1\)&lt;/script&gt;", response.text)


@pytest.mark.parametrize(
    "path",
    [
        "/workloads?q=%00",
        "/workloads/l1-040-conv2d-residual-block?implementation=a%00b",
        "/runs/sol-submission-16893%00",
        "/search?q=%01",
        "/api/v1/runs?workload=%00",
    ],
)
def test_control_characters_in_the_address_are_a_clear_400(client, path):
    response = client.get(path, headers={"Accept": "application/json"})
    assert response.status_code == 400
    assert "control characters" in response.json()["detail"]
    assert response.headers["x-content-type-options"] == "nosniff"
    page = client.get(path, headers={"Accept": "text/html"})
    assert page.status_code == 400
    if not path.startswith("/api/"):
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert "control characters" in BeautifulSoup(page.text, "html.parser").select_one("main").get_text()


def test_overlong_addresses_are_refused(client):
    response = client.get("/workloads?q=" + "a" * 9000)
    assert response.status_code == 414
