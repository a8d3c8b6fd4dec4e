"""The lists across sources: workloads by source and collection, GPU coverage per source,
search hits of every source, and the sources' own pages (PRODUCT.md §6).

The bundled SOL-ExecBench catalogue is joined by two small sources shaped like KernelBench
and Liger-Kernel (``tests/more_sources.py``), ingested through the real write path. Pages,
their JSON twins and the API are asked the same questions and must give the same answers.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.db.search_tables import SearchEntry
from kernelindex.db.tables import Workload
from kernelindex.db.tally_tables import WorkloadTally
from kernelindex.ingest.runner import run_ingest
from kernelindex.store import search as store_search
from kernelindex.store.workloads import (
    WorkloadFilters,
    collection_order,
    facet_values,
    gpu_coverage,
    workload_conditions,
)
from kernelindex.web.catalog import GPU_PAGE_SIZE
from tests.more_sources import KERNELBENCH, LIGER, ListedSource, MoreSource, Problem, ingest_more_sources
from tests.test_search import index_state

SOL_COLLECTIONS = {"L1": 94, "L2": 82, "Quant": 33, "FlashInfer-Bench": 26}
SOL_WORKLOADS = 235
ALL_WORKLOADS = SOL_WORKLOADS + len(KERNELBENCH.problems) + len(LIGER.problems)


@pytest.fixture
def sources_db(loaded_db):
    summaries = ingest_more_sources(loaded_db.sessions)
    assert summaries["kernelbench"].status == "succeeded", summaries["kernelbench"].errors
    assert summaries["liger-kernel"].status == "partial"  # one of its units cannot be mapped
    return loaded_db


@pytest.fixture
def sources_client(make_app, sources_db):
    with TestClient(make_app(sources_db)) as client:
        yield client


def get_json(client: TestClient, path: str) -> dict:
    response = client.get(path)
    assert response.status_code == 200, (path, response.text[:300])
    return response.json()


def html(client: TestClient, path: str) -> BeautifulSoup:
    response = client.get(path)
    assert response.status_code == 200, (path, response.text[:300])
    return BeautifulSoup(response.text, "html.parser")


def text(node) -> str:  # type: ignore[no-untyped-def]
    return " ".join(node.get_text(" ").split())


def twin_pages(client: TestClient, path: str, key: str) -> list[dict]:
    """Every row of a numbered list page's JSON twin, page after page."""
    rows, number = [], 1
    while True:
        data = get_json(client, f"{path}{'&' if '?' in path else '?'}page={number}")
        rows += data[key]
        if number >= data["pageCount"]:
            return rows
        number += 1


def api_pages(client: TestClient, path: str, limit: int = 7) -> list[dict]:
    """Every item of an API list, cursor after cursor."""
    items, cursor = [], None
    while True:
        query = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        data = get_json(client, f"{path}{'&' if '?' in path else '?'}{urlencode(query)}")
        items += data["items"]
        cursor = data["nextCursor"]
        if cursor is None:
            return items


def slugs_of(source, collection: str | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(p.slug for p in source.problems if collection in (None, p.collection))


# --- Workloads by source and collection -----------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"source": "kernelbench"}, slugs_of(KERNELBENCH)),
        ({"source": "KernelBench"}, slugs_of(KERNELBENCH)),  # a slug in any case
        ({"source": "kernelbench", "collection": "KernelBench level 1"}, slugs_of(KERNELBENCH, "KernelBench level 1")),
        ({"collection": "kernelbench level 2"}, slugs_of(KERNELBENCH, "KernelBench level 2")),
        ({"source": "liger-kernel"}, slugs_of(LIGER)),
        ({"source": "liger-kernel", "collection": "L1"}, []),  # another source's collection
        ({"source": "kernelbench", "q": "relu"}, ["kb-l1-019-relu", "kb-l2-012-gemm-multiply-leakyrelu"]),
        (
            {"source": "liger-kernel", "gpu": "h100-sxm", "measured": "true"},
            ["liger-cross-entropy-backward", "liger-rms-norm-forward"],
        ),
        (  # every workload, those measured on the GPU first
            {"source": "liger-kernel", "gpu": "h100-sxm"},
            ["liger-cross-entropy-backward", "liger-rms-norm-forward", "liger-swiglu-full"],
        ),
    ],
    ids=lambda value: urlencode(value) if isinstance(value, dict) else None,
)
def test_the_list_its_twin_the_api_and_home_agree_on_a_source_filter(sources_client, query, expected):
    page = twin_pages(sources_client, "/workloads.json?" + urlencode(query), "workloads")
    api = api_pages(sources_client, "/api/v1/workloads?" + urlencode(query))
    assert [w["slug"] for w in page] == [w["slug"] for w in api] == expected
    assert all(w["sourceSlug"] == query.get("source", w["sourceSlug"]).lower() for w in api)
    assert [w["eligibleRuns"] for w in page] == [w["eligibleRuns"] for w in api]
    shown = html(sources_client, "/workloads?" + urlencode(query))
    assert [text(slug) for slug in shown.select("table.data tbody span.slug")] == expected


