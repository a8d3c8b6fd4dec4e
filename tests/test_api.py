"""The JSON API (/api/v1) and its reference (/api/docs), on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from kernelindex.db.tables import Run, Workload
from kernelindex.paths import STATIC
from kernelindex.ranking import RunFacts, rank_group
from kernelindex.store.run_queries import RUN_SORTS, RunFilters, list_runs
from kernelindex.store.workloads import WORKLOAD_SORTS, WorkloadFilters, list_workloads
from kernelindex.verify import verify_document
from kernelindex.web import cursors

L039 = "l1-039-adaptive-instance-normalization-2d-backward"
L040 = "l1-040-conv2d-residual-block"
API_PATHS = {
    "/api/v1/workloads",
    "/api/v1/workloads/{ref}",
    "/api/v1/workloads/{ref}/top",
    "/api/v1/runs",
    "/api/v1/runs/{ref}",
    "/api/v1/implementations",
    "/api/v1/implementations/{slug}",
    "/api/v1/gpus",
    "/api/v1/gpus/{slug}",
    "/api/v1/models",
    "/api/v1/models/{slug}",
    "/api/v1/sources",
    "/api/v1/sources/{slug}",
    "/api/v1/search",
    "/api/v1/compare",
}


def get_json(client: TestClient, path: str, **params: object) -> dict:
    query = f"?{urlencode(params, doseq=True)}" if params else ""
    response = client.get(path + query)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def walk(client: TestClient, path: str, **params: object) -> tuple[list[dict], int]:
    """Every item of a listing, page by page; and the number of pages."""
    items: list[dict] = []
    cursor, pages = None, 0
    while True:
        page = get_json(client, path, **params, **({"cursor": cursor} if cursor else {}))
        items += page["items"]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            return items, pages
        assert pages < 1000, "the pages never end"


def assert_problem(response, status: int, detail_part: str = "") -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert set(problem) == {"type", "title", "status", "detail"}
    assert problem["status"] == status
    assert problem["type"] == "about:blank"
    assert detail_part in problem["detail"]
    return problem


# --- OpenAPI and /api/docs ----------------------------------------------------------


def test_openapi_document_describes_every_api_path_with_problem_responses(client):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    document = json.loads(response.text)
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) >= API_PATHS
    schemas = document["components"]["schemas"]
    for path in API_PATHS:
        operation = document["paths"][path]["get"]
        assert operation["operationId"]
        assert "200" in operation["responses"]
        assert "422" not in operation["responses"]  # validation errors are served as 400 problems
        problem = operation["responses"]["4XX"]["content"]["application/problem+json"]["schema"]
        assert problem["required"] == ["type", "title", "status", "detail"]
    # Every field of the run detail is documented, and its manifests carry the schema of their kind.
    run_fields = set(schemas["RunDetail"]["properties"])
    assert {"name", "digest", "rank", "comparisonKey", "evidence", "availability", "manifests"} <= run_fields
    assert {"ineligibilityReasons", "groupSize", "vsBest", "metrics", "history"} <= run_fields
    manifest = schemas["RunManifest"]["properties"]["manifest"]
    assert manifest["properties"]["kind"]["const"] == "BenchmarkRun"
    assert schemas["WorkloadPage"]["required"] == ["nextCursor", "items"]
    assert set(schemas["WorkloadItem"]["properties"]) == set(schemas["WorkloadItem"]["required"])


def test_openapi_document_lists_only_the_json_api(client):
    paths = client.get("/api/openapi.json").json()["paths"]
    assert paths, "the document lists the API"
    # Pages, their JSON twins and the sign-up, account and moderation forms are not the API.
    assert [path for path in paths if not path.startswith("/api/v1/")] == []
    assert "/api/v1/runs/{name}/attestations" in paths  # the API's one write is still there


def test_openapi_names_every_sort_and_the_limit_range(client):
    document = client.get("/api/openapi.json").json()
    params = {p["name"]: p for p in document["paths"]["/api/v1/workloads"]["get"]["parameters"]}
    assert params["sort"]["schema"]["enum"] == ["name", "runs", "-runs", "best_sol", "last_record"]
    assert params["limit"]["schema"]["minimum"] == 1
    assert params["limit"]["schema"]["maximum"] == 200
    run_params = {p["name"]: p for p in document["paths"]["/api/v1/runs"]["get"]["parameters"]}
    assert run_params["sort"]["schema"]["enum"] == list(RUN_SORTS)
    assert set(params["sort"]["schema"]["enum"]) == set(WORKLOAD_SORTS)


def test_api_docs_page_loads_and_references_only_same_origin_assets(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert "unsafe-inline" not in response.headers["content-security-policy"]
    page = BeautifulSoup(response.text, "html.parser")
    scripts = page.select("script")
    assert scripts and all(script.get("src") and not script.get_text(strip=True) for script in scripts)
    assert not page.select("style") and not page.select("[style]")
    assets = [tag["src"] for tag in scripts] + [tag["href"] for tag in page.select("link[href]")]
    assert "/static/swagger/swagger-ui-bundle.js" in assets
    assert "/static/swagger/swagger-ui.css" in assets
    for url in assets:
        assert url.startswith("/") and not url.startswith("//"), url
        assert client.get(url).status_code == 200, url
    assert page.select_one("#swagger-ui")["data-openapi-url"] == "/api/openapi.json"
    # Swagger UI renders the page's <main> and <h1>; without script, the fallback has both.
    fallback = BeautifulSoup(page.select_one("noscript").decode_contents(), "html.parser")
    assert fallback.select_one("main h1").get_text(strip=True) == "KernelIndex API reference"
    assert fallback.select_one("main a")["href"] == "/api/openapi.json"
    # The vendored bundle keeps its licence beside it.
    assert "Apache License" in (STATIC / "swagger" / "LICENSE").read_text()


# --- Workloads ----------------------------------------------------------------------


@pytest.mark.parametrize("sort", list(WORKLOAD_SORTS))
def test_workload_pages_cover_the_unpaginated_listing_exactly(client, loaded_db, sort):
    items, pages = walk(client, "/api/v1/workloads", sort=sort, limit=40)
    slugs = [item["slug"] for item in items]
    assert pages == 6  # 235 workloads, 40 a page
    assert len(slugs) == len(set(slugs)) == 235
    with loaded_db.sessions() as session:
        everything, position = list_workloads(session, WorkloadFilters(), sort, None, 10_000)
    assert position is None
    assert slugs == [item.slug for item in everything]


def test_workload_sorts_order_as_documented(client):
    def listing(sort: str) -> list[dict]:
        return walk(client, "/api/v1/workloads", sort=sort, limit=200)[0]

    names = [w["slug"] for w in listing("name")]
    assert names == sorted(names)
    fewest = listing("runs")
    assert [w["eligibleRuns"] for w in fewest] == sorted(w["eligibleRuns"] for w in fewest)
    most = listing("-runs")
    assert [w["eligibleRuns"] for w in most] == sorted((w["eligibleRuns"] for w in most), reverse=True)
    assert most[0]["eligibleRuns"] == 5  # kernel 4: 3 bundled runs and 2 captured ones
    for sort, field in (("best_sol", "bestSolScore"), ("last_record", "lastRecordAt")):
        values = [w[field] for w in listing(sort)]
        known = [value for value in values if value is not None]
        assert values == sorted(known, reverse=True) + [None] * (len(values) - len(known))  # highest, newest first


def test_workloads_without_eligible_runs_sort_last_and_page_once(client, loaded_db):
    before = walk(client, "/api/v1/workloads", sort="best_sol", limit=200)[0]
    gone = [L039, L040, before[0]["slug"]]
    with loaded_db.sessions() as session:
        ids = session.scalars(select(Workload.id).where(Workload.name.in_(gone))).all()
        session.execute(
            update(Run).where(Run.workload_id.in_(ids)).values(withdrawn_at=datetime(2026, 9, 1, tzinfo=UTC))
        )
        session.commit()
    unranked = sorted({w["slug"] for w in before if w["bestSolScore"] is None} | set(gone))
    for sort, field in (("best_sol", "bestSolScore"), ("last_record", "lastRecordAt")):
        # A long first page, then pages of two: cursors land in the run of nulls and past it.
        page = get_json(client, "/api/v1/workloads", sort=sort, limit=200)
        items = page["items"]
        while page["nextCursor"]:
            page = get_json(client, "/api/v1/workloads", sort=sort, limit=2, cursor=page["nextCursor"])
            items += page["items"]
        assert len(items) == 235 and len({w["slug"] for w in items}) == 235
        tail = items[-len(unranked) :]
        assert [w["slug"] for w in tail] == unranked  # nulls last, by name
        assert all(w[field] is None for w in tail)
        assert all(w[field] is not None for w in items[: -len(unranked)])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"collection": "L1"}, 94),
        ({"collection": "quant"}, 33),
        ({"tag": "vision"}, 22),
        ({"tag": "Vision"}, 22),
        ({"tag": "mla_paged_attention"}, 5),
        ({"model": "NAFNet"}, 4),
        ({"model": "nafnet"}, 4),
        ({"gpu": "b200"}, 235),
        ({"gpu": "h200", "measured": "true"}, 0),
        ({"gpu": "h200"}, 235),  # every workload, none measured on it
        ({"q": "conv2d residual"}, 1),
        ({"collection": "L1", "model": "NAFNet"}, 3),
        ({"collection": "L2", "q": "nafnet"}, 1),
        ({"tag": "no-such-tag"}, 0),
    ],
)
def test_workload_filters(client, params, expected):
    items, _ = walk(client, "/api/v1/workloads", **params, limit=30)
    assert len(items) == expected
    for item in items:
        if "collection" in params:
            assert item["collection"].lower() == params["collection"].lower()
        if "tag" in params:
            assert params["tag"].lower() in item["tags"]
        if "model" in params:
            assert item["modelSlug"] == "nafnet"


def test_workload_filter_by_tag_matches_whole_tags_only(client):
    assert walk(client, "/api/v1/workloads", tag="visio")[0] == []
    assert walk(client, "/api/v1/workloads", tag="attention")[0] != walk(client, "/api/v1/workloads", tag="mla")[0]
    assert walk(client, "/api/v1/workloads", tag='vision", "x')[0] == []


def test_workload_detail_by_slug_and_by_digest(client):
    by_slug = get_json(client, f"/api/v1/workloads/{L040}")
    assert by_slug["title"] == "Conv2d residual block"
    assert by_slug["originModel"] == "NAFNet" and by_slug["modelSlug"] == "nafnet"
    assert by_slug["eligibleRuns"] == 3
    assert by_slug["source"] == {
        "slug": "sol-execbench",
        "name": "NVIDIA SOL-ExecBench",
        "apiUrl": "/api/v1/sources/sol-execbench",
    }
    [group] = by_slug["groups"]
    assert group["gpu"] == "b200" and group["stack"] == "v1.1" and group["runs"] == 3
    assert group["best"]["run"] == "sol-submission-36270"
    assert group["best"]["latencyNs"] == 25913
    assert all(check.ok for check in verify_document(by_slug["manifest"]))
    by_digest = get_json(client, f"/api/v1/workloads/{by_slug['digest']}")
    assert by_digest == by_slug
    assert by_slug["history"] == [
        {
            "digest": by_slug["digest"],
            "recordedAt": by_slug["history"][0]["recordedAt"],
            "supersededAt": None,
            "figureChanges": [],
        }
    ]


def test_workload_detail_lists_one_group_per_stack(client):
    detail = get_json(client, f"/api/v1/workloads/{L039}")
    assert sorted(group["stack"] for group in detail["groups"]) == ["v1.0", "v1.1"]
    runs = {group["stack"]: get_json(client, group["runsUrl"])["items"] for group in detail["groups"]}
    assert sum(len(items) for items in runs.values()) == 4
    assert {item["name"] for item in runs["v1.0"]} >= {"sol-submission-16893"}


# --- Runs ---------------------------------------------------------------------------


@pytest.mark.parametrize("sort", list(RUN_SORTS))
def test_run_pages_cover_the_unpaginated_listing_exactly(client, loaded_db, sort):
    items, pages = walk(client, "/api/v1/runs", sort=sort, limit=200)
    names = [item["name"] for item in items]
    assert pages == 4  # 708 runs, 200 a page
    assert len(names) == len(set(names)) == 708
    with loaded_db.sessions() as session:
        everything, _ = list_runs(session, RunFilters(), sort, None, 10_000)
    assert names == [item.name for item in everything]
    key = "latencyNs" if "latency" in sort else "observedAt"
    values = [item[key] for item in items]
    assert values == sorted(values, reverse=sort.startswith("-"))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"workload": L040}, 3),
        ({"workload": L039}, 4),
        ({"gpu": "b200"}, 708),
        ({"gpu": "h200"}, 0),
        ({"implementation": "geometric"}, 91),
        ({"evidence": "reported"}, 708),
        ({"evidence": "verified"}, 0),
        ({"eligible": "true"}, 699),
        ({"eligible": "false"}, 9),
        ({"workload": "no-such-workload"}, 0),
    ],
)
def test_run_filters(client, params, expected):
    items, _ = walk(client, "/api/v1/runs", **params, limit=100)
    assert len(items) == expected
    for item in items:
        if "workload" in params:
            assert item["workload"] == params["workload"]
        if "implementation" in params:
            assert item["implementation"] == "geometric"
        if "eligible" in params:
            assert item["eligible"] is (params["eligible"] == "true")


def test_run_filter_by_comparison_key_is_one_group(client):
    first = get_json(client, "/api/v1/runs", workload=L039, sort="-latency", limit=1)["items"][0]
    group, _ = walk(client, "/api/v1/runs", comparison_key=first["comparisonKey"], limit=1)
    assert {item["comparisonKey"] for item in group} == {first["comparisonKey"]}
    assert first["name"] in {item["name"] for item in group}


def _add_run(loaded_db, name: str, latency_ns: int, like: str = "sol-submission-36270") -> None:
    with loaded_db.sessions() as session:
        model = session.scalar(select(Run).where(Run.name == like))
        columns = {c.key: getattr(model, c.key) for c in Run.__table__.columns if c.key != "id"}
        session.add(Run(**{**columns, "name": name, "external_id": None, "latency_ns": latency_ns}))
        session.commit()


def test_run_cursors_are_stable_under_inserts(client, loaded_db):
    seen: list[str] = []
    page = get_json(client, "/api/v1/runs", sort="latency", limit=100)
    seen += [item["name"] for item in page["items"]]
    # One run that sorts before the cursor, one after it, and one with the cursor's own latency.
    last = page["items"][-1]
    _add_run(loaded_db, "inserted-fastest", 1)
    _add_run(loaded_db, "inserted-slowest", 10**12)
    _add_run(loaded_db, "inserted-tie-before", last["latencyNs"])
    cursor = page["nextCursor"]
    while cursor:
        page = get_json(client, "/api/v1/runs", sort="latency", limit=100, cursor=cursor)
        seen += [item["name"] for item in page["items"]]
        cursor = page["nextCursor"]
    assert len(seen) == len(set(seen))
    originals = [name for name in seen if not name.startswith("inserted-")]
    assert len(originals) == 708
    assert "inserted-slowest" in seen and "inserted-fastest" not in seen
    # "inserted-tie-before" ties the cursor's latency and sorts before its name: already passed.
    assert "inserted-tie-before" not in seen


def test_run_detail_by_name_and_digest_with_manifests_that_recompute(client):
    data = get_json(client, "/api/v1/runs/sol-submission-16893")
    assert data["evidence"] == "reported"
    assert data["eligible"] is True and data["ineligibilityReasons"] == []
    assert data["availability"]["text"] == "license unknown · no source · no install recipe"
    assert data["metrics"]["fast_1_count"] == 16
    assert data["latencyNs"] == 209838 and data["primaryStatistic"] == "mean"
    # The source's score is a number under its own name; the share of its bound is named apart.
    assert data["solScore"] == 0.805502
    assert (data["shareOfBound"]["bound"], data["shareOfBound"]["label"]) == (
        "sol-execbench",
        "% of SOL bound (SOL-ExecBench T_SOL)",
    )
    assert data["manifests"]["protocol"]["digest"] == (
        "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
    )
    checks = verify_document(data["manifests"])
    assert sorted(check.kind for check in checks) == sorted(
        ["BenchmarkRun", "WorkloadSuite", "Implementation", "BenchmarkProtocol", "ExecutionEnvironment"]
    )
    assert all(check.ok for check in checks), checks
    assert data["manifests"]["run"]["digest"] == data["digest"]
    assert get_json(client, f"/api/v1/runs/{data['digest']}") == data


def test_run_detail_rank_agrees_with_the_ranking_rules(client):
    group = walk(client, "/api/v1/runs", workload=L040, limit=10)[0]
    ranked = rank_group(
        RunFacts(
            name=r["name"],
            comparison_key=r["comparisonKey"],
            latency_ns=r["latencyNs"],
            observed_at=datetime.fromisoformat(r["observedAt"]),
        )
        for r in group
    )
    for expected in ranked:
        detail = get_json(client, f"/api/v1/runs/{expected.run.name}")
        assert detail["rank"] == expected.rank
        assert detail["groupSize"] == len(ranked)
        assert detail["vsBest"] == pytest.approx(expected.vs_best)
    assert ranked[0].run.name == "sol-submission-36270"


def test_held_run_has_no_rank_and_says_why(client):
    held = walk(client, "/api/v1/runs", eligible="false", limit=10)[0][0]
    detail = get_json(client, held["apiUrl"])
    assert detail["heldForReview"] is True and detail["eligible"] is False
    assert detail["rank"] is None and detail["vsBest"] is None
    assert detail["ineligibilityReasons"] == ["held for review: faster than the suite's speed-of-light bound"]


# --- Implementations, GPUs, models, sources ------------------------------------------


@pytest.mark.parametrize(
    ("path", "total"),
    [("/api/v1/implementations", 29), ("/api/v1/models", None), ("/api/v1/gpus", None), ("/api/v1/sources", 1)],
)
def test_small_listings_page_by_slug_without_gaps(client, path, total):
    everything = get_json(client, path, limit=200)
    assert everything["nextCursor"] is None
    paged, pages = walk(client, path, limit=3)
    assert [item["slug"] for item in paged] == [item["slug"] for item in everything["items"]]
    assert [item["slug"] for item in paged] == sorted(item["slug"] for item in paged)
    assert pages == -(-len(paged) // 3)  # no empty page at the end
    if total is not None:
        assert len(paged) == total


def test_implementation_detail_lists_its_best_run_per_workload_and_gpu(client):
    listing = get_json(client, "/api/v1/implementations", q="geometric")["items"]
    assert [item["slug"] for item in listing] == ["geometric"]
    detail = get_json(client, "/api/v1/implementations/geometric", limit=200)
    assert (detail["project"], detail["runs"], detail["workloads"], detail["gpus"]) == ("Geometric", 91, 64, 1)
    assert detail["byGpu"] == [{"gpu": "b200", "gpuProduct": "NVIDIA B200", "runs": 91, "workloads": 64}]
    assert [(s["source"], s["runs"]) for s in detail["bySource"]] == [("sol-execbench", 91)]
    rows = detail["workloadResults"]
    assert [row["workload"] for row in rows] == sorted(row["workload"] for row in rows)
    assert len(rows) == 64 and sum(row["runs"] for row in rows) == 91 and detail["nextCursor"] is None
    l040 = next(row for row in rows if row["workload"] == L040)
    assert (l040["gpu"], l040["runs"], l040["best"]["name"], l040["best"]["rank"]) == (
        "b200",
        3,
        "sol-submission-36270",
        1,
    )
    for row in rows[:5]:
        assert get_json(client, row["best"]["apiUrl"])["rank"] == row["best"]["rank"]


def test_implementation_detail_pages_its_rows_by_cursor(client):
    rows, pages = [], 0
    cursor = None
    while True:
        page = get_json(client, "/api/v1/implementations/geometric", limit=30, **({"cursor": cursor} if cursor else {}))
        assert len(page["workloadResults"]) <= 30 and page["runs"] == 91
        rows += [row["workload"] for row in page["workloadResults"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == 3 and len(rows) == len(set(rows)) == 64
    other = get_json(client, "/api/v1/implementations/ac4k", limit=1)["nextCursor"]
    assert_problem(client.get(f"/api/v1/implementations/geometric?cursor={other}"), 400, "different query")


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("gpu=nope", "No GPU has the slug 'nope'"),
        ("source=nope", "No source has the slug 'nope'"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("cursor=abc", "not one this API issued"),
        ("sort=latency", "Unknown query parameter"),
    ],
)
def test_implementation_detail_refuses_bad_filters(client, query, detail):
    assert_problem(client.get(f"/api/v1/implementations/geometric?{query}"), 400, detail)


def test_implementation_detail_filtered_to_a_gpu_it_has_no_run_on_lists_nothing(client):
    detail = get_json(client, "/api/v1/implementations/geometric", gpu="h200")
    assert detail["workloadResults"] == [] and detail["nextCursor"] is None and detail["runs"] == 91


def test_implementation_and_gpu_details_accept_a_manifest_digest(client):
    run = get_json(client, "/api/v1/runs/sol-submission-36270")
    implementation = run["manifests"]["implementation"]["digest"]
    assert get_json(client, f"/api/v1/implementations/{implementation}") == get_json(
        client, "/api/v1/implementations/geometric"
    )
    environment = run["manifests"]["environment"]["digest"]
    assert get_json(client, f"/api/v1/gpus/{environment}") == get_json(client, "/api/v1/gpus/b200")
    assert_problem(client.get("/api/v1/gpus/sha256:" + "0" * 64), 404, "No GPU")
    assert_problem(client.get("/api/v1/implementations/sha256:12"), 400, "is not a digest")


def test_gpu_detail_shows_measured_workloads_and_gaps(client):
    gpus = {gpu["slug"]: gpu for gpu in get_json(client, "/api/v1/gpus")["items"]}
    assert gpus["b200"]["runs"] == 708 and gpus["b200"]["environments"] == 2
    assert gpus["h200"]["runs"] == 0  # tracked, not measured yet
    b200 = get_json(client, "/api/v1/gpus/b200")
    assert sorted(e["stack"] for e in b200["environmentList"]) == ["v1.0", "v1.1"]
    assert b200["workloadsUrl"] == "/api/v1/gpus/b200/workloads"
    measured, _ = walk(client, b200["workloadsUrl"], measured="true", limit=100)
    gaps, _ = walk(client, b200["workloadsUrl"], measured="false", limit=100)
    assert (len(measured), gaps) == (235, [])
    assert sum(w["runs"] for w in measured) == 708
    h200 = get_json(client, "/api/v1/gpus/h200")
    assert (h200["workloads"], h200["gaps"], h200["environmentList"]) == (0, 235, [])
    measured, _ = walk(client, h200["workloadsUrl"], measured="true", limit=100)
    everything, _ = walk(client, h200["workloadsUrl"], limit=100)
    assert measured == [] and len(everything) == 235 and {w["runs"] for w in everything} == {0}
    assert all(w["best"] is None for w in everything)


def test_model_detail_has_best_run_per_gpu(client):
    detail = get_json(client, "/api/v1/models/nafnet")
    assert detail["name"] == "NAFNet" and detail["workloads"] == 4
    l040 = next(w for w in detail["workloadList"] if w["slug"] == L040)
    assert [(b["gpu"], b["run"]) for b in l040["bestByGpu"]] == [("b200", "sol-submission-36270")]
    assert get_json(client, "/api/v1/models/NAFNet") == detail


def test_source_detail_has_its_ingestion_reports(client):
    detail = get_json(client, "/api/v1/sources/sol-execbench")
    assert detail["workloads"] == 235 and detail["runs"] == 708
    assert detail["reportCount"] == 1
    [report] = detail["reports"]
    assert report["status"] == "succeeded"
    assert report["counts"]["added"]["run"] == 708


# --- Search ---------------------------------------------------------------------------


def test_search_endpoint_finds_workloads_and_filters_by_kind(client):
    results = get_json(client, "/api/v1/search", q="conv2d residual block")
    assert results["query"] == "conv2d residual block"
    top = results["hits"][0]
    assert (top["kind"], top["slug"]) == ("workload", L040)
    assert top["apiUrl"] == f"/api/v1/workloads/{L040}"
    gpus = get_json(client, "/api/v1/search", q="b200", kind="gpu")["hits"]
    assert [(hit["kind"], hit["slug"]) for hit in gpus] == [("gpu", "b200")]


# --- Bad input ------------------------------------------------------------------------


def _tampered(cursor: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[-5] ^= 0x01  # one bit of the payload
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def _forged(payload: dict) -> str:
    """A token with a valid checksum around a payload the API never issued."""
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(cursors.checksum(body) + body).rstrip(b"=").decode()


@pytest.mark.parametrize(
    ("path", "status", "detail"),
    [
        ("/api/v1/workloads?sort=bogus", 400, "sort: Input should be"),
        ("/api/v1/runs?sort=name", 400, "sort: Input should be"),
        ("/api/v1/workloads?limit=0", 400, "limit"),
        ("/api/v1/workloads?limit=10000", 400, "limit"),
        ("/api/v1/runs?limit=-1", 400, "limit"),
        ("/api/v1/runs?limit=ten", 400, "limit"),
        ("/api/v1/workloads?cursor=garbage!", 400, "not one this API issued"),
        ("/api/v1/workloads?cursor=AAAA", 400, "not one this API issued"),
        ("/api/v1/runs?cursor=" + "A" * 3000, 400, "cursor"),
        ("/api/v1/runs?eligible=maybe", 400, "eligible"),
        ("/api/v1/runs?evidence=great", 400, "evidence"),
        ("/api/v1/runs?comparison_key=sha256:abc", 400, "comparison_key"),
        ("/api/v1/workloads?colection=L1", 400, "Unknown query parameter 'colection'"),
        ("/api/v1/runs/sha256:xyz", 400, "is not a digest"),
        ("/api/v1/workloads/sha256:" + "A" * 64, 400, "is not a digest"),
        ("/api/v1/runs/sha256:" + "0" * 64, 404, "No run has the name or digest"),
        ("/api/v1/runs/sol-submission-1", 404, "No run has the name or digest 'sol-submission-1'"),
        ("/api/v1/workloads/l1-999-nothing", 404, "No workload"),
        ("/api/v1/implementations/nobody", 404, "No implementation"),
        ("/api/v1/gpus/tpu-v9", 404, "No GPU"),
        ("/api/v1/workloads?gpu=b2000", 400, "No GPU has the slug 'b2000'. Did you mean b200"),
        ("/api/v1/workloads?measured=true", 400, "only with gpu="),
        ("/api/v1/workloads?gpu=b200&measured=maybe", 400, "measured"),
        ("/api/v1/models/no-such-model", 404, "No origin model"),
        ("/api/v1/sources/elsewhere", 404, "No source"),
        ("/api/v1/search", 400, "q: Field required"),
        ("/api/v1/search?q=x&kind=paper", 400, "kind"),
        ("/api/v1/compare?run=sol-submission-16893", 400, "2 to 8 runs"),
        ("/api/v1/compare?run=sol-submission-16893&run=nope", 404, "No run is named 'nope'"),
        ("/api/v1/nothing-here", 404, ""),
        ("/api/v1/workloads?q=a%00b", 400, "contains control characters"),
        ("/api/v1/runs?workload=x%00", 400, "contains control characters"),
        ("/api/v1/runs/sol%00", 400, "contains control characters"),
        ("/api/v1/search?q=%00", 400, "contains control characters"),
    ],
)
def test_bad_input_is_a_problem_never_a_500(client, path, status, detail):
    assert_problem(client.get(path), status, detail)


ODD_VALUES = ["", "%", "_", "'", '"', "\\", "😀", "a" * 300, "%ff", "sha256:", "-1", "1e309", "[]", "\u202e", "a/b"]
LIST_PARAMETERS = {
    "/api/v1/workloads": ["collection", "tag", "model", "gpu", "q", "sort", "limit", "cursor"],
    "/api/v1/runs": ["workload", "gpu", "implementation", "evidence", "eligible", "comparison_key", "sort", "cursor"],
    "/api/v1/implementations": ["q", "limit", "cursor"],
    "/api/v1/gpus": ["cursor"],
    "/api/v1/models": ["cursor"],
    "/api/v1/sources": ["cursor"],
    "/api/v1/search": ["q", "kind", "limit"],
    "/api/v1/compare": ["run"],
}


def test_odd_values_in_any_parameter_never_cause_a_server_error(loaded_db, make_app):
    app = make_app(loaded_db)
    failures = []
    with TestClient(app, raise_server_exceptions=False) as client:
        for value in ODD_VALUES:
            text = quote(value, safe="%")
            for path, names in LIST_PARAMETERS.items():
                for name in names:
                    extra = (
                        ""
                        if name == "limit" or path.endswith(("/compare", "/gpus", "/models", "/sources"))
                        else "&limit=1"
                    )
                    response = client.get(f"{path}?{name}={text}{extra}")
                    if response.status_code >= 500 or response.status_code == 422:
                        failures.append((path, name, value[:12], response.status_code))
            for path in ("workloads", "runs", "implementations", "gpus", "models", "sources"):
                if value:
                    response = client.get(f"/api/v1/{path}/{text}")
                    if response.status_code not in (200, 400, 404):
                        failures.append((path, value[:12], response.status_code))
    assert failures == []


def test_tampered_or_misused_cursors_are_refused(client):
    cursor = get_json(client, "/api/v1/runs", limit=5)["nextCursor"]
    assert get_json(client, "/api/v1/runs", limit=5, cursor=cursor)["items"]
    assert_problem(client.get(f"/api/v1/runs?limit=5&cursor={_tampered(cursor)}"), 400, "has been altered")
    assert_problem(client.get(f"/api/v1/runs?limit=5&cursor={cursor[:-4]}"), 400, "")
    # A cursor is bound to its listing, sort and filters.
    assert_problem(client.get(f"/api/v1/workloads?cursor={cursor}"), 400, "different query")
    assert_problem(client.get(f"/api/v1/runs?sort=-latency&cursor={cursor}"), 400, "different query")
    assert_problem(client.get(f"/api/v1/runs?workload={L040}&cursor={cursor}"), 400, "different query")
    # A valid checksum but not a position of this sort: still refused, never a 500.
    good = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))[cursors.CHECKSUM_BYTES :])
    for position in ([], ["x", "y"], [True, "a"], [None, "a"], [1.5, "a"], "nope", [1, 2], [10**30, "a"]):
        forged = _forged({**good, "p": position})
        assert_problem(client.get(f"/api/v1/runs?limit=5&cursor={forged}"), 400, "not one this API issued")
    assert_problem(client.get(f"/api/v1/runs?limit=5&cursor={_forged([1, 2])}"), 400, "not one this API issued")


def test_forged_timestamp_positions_are_checked(client):
    cursor = get_json(client, "/api/v1/runs", sort="observed", limit=5)["nextCursor"]
    good = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))[cursors.CHECKSUM_BYTES :])
    for moment in ("yesterday", "2026-08-01T00:00:00", 5, "9999-12-31T23:59:59-14:00"):
        forged = _forged({**good, "p": [moment, "sol-submission-1"]})
        assert_problem(client.get(f"/api/v1/runs?sort=observed&cursor={forged}"), 400, "not one this API issued")
    forged = _forged({**good, "p": ["2026-08-01T00:00:00+00:00", "a"]})
    assert get_json(client, "/api/v1/runs", sort="observed", cursor=forged, limit=1)["items"]


# --- Caching and headers --------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/workloads?limit=5",
        f"/api/v1/workloads/{L040}",
        "/api/v1/runs?workload=" + L040,
        "/api/v1/runs/sol-submission-16893",
        "/api/v1/implementations/geometric",
        "/api/v1/gpus/b200",
        "/api/v1/models/nafnet",
        "/api/v1/sources/sol-execbench",
        "/api/v1/search?q=rmsnorm",
        "/api/v1/compare?run=sol-submission-36270&run=sol-submission-36339",
        "/api/docs",
    ],
)
def test_every_api_response_has_an_etag_and_answers_304(client, path):
    first = client.get(path)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert first.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in first.headers["content-security-policy"]
    again = client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert client.get(path, headers={"If-None-Match": '"something-else"'}).status_code == 200


def test_different_content_has_a_different_etag(client):
    one = client.get("/api/v1/runs/sol-submission-16893").headers["etag"]
    two = client.get("/api/v1/runs/sol-submission-36270").headers["etag"]
    assert one != two


def test_workloads_filtered_by_gpu_carry_figures_on_it(client):
    on_b200 = get_json(client, "/api/v1/workloads", gpu="B200", collection="Quant", limit=200)["items"]
    everywhere = get_json(client, "/api/v1/workloads", collection="Quant", limit=200)["items"]
    # Every run of the bundled snapshot is on the B200: the same figures, each marked as the B200's.
    assert [w["fastest"] for w in on_b200] == [w["fastest"] for w in everywhere]
    assert {w["gpu"] for w in on_b200} == {"b200"} and all(w["runsOnGpu"] > 0 for w in on_b200)
    assert {(w["gpu"], w["runsOnGpu"]) for w in everywhere} == {(None, None)}
    on_h200 = get_json(client, "/api/v1/workloads", gpu="h200", collection="Quant", limit=200)["items"]
    assert [w["slug"] for w in on_h200] == [w["slug"] for w in everywhere]
    assert all(w["fastest"] is None and w["eligibleRuns"] == 0 and w["runsOnGpu"] == 0 for w in on_h200)
    assert get_json(client, "/api/v1/workloads", gpu="h200", measured="true")["items"] == []


def test_a_gpus_workloads_filter_by_collection_tag_and_text(client):
    quant = get_json(client, "/api/v1/gpus/b200/workloads", collection="Quant", limit=200)["items"]
    assert len(quant) == 33 and {w["collection"] for w in quant} == {"Quant"}
    found = get_json(client, "/api/v1/gpus/b200/workloads", q="conv2d residual")["items"]
    assert [w["workload"] for w in found] == ["l1-040-conv2d-residual-block"]
    assert found[0]["best"]["gpu"] == "b200"