def test_sol_execbench_filtered_by_source_is_the_whole_bundled_catalogue(sources_client):
    everything = get_json(sources_client, "/workloads.json")["total"]
    sol = get_json(sources_client, "/workloads.json?source=sol-execbench")
    assert (everything, sol["total"]) == (ALL_WORKLOADS, SOL_WORKLOADS)
    quant = api_pages(sources_client, "/api/v1/workloads?source=sol-execbench&collection=Quant", limit=50)
    assert len(quant) == SOL_COLLECTIONS["Quant"] and {w["sourceSlug"] for w in quant} == {"sol-execbench"}


def test_the_filter_form_lists_each_sources_collections_with_their_counts(sources_client):
    data = get_json(sources_client, "/workloads.json?source=kernelbench&collection=KernelBench+level+1")
    facets = [(s["value"], s["label"], s["count"], s["selected"]) for s in data["sources"]]
    assert facets == [
        ("kernelbench", "KernelBench", 6, True),
        ("liger-kernel", "Liger-Kernel", 3, False),
        ("sol-execbench", "NVIDIA SOL-ExecBench", SOL_WORKLOADS, False),
    ]
    by_source = {
        s["value"]: [(c["value"], c["count"], c["selected"]) for c in s["collections"]] for s in data["sources"]
    }
    assert by_source["kernelbench"] == [
        ("KernelBench level 1", 3, True),
        ("KernelBench level 2", 1, False),
        ("KernelBench level 3", 1, False),
        ("KernelBench level 4", 1, False),
    ]
    assert by_source["liger-kernel"] == [("Liger-Kernel", 3, False)]
    assert [(name, count) for name, count, _ in by_source["sol-execbench"]] == list(SOL_COLLECTIONS.items())
    form = html(sources_client, "/workloads?source=kernelbench&collection=KernelBench+level+1")
    groups = {
        g["label"]: [text(o) for o in g.select("option")] for g in form.select('select[name="collection"] optgroup')
    }
    assert groups["KernelBench"] == [
        "KernelBench level 1 · 3",
        "KernelBench level 2 · 1",
        "KernelBench level 3 · 1",
        "KernelBench level 4 · 1",
    ]
    assert text(form.select_one('select[name="source"] option[selected]')) == "KernelBench · 6"
    assert text(form.select_one('select[name="collection"] option[selected]')) == "KernelBench level 1 · 3"


def test_collections_sort_by_the_sources_own_order_then_numbers_by_value():
    names = ["level 10", "Liger-Kernel", "FlashInfer-Bench", "level 2", "L2", "L1", "Quant"]
    assert sorted(names, key=collection_order) == [
        "L1",
        "L2",
        "Quant",
        "FlashInfer-Bench",
        "level 2",
        "level 10",
        "Liger-Kernel",
    ]


@pytest.mark.parametrize(
    "path",
    [
        "/workloads?source=nope",
        "/workloads.json?source=nope",
        "/api/v1/workloads?source=nope",
        "/gpus/h100-sxm?source=nope",
        "/gpus/h100-sxm.json?source=nope",
        "/api/v1/gpus/h100-sxm/workloads?source=nope",
    ],
)
def test_an_unknown_source_is_a_400_that_names_the_sources(sources_client, path):
    response = sources_client.get(path)
    assert response.status_code == 400
    assert "No source has the slug" in response.text and "nope" in response.text
    assert "the sources are: kernelbench, liger-kernel, sol-execbench." in response.text


def test_home_groups_workloads_by_source_then_collection(sources_client):
    data = get_json(sources_client, "/index.json")
    assert data["workloadCount"] == ALL_WORKLOADS
    groups = [(g["name"], g["workloadCount"], [c["name"] for c in g["collections"]]) for g in data["catalogue"]]
    assert groups == [
        (
            "KernelBench",
            6,
            ["KernelBench level 1", "KernelBench level 2", "KernelBench level 3", "KernelBench level 4"],
        ),
        ("Liger-Kernel", 3, ["Liger-Kernel"]),
        ("NVIDIA SOL-ExecBench", SOL_WORKLOADS, list(SOL_COLLECTIONS)),
    ]
    kernelbench = data["catalogue"][0]
    assert kernelbench["attribution"] == KERNELBENCH.info.attribution
    assert kernelbench["eligibleRuns"] == KERNELBENCH.run_count
    assert kernelbench["workloadsUrl"] == "/workloads?source=kernelbench"
    level1 = kernelbench["collections"][0]
    assert level1["url"] == "/workloads?source=kernelbench&collection=KernelBench+level+1"
    assert [w["slug"] for w in level1["workloads"]] == slugs_of(KERNELBENCH, "KernelBench level 1")
    # The list answers the links home makes with the same workloads.
    listed = get_json(sources_client, level1["url"].replace("/workloads?", "/workloads.json?"))
    assert [w["slug"] for w in listed["workloads"]] == [w["slug"] for w in level1["workloads"]]
    page = html(sources_client, "/")
    assert [text(h) for h in page.select("section.source-group > h2")] == [
        f"KernelBench 6 workloads · {KERNELBENCH.run_count} ranked runs",
        f"Liger-Kernel 3 workloads · {LIGER.run_count} ranked runs",
        f"NVIDIA SOL-ExecBench {SOL_WORKLOADS} workloads · 699 ranked runs",
    ]
    assert LIGER.info.attribution in text(page.select_one("#source-liger-kernel .attribution"))
    assert [text(h) for h in page.select("#source-kernelbench section.collection h3")] == [
        "KernelBench level 1 3 workloads",
        "KernelBench level 2 1 workload",
        "KernelBench level 3 1 workload",
        "KernelBench level 4 1 workload",
    ]


# --- GPUs ---------------------------------------------------------------------------------


def test_gpus_show_runs_and_workloads_per_source_measured_first(sources_client):
    page = get_json(sources_client, "/gpus.json")
    api = {g["slug"]: g for g in api_pages(sources_client, "/api/v1/gpus", limit=5)}
    assert page["workloadCount"] == ALL_WORKLOADS
    runs = [g["runs"] for g in page["gpus"]]
    assert runs == sorted(runs, reverse=True) and runs[-1] == 0  # measured first, tracked ones after
    h100 = api["h100-sxm"]
    coverage = {c["source"]: (c["workloads"], c["gaps"], c["sourceWorkloads"]) for c in h100["bySource"]}
    assert coverage == {
        "kernelbench": (4, 2, 6),
        "liger-kernel": (2, 1, 3),
        "sol-execbench": (0, SOL_WORKLOADS, SOL_WORKLOADS),
    }
    # Runs are credited to whoever published them; here each source measured its own workloads.
    producers = {c["source"]: c["runs"] for c in h100["byProducer"]}
    assert producers == {"kernelbench": KERNELBENCH.runs_on("h100-sxm"), "liger-kernel": LIGER.runs_on("h100-sxm")}
    assert (h100["runs"], h100["workloads"], h100["gaps"]) == (12, 6, ALL_WORKLOADS - 6)
    assert {c["source"]: c["runs"] for c in api["b200"]["byProducer"]}["sol-execbench"] == 708
    assert (api["h200"]["runs"], api["h200"]["gaps"]) == (0, ALL_WORKLOADS)  # tracked, measured by nobody
    on_page = {g["slug"]: g for g in page["gpus"]}
    shown = [(c["name"], c["workloads"], c["sourceWorkloads"]) for c in on_page["h100-sxm"]["bySource"]]
    assert shown == [("KernelBench", 4, 6), ("Liger-Kernel", 2, 3)]  # the sources measured there
    assert [(c["name"], c["runs"]) for c in on_page["h100-sxm"]["byProducer"]] == [
        ("KernelBench", 8),
        ("Liger-Kernel", 4),
    ]
    assert on_page["h100-sxm"]["share"] == "2%" and on_page["t4"]["bySource"][0]["share"] == "33%"
    table = html(sources_client, "/gpus")
    row = next(tr for tr in table.select("table.gpu-coverage tbody tr") if "H100 SXM" in text(tr))
    assert "KernelBench 8 runs" in text(row) and "KernelBench 4 of 6 (67%)" in text(row)
    assert "Liger-Kernel 4 runs" in text(row) and "Liger-Kernel 2 of 3 (67%)" in text(row)
    tracked = [text(tr) for tr in table.select("#h-tracked ~ div tr.unmeasured")]
    assert any(line.startswith("NVIDIA H200 not measured") for line in tracked)
    assert not any("H100 SXM" in line for line in tracked)


def test_a_gpu_page_pages_through_its_gaps_like_the_api(sources_client):
    gaps = twin_pages(sources_client, "/gpus/h100-sxm.json?measured=false", "workloads")
    served = api_pages(sources_client, "/api/v1/gpus/h100-sxm/workloads?measured=false", limit=37)
    assert [w["slug"] for w in gaps] == [w["workload"] for w in served]
    assert len(gaps) == ALL_WORKLOADS - 6 and len({w["slug"] for w in gaps}) == len(gaps)
    assert [w["slug"] for w in gaps] == sorted(w["slug"] for w in gaps)
    first = get_json(sources_client, "/gpus/h100-sxm.json?measured=false")
    assert (first["page"], first["pageCount"], len(first["workloads"])) == (
        1,
        -(-len(gaps) // GPU_PAGE_SIZE),
        GPU_PAGE_SIZE,
    )
    assert first["nextUrl"] == "/gpus/h100-sxm?measured=false&page=2"
    assert sources_client.get(f"/gpus/h100-sxm?measured=false&page={first['pageCount'] + 1}").status_code == 400
    assert sources_client.get("/gpus/h100-sxm?measured=maybe").status_code == 400
    measured = twin_pages(sources_client, "/gpus/h100-sxm.json", "workloads")  # opens on what was measured
    both = sorted([w["slug"] for w in measured] + [w["slug"] for w in gaps])
    assert both == [w["workload"] for w in api_pages(sources_client, "/api/v1/gpus/h100-sxm/workloads", limit=100)]


def test_a_gpu_page_filters_by_source(sources_client):
    data = get_json(sources_client, "/gpus/h100-sxm.json?source=kernelbench")
    assert (data["source"], data["measured"]) == ("kernelbench", True)
    assert [w["slug"] for w in data["workloads"]] == KERNELBENCH.measured_on("h100-sxm")
    assert [(t["label"], t["count"]) for t in data["tabs"]] == [("Measured", 4), ("Not measured", 2)]
    relu = next(w for w in data["workloads"] if w["slug"] == "kb-l1-019-relu")
    assert relu["runs"] == 2 and relu["sourceName"] == "KernelBench"
    assert relu["best"]["run"] == "kb-l1-019-relu-kernelbench-pytorch-eager-h100-sxm"  # the faster of the two
    assert (relu["best"]["rank"], relu["best"]["groupSize"]) == (1, 2)  # both implementations share a group
    gaps = get_json(sources_client, "/gpus/h100-sxm.json?source=liger-kernel&measured=false")
    assert [w["slug"] for w in gaps["workloads"]] == ["liger-swiglu-full"]
    api = api_pages(sources_client, "/api/v1/gpus/h100-sxm/workloads?source=liger-kernel&measured=false")
    assert [w["workload"] for w in api] == ["liger-swiglu-full"] and api[0]["best"] is None
    nobody = get_json(sources_client, "/gpus/h100-sxm.json?source=sol-execbench")
    assert (nobody["measured"], nobody["total"]) == (False, SOL_WORKLOADS)  # opens on the gaps
    page = html(sources_client, "/gpus/h100-sxm?source=kernelbench")
    assert text(page.select_one('.collection-nav a[aria-current="page"]')) == "KernelBench"
    assert [text(a) for a in page.select("nav.groups a")] == ["Measured 4", "Not measured 2"]
    assert len(page.select("#h-workloads ~ div table tbody tr")) == 4


# --- Search ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "kind", "slug", "source"),
    [
        ("relu", "workload", "kb-l1-019-relu", "KernelBench"),
        (
            "gpt causal",
            "workload",
            "kb-l3-043-mingpt-causal-attention",
            "KernelBench",
        ),  # parts of 43_MinGPTCausalAttention
        ("kernelbench level 4", "workload", "kb-l4-001-gpt2-model", "KernelBench"),  # its collection
        ("rms norm forward", "workload", "liger-rms-norm-forward", "Liger-Kernel"),
        ("autotune", "implementation", "torch-compile", "KernelBench"),  # a word of its revision
        ("liger kernel huggingface", "implementation", "liger-kernel-huggingface", "Liger-Kernel"),
        ("geometric", "implementation", "geometric", "NVIDIA SOL-ExecBench"),
    ],
)
def test_search_finds_every_sources_problems_and_implementations_with_their_source(
    sources_client, query, kind, slug, source
):
    api = get_json(sources_client, "/api/v1/search?" + urlencode({"q": query}))
    hit = next((h for h in api["hits"] if (h["kind"], h["slug"]) == (kind, slug)), None)
    assert hit is not None, [(h["kind"], h["slug"]) for h in api["hits"]]
    assert [s["name"] for s in hit["sources"]] == [source]
    page = html(sources_client, "/search?" + urlencode({"q": query}))
    row = next(tr for tr in page.select("tr[data-kind]") if tr.select_one("a.hit")["href"].endswith(f"/{slug}"))
    assert text(row.select_one("td.hit-sources")) == source


def test_search_names_the_sources_of_a_model_and_none_for_a_gpu(sources_client):
    hits = get_json(sources_client, "/api/v1/search?q=nafnet&kind=model")["hits"]
    assert [(h["slug"], [s["slug"] for s in h["sources"]]) for h in hits] == [("nafnet", ["sol-execbench"])]
    gpu = get_json(sources_client, "/api/v1/search?q=l40s&kind=gpu")["hits"]
    assert [(h["slug"], h["sources"]) for h in gpu] == [("l40s", [])]


def test_the_index_the_ingests_wrote_is_what_a_rebuild_writes(sources_db):
    before = index_state(sources_db)
    with sources_db.sessions.begin() as session:
        store_search.rebuild_index(session)
    assert index_state(sources_db) == before


def stored_entry(db, kind: str, slug: str):  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        return session.execute(
            select(SearchEntry.subtitle, SearchEntry.fingerprint).where(
                SearchEntry.kind == kind, SearchEntry.slug == slug
            )
        ).one()


def test_a_new_revision_of_a_project_leaves_its_search_terms_alone(sources_db):
    """Revisions add their words, not their numbers: the entry is not rewritten for each one."""
    before = stored_entry(sources_db, "implementation", "geometric")
    lab = MoreSource(
        info=replace(KERNELBENCH.info, slug="geometric-lab", name="Geometric lab"),
        harness="lab timing",
        implementations=(("sol-geometric-submission-99999", "Geometric", "submission-99999"),),
        problems=(Problem("lab-001-scan", "Scan", "scan", "Lab", (), ("h100-sxm",)),),
    )
    assert run_ingest(ListedSource(lab), sources_db.sessions, origin="lab").status == "succeeded"
    after = stored_entry(sources_db, "implementation", "geometric")
    assert (before.subtitle, after.subtitle) == ("91 revisions", "92 revisions")
    assert after.fingerprint == before.fingerprint
    hits = get_hits(sources_db, "geometric submission")
    assert ("implementation", "geometric", ("Geometric lab", "NVIDIA SOL-ExecBench")) in hits
    assert get_hits(sources_db, "99999") == []  # numbers of revisions are not searched


def test_a_changed_implementation_is_read_again_from_every_revision(sources_db):
    eager, compiled = KERNELBENCH.implementations
    assert ("implementation", "torch-compile", ("KernelBench",)) in get_hits(sources_db, "inductor")
    changed = replace(KERNELBENCH, implementations=(eager, (compiled[0], compiled[1], "cudagraphs, torch 2.5.0")))
    assert run_ingest(ListedSource(changed), sources_db.sessions, origin="again").status == "succeeded"
    assert ("implementation", "torch-compile", ("KernelBench",)) in get_hits(sources_db, "cudagraphs")
    assert get_hits(sources_db, "inductor") == []  # the word of its old revision is gone
    entries, terms, _ = index_state(sources_db)
    with sources_db.sessions.begin() as session:
        store_search.rebuild_index(session)
    # The same entries and terms; only the vocabulary, which keeps words no longer used, may shrink.
    assert index_state(sources_db)[:2] == (entries, terms)


def get_hits(db, query: str) -> list[tuple[str, str, tuple[str, ...]]]:  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        results = store_search.search(session, query)
    return [(hit.kind, hit.slug, tuple(source.name for source in hit.sources)) for hit in results.hits]


# --- Sources --------------------------------------------------------------------------------


def test_the_sources_page_lists_every_source_with_its_figures(sources_client):
    page = get_json(sources_client, "/sources.json")
    api = {s["slug"]: s for s in api_pages(sources_client, "/api/v1/sources", limit=2)}
    assert [s["name"] for s in page["sources"]] == ["KernelBench", "Liger-Kernel", "NVIDIA SOL-ExecBench"]
    for shown in page["sources"]:
        served = api[shown["slug"]]
        assert (shown["workloadCount"], shown["runCount"], shown["gpuCount"], shown["implementationCount"]) == (
            served["workloads"],
            served["runs"],
            served["gpus"],
            served["implementations"],
        )
        assert (shown["licence"], shown["attribution"], shown["lastIngest"]) == (
            served["licence"],
            served["attribution"],
            served["lastIngest"],
        )
    kernelbench = api["kernelbench"]
    assert (kernelbench["workloads"], kernelbench["runs"], kernelbench["gpus"], kernelbench["implementations"]) == (
        len(KERNELBENCH.problems),
        KERNELBENCH.run_count,
        len(KERNELBENCH.gpu_slugs),
        2,
    )
    assert (api["sol-execbench"]["runs"], api["sol-execbench"]["gpus"], api["sol-execbench"]["implementations"]) == (
        708,
        1,
        29,
    )
    assert [api[slug]["lastIngest"]["status"] for slug in ("kernelbench", "liger-kernel")] == ["succeeded", "partial"]
    assert api["liger-kernel"]["lastIngest"]["origin"] == "test snapshot liger-kernel"
    rows = html(sources_client, "/sources").select("table.sources tbody tr")
    assert [text(row.select_one("td a")) for row in rows] == ["KernelBench", "Liger-Kernel", "NVIDIA SOL-ExecBench"]
    assert LIGER.info.licence in text(rows[1]) and LIGER.info.attribution in text(rows[1])


def test_a_source_page_shows_its_counts_licence_attribution_and_last_report(sources_client, sources_db):
    ingest_more_sources(sources_db.sessions)  # a second ingest: nothing changes, a second report
    page = get_json(sources_client, "/sources/liger-kernel.json")
    api = get_json(sources_client, "/api/v1/sources/liger-kernel")
    assert (
        (page["workloadCount"], page["runCount"], page["gpuCount"], page["implementationCount"])
        == (
            api["workloads"],
            api["runs"],
            api["gpus"],
            api["implementations"],
        )
        == (3, LIGER.run_count, 2, 2)
    )
    assert (page["licence"], page["attribution"], page["url"]) == (
        LIGER.info.licence,
        LIGER.info.attribution,
        LIGER.info.url,
    )
    assert page["reports"] == api["reports"] and page["reportCount"] == api["reportCount"] == 2
    assert [c["name"] for c in page["collections"]] == [c["name"] for c in api["collections"]] == ["Liger-Kernel"]
    last = page["lastReport"]
    assert (last["id"], last["status"]) == (api["reports"][0]["id"], "partial")
    assert last["errors"] == ["liger-geglu-full: the upstream rows name no GPU"]
    assert last["warnings"] == [LIGER.warnings["liger-rms-norm-forward"]]
    assert last["drift"] == ["extra_benchmark_config_str.dtype"]
    outcomes = {row["table"]: (row["added"], row["updated"], row["unchanged"]) for row in last["outcomes"]}
    assert outcomes["workload"] == (0, 0, 3) and outcomes["run"] == (0, 0, LIGER.run_count)  # the second ingest
    others = {(row["group"], row["name"]): row["count"] for row in last["otherCounts"]}
    assert others[("skipped", "memory_metric")] == 3 and others[("units", "failed")] == 1
    first = api["reports"][1]
    assert first["counts"]["added"]["workload"] == 3
    shown = html(sources_client, "/sources/liger-kernel")
    facts = text(shown.select_one("dl.facts"))
    assert LIGER.info.licence in facts and LIGER.info.attribution in facts and "partial" in facts
    assert [text(li) for li in shown.select("ul.report-errors li")] == last["errors"]
    assert [text(li) for li in shown.select("ul.report-warnings li")] == last["warnings"]
    assert len(shown.select("table.ingests tbody tr")) == 2


def test_a_source_page_lists_its_collections_with_links_to_them(sources_client):
    assert sources_client.get("/sources/nosource").status_code == 404
    data = get_json(sources_client, "/sources/kernelbench.json")
    assert [(c["name"], c["workloads"]) for c in data["collections"]] == [
        ("KernelBench level 1", 3),
        ("KernelBench level 2", 1),
        ("KernelBench level 3", 1),
        ("KernelBench level 4", 1),
    ]
    assert data["workloadsUrl"] == "/workloads?source=kernelbench"


@pytest.mark.parametrize("path", ["/workloads", "/gpus/b200", "/records", "/search?q=norm", "/gpus"])
def test_pages_listing_figures_credit_every_source_in_their_footer(sources_client, path):
    credits = html(sources_client, path).select("footer ul.credits li a")
    by_source = {link["href"]: text(link) for link in credits}
    assert by_source["/sources/sol-execbench"].startswith("Data: NVIDIA SOL-ExecBench")
    assert by_source["/sources/kernelbench"] == "Baseline timings from KernelBench (Ouyang et al.), MIT licence."
    assert by_source["/sources/liger-kernel"] == "Benchmark data from Liger-Kernel (LinkedIn), BSD 2-Clause licence."


def test_the_tag_filter_offers_every_tag_of_every_workload(sources_db):
    """Read from an index (a step from one distinct list to the next on PostgreSQL), the tags
    are those of the workloads' rows, each once."""
    with sources_db.sessions() as session:
        every = {tag for tags in session.scalars(select(Workload.tags)) for tag in tags}
        offered = facet_values(session)["tag"]
    assert len(every) > 10 and offered == sorted(every)


@pytest.mark.parametrize(
    "named",
    [
        {},
        {"source": "liger-kernel"},
        {"collection": "kernelbench level 1"},
        {"source": "kernelbench", "collection": "KernelBench level 2"},
        {"source": "sol-execbench", "collection": "KernelBench level 2"},
        {"q": "relu"},
    ],
    ids=lambda value: urlencode(value) or "every workload",
)
@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "l40s"])
def test_a_gpus_coverage_counts_the_workloads_measured_on_it(sources_db, gpu, named):
    """Counted from the collection tallies where the filters allow, from the workloads otherwise:
    both are the workloads' own count."""
    filters = WorkloadFilters(gpu=gpu, **named)
    with sources_db.sessions() as session:
        matching = set(session.scalars(select(Workload.id).where(*workload_conditions(session, filters))))
        on_gpu = set(session.scalars(select(WorkloadTally.workload_id).where(WorkloadTally.gpu_slug == gpu)))
        coverage = gpu_coverage(session, filters)
    assert (coverage.measured, coverage.not_measured) == (len(matching & on_gpu), len(matching - on_gpu))
