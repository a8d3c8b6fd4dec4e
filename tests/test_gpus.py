"""GPUs: the GPU table (every reported device name maps to one tracked GPU, slugs are stable),
and the per-GPU answers over a catalogue measured on several GPUs: lists filtered by GPU show
each workload's figures on that GPU, and each GPU's page lists the fastest per workload on it."""

from __future__ import annotations

import html
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from kernelindex.gpus import DEVICE_NAMES, TRACKED_GPUS, gpu_for_device_name, gpu_slug
from kernelindex.store.revisions import RevisionFacts, current_revision, revision_titles, what_changed
from kernelindex.store.search import SearchHit, current_revisions_first
from tests.multi_gpu_catalogue import NEW_WORKLOAD, OLD_WORKLOAD, SWEEP_WORKLOAD, write_catalogue
from tests.pages import page, text


def test_every_device_name_maps_to_a_tracked_gpu() -> None:
    assert set(DEVICE_NAMES.values()) <= set(TRACKED_GPUS)


def test_tracked_slugs_and_products_are_unique() -> None:
    assert len({gpu.slug for gpu in TRACKED_GPUS}) == len(TRACKED_GPUS)
    assert len({gpu.product.lower() for gpu in TRACKED_GPUS}) == len(TRACKED_GPUS)


def test_a_tracked_product_keeps_its_own_slug() -> None:
    assert gpu_slug("amd", "AMD Instinct MI300X") == "mi300x"
    assert gpu_slug("nvidia", "NVIDIA H100 SXM") == "h100-sxm"
    # A rerun records the name the driver reports: the same GPU, not one of its own.
    assert gpu_slug("nvidia", "NVIDIA H100 80GB HBM3") == "h100-sxm"


def test_an_untracked_product_gets_a_derived_slug() -> None:
    assert gpu_slug("nvidia", "NVIDIA GH200 480GB") == "gh200-480gb"


def test_device_names_as_torch_reports_them() -> None:
    assert gpu_for_device_name("NVIDIA H100 80GB HBM3").slug == "h100-sxm"  # type: ignore[union-attr]
    assert gpu_for_device_name(" Tesla T4 ").slug == "t4"  # type: ignore[union-attr]
    assert gpu_for_device_name("NVIDIA H100 NVL") is None


# --- Figures on one GPU ----------------------------------------------------------------


@pytest.fixture
def site(make_app, db) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    write_catalogue(db.sessions)
    with TestClient(make_app(db)) as client:
        yield client


def test_workloads_filtered_by_gpu_show_each_ones_best_on_it_measured_first(site):
    data = site.get("/workloads.json?gpu=l40s").json()
    # The L40S has one workload measured: its best is the eager run there, never the failed
    # 1.00 µs run nor the B200's 15 µs; the other current one is kept, after it, as not measured.
    # The problem's older revision, measured nowhere there, is superseded: no gap, not listed.
    assert [(w["slug"], w["runsOnGpu"], w["bestRun"], w["bestLatencyNs"]) for w in data["workloads"]] == [
        (NEW_WORKLOAD, 2, "p-eager-l40s", 90_000),
        (SWEEP_WORKLOAD, 0, None, None),
    ]
    assert data["workloads"][0]["eligibleRuns"] == 1
    assert data["gpu"]["measured"] == 1 and data["gpu"]["matching"] == 2
    unfiltered = {w["slug"]: w for w in site.get("/workloads.json").json()["workloads"]}
    assert unfiltered[NEW_WORKLOAD]["bestRun"] == "p-compile-b200"  # without a GPU, the fastest anywhere


def test_workloads_filtered_by_gpu_render_the_figures_and_mark_the_unmeasured(site):
    listing = page(site, "/workloads?gpu=L40S")  # a slug in any case
    assert listing.select_one("select[name=gpu] option[selected]")["value"] == "l40s"
    rows = listing.select("table.data tbody tr")
    links = [row.select_one("td a")["href"] for row in rows]
    # The measured one opens on the group of its best on the L40S; the other on its default group.
    assert links[0].startswith(f"/workloads/{NEW_WORKLOAD}?group=") and links[1] == f"/workloads/{SWEEP_WORKLOAD}"
    first = rows[0]
    assert first.select_one("a[href='/runs/p-eager-l40s']") is not None
    assert "90.00 µs" in text(first) and "PyTorch" in text(first)
    assert [row.get("class") for row in rows[1:]] == [["unmeasured"]]
    assert all("not measured on it" in text(row) for row in rows[1:])
    assert "1 of 2 matching workloads measured on it" in text(listing.select_one(".gpu-filter"))
    assert listing.select_one(".gpu-filter a[href='/gpus/l40s']") is not None


@pytest.mark.parametrize(
    ("measured", "slugs"),
    [("true", [NEW_WORKLOAD, SWEEP_WORKLOAD]), ("false", [])],
)
def test_workloads_filtered_by_gpu_split_into_measured_or_not(site, measured, slugs):
    data = site.get(f"/workloads.json?gpu=h100-sxm&measured={measured}").json()
    assert [w["slug"] for w in data["workloads"]] == slugs
    listing = page(site, f"/workloads?gpu=h100-sxm&measured={measured}")
    chosen = listing.select_one(".gpu-filter a[aria-current=page]")
    assert text(chosen) == ("Measured on it 2" if measured == "true" else "Not measured on it 0")


def test_the_gpu_filter_sorts_by_the_figures_on_that_gpu(site):
    data = site.get("/workloads.json?gpu=h100-sxm&sort=-runs").json()
    # On the H100: the problem has 3 eligible runs there, the sweep 3; the old revision, superseded
    # and not measured there, is left out.
    assert [(w["slug"], w["eligibleRuns"]) for w in data["workloads"]] == [
        (NEW_WORKLOAD, 3),
        (SWEEP_WORKLOAD, 3),
    ]


def test_a_tracked_gpu_nobody_measured_on_lists_every_workload_as_not_measured(site):
    data = site.get("/workloads.json?gpu=h200").json()
    assert data["total"] == 2 and all(w["runsOnGpu"] == 0 and w["bestRun"] is None for w in data["workloads"])
    assert site.get("/workloads.json?gpu=h200&measured=true").json()["total"] == 0


@pytest.mark.parametrize("path", ["/workloads?gpu=h2000", "/workloads.json?gpu=h2000", "/api/v1/workloads?gpu=h2000"])
def test_an_unknown_gpu_is_refused_with_suggestions(site, path):
    response = site.get(path)
    assert response.status_code == 400
    assert "No GPU has the slug 'h2000'. Did you mean h200" in html.unescape(response.text)


@pytest.mark.parametrize("path", ["/workloads?measured=true", "/api/v1/workloads?measured=false"])
def test_measured_without_a_gpu_is_refused(site, path):
    response = site.get(path)
    assert response.status_code == 400
    assert "only with gpu=" in response.text


def test_the_api_gives_the_same_figures_on_a_gpu_as_the_page(site):
    api = site.get("/api/v1/workloads?gpu=l40s").json()
    page_twin = site.get("/workloads.json?gpu=l40s").json()
    assert [(w["slug"], w["gpu"], w["runsOnGpu"]) for w in api["items"]] == [
        (w["slug"], "l40s", w["runsOnGpu"]) for w in page_twin["workloads"]
    ]
    fastest = api["items"][0]["fastest"]
    assert (fastest["run"], fastest["gpu"], fastest["latencyNs"]) == ("p-eager-l40s", "l40s", 90_000)
    assert api["items"][1]["fastest"] is None
    # Paged by cursor, the measured-first order holds across pages.
    first = site.get("/api/v1/workloads?gpu=l40s&limit=1").json()
    second = site.get(f"/api/v1/workloads?gpu=l40s&limit=1&cursor={first['nextCursor']}").json()
    assert [w["slug"] for w in first["items"] + second["items"]] == [NEW_WORKLOAD, SWEEP_WORKLOAD]


def test_home_filtered_by_gpu_shows_each_workloads_best_on_it(site):
    data = site.get("/index.json?gpu=l40s").json()
    assert data["gpu"]["slug"] == "l40s" and data["gpu"]["url"] == "/gpus/l40s"
    rows = {w["slug"]: w for s in data["catalogue"] for c in s["collections"] for w in c["workloads"]}
    assert rows[NEW_WORKLOAD]["best"]["run"] == "p-eager-l40s" and rows[NEW_WORKLOAD]["runsOnGpu"] == 2
    assert OLD_WORKLOAD not in rows  # the current revision is shown in its place
    assert data["eligibleRunCount"] == site.get("/index.json").json()["eligibleRunCount"]  # the catalogue's
    home = page(site, "/?gpu=l40s")
    assert home.select_one("form.gpu-filter select[name=gpu] option[selected]")["value"] == "l40s"
    # The one workload not measured there was the older revision, which gives way to the current one.
    assert home.select("tr.unmeasured") == []
    assert home.select_one(".source-group a[href='/runs/p-eager-l40s']") is not None
    assert home.select_one(".source-group a[href='/runs/p-compile-b200']") is None  # not the B200's best
    # A collection with no workload measured on the GPU says so in a line instead of a table.
    sweeps = home.select_one("#source-sweeps section.collection")
    assert sweeps.select_one("table") is None
    assert "Its one workload has no run on it yet" in text(sweeps)
    assert site.get("/?gpu=nope").status_code == 400


# --- A GPU's page --------------------------------------------------------------------


def test_a_gpu_page_states_its_coverage_against_every_workload(site):
    gpu = page(site, "/gpus/h100-sxm")
    assert text(gpu.select_one(".coverage-line")).startswith("2 of 2 current workloads measured on it")
    assert gpu.select_one(".coverage-line a[href='/workloads?gpu=h100-sxm']") is not None
    best = [a["href"] for a in gpu.select("table.data tbody a") if a["href"].startswith("/runs/")]
    assert best == ["/runs/p-compile-h100-a", "/runs/s-liger"]


@pytest.mark.parametrize(
    ("query", "measured", "not_measured", "shown"),
    [
        ("q=cross", 1, 0, [SWEEP_WORKLOAD]),
        ("q=relu", 1, 0, [NEW_WORKLOAD]),
        ("q=relu&measured=false", 1, 0, []),  # the old revision is superseded: no gap
        ("source=sweeps", 1, 0, [SWEEP_WORKLOAD]),
        ("q=nothing-matches", 0, 0, []),
    ],
)
def test_a_gpu_page_filters_its_workloads_and_counts_them(site, query, measured, not_measured, shown):
    data = site.get(f"/gpus/h100-sxm.json?{query}").json()
    assert [tab["count"] for tab in data["tabs"]] == [measured, not_measured]
    assert data["matching"] == measured + not_measured
    assert [w["slug"] for w in data["workloads"]] == shown
    api = site.get(f"/api/v1/gpus/h100-sxm/workloads?{query}").json()
    expected = [w["workload"] for w in api["items"] if "measured=" in query or w["runs"]]
    assert expected == shown


def test_a_gpu_page_keeps_its_filters_in_its_links_and_form(site):
    gpu = page(site, "/gpus/h100-sxm?q=relu&measured=false")
    form = gpu.select_one("main form[aria-label='Filter the workloads']")
    assert form.select_one("input[name=q]")["value"] == "relu"
    assert form.select_one("input[name=measured]")["value"] == "false"
    tabs = [a["href"] for a in gpu.select("nav.groups a")]
    assert tabs == ["/gpus/h100-sxm?q=relu&measured=true", "/gpus/h100-sxm?q=relu&measured=false"]
    assert "1 of 1 matching workload measured on it" in text(gpu)


def test_an_unknown_gpu_page_says_where_the_gpus_are(site):
    response = site.get("/gpus/h2000")
    assert response.status_code == 404 and "/gpus" in response.text


def test_every_gpu_mention_links_its_page(site):
    chips = page(site, "/gpus").select("nav.gpu-chips a")
    hrefs = [a["href"] for a in chips]
    assert hrefs[:3] == ["/gpus/h100-sxm", "/gpus/b200", "/gpus/l40s"]  # measured, most runs first
    assert set(hrefs) >= {f"/gpus/{gpu.slug}" for gpu in TRACKED_GPUS}
    workload = page(site, f"/workloads/{OLD_WORKLOAD}")  # measured on the B200 alone
    missing = [a["href"] for a in workload.select("p.not-measured a[href^='/gpus/']")]
    assert missing == [f"/gpus/{gpu.slug}" for gpu in TRACKED_GPUS if gpu.slug != "b200"]


def test_search_filtered_by_gpu_shows_each_workloads_best_on_it(site):
    data = site.get("/search.json?q=relu&gpu=l40s").json()
    assert data["gpu"]["product"] == "NVIDIA L40S"
    hits = {h["slug"]: h for g in data["groups"] if g["kind"] == "workload" for h in g["hits"]}
    assert hits[NEW_WORKLOAD]["bestOnGpu"]["run"] == "p-eager-l40s" and hits[NEW_WORKLOAD]["runsOnGpu"] == 2
    assert hits[OLD_WORKLOAD]["bestOnGpu"] is None and hits[OLD_WORKLOAD]["runsOnGpu"] == 0
    results = page(site, "/search?q=relu&gpu=l40s")
    assert results.select_one("#search-gpu option[selected]")["value"] == "l40s"
    rows = {row.select_one("span.slug").get_text(): row for row in results.select("tr[data-kind=workload]")}
    assert rows[NEW_WORKLOAD].select_one("a[href='/runs/p-eager-l40s']") is not None
    assert "not measured on it" in text(rows[OLD_WORKLOAD])
    unfiltered = site.get("/search.json?q=relu").json()
    assert all(h["bestOnGpu"] is None and h["runsOnGpu"] is None for g in unfiltered["groups"] for h in g["hits"])
    assert site.get("/search?q=relu&gpu=h2000").status_code == 400


def test_the_search_api_gives_the_pages_figures_on_a_gpu(site):
    page_hits = {
        h["slug"]: h
        for g in site.get("/search.json?q=relu&gpu=l40s").json()["groups"]
        if g["kind"] == "workload"
        for h in g["hits"]
    }
    api = site.get("/api/v1/search?q=relu&gpu=l40s").json()
    api_hits = {h["slug"]: h for h in api["hits"] if h["kind"] == "workload"}
    assert set(api_hits) == set(page_hits) >= {NEW_WORKLOAD, OLD_WORKLOAD}
    for slug, hit in api_hits.items():
        figures = hit["onGpu"]
        assert figures["gpu"] == "l40s" and figures["runs"] == page_hits[slug]["runsOnGpu"]
        best = page_hits[slug]["bestOnGpu"]
        assert (figures["fastest"] or {}).get("run") == (best["run"] if best else None)
    assert api_hits[NEW_WORKLOAD]["onGpu"]["fastest"]["run"] == "p-eager-l40s"
    assert api_hits[OLD_WORKLOAD]["onGpu"] == {"gpu": "l40s", "runs": 0, "fastest": None}
    assert all(h["onGpu"] is None for h in site.get("/api/v1/search?q=relu").json()["hits"])
    refused = site.get("/api/v1/search?q=relu&gpu=h2000")
    assert refused.status_code == 400 and "h2000" in refused.json()["detail"]


def test_a_gpu_named_in_the_search_text_shows_the_figures_on_it(site):
    """The query "relu l40s": no workload's text names a GPU, so the L40S becomes the GPU filter and
    "relu" is searched; the page says so and offers the words as typed."""
    typed = site.get("/search.json?q=relu+L40S").json()
    chosen = site.get("/search.json?q=relu&gpu=l40s").json()
    assert typed["query"] == "relu" and typed["gpu"]["slug"] == "l40s"
    assert typed["groups"] == chosen["groups"]
    assert typed["gpu"]["readFrom"] == "L40S" and chosen["gpu"]["readFrom"] is None
    results = page(site, "/search?q=relu+L40S")
    assert results.select_one("#search-gpu option[selected]")["value"] == "l40s"
    assert results.select_one("input[name=q]")["value"] == "relu"
    note = results.select_one("p.gpu-filter")
    assert "“L40S” names a GPU" in text(note)
    as_words = note.select_one("a[href*='read_gpu=0']")["href"]
    words = site.get(as_words.replace("/search?", "/search.json?")).json()
    assert words["gpu"] is None and words["query"] == "relu L40S"
    api = site.get("/api/v1/search?q=relu+l40s").json()
    assert (api["query"], api["gpu"]) == ("relu", "l40s")
    assert {h["slug"]: h["onGpu"] for h in api["hits"]} == {
        h["slug"]: h["onGpu"] for h in site.get("/api/v1/search?q=relu&gpu=l40s").json()["hits"]
    }
    assert site.get("/api/v1/search?q=relu+l40s&read_gpu=false").json()["gpu"] is None
    # A query that is only a GPU's name finds the GPU; an explicit filter wins over the text.
    only = site.get("/search.json?q=l40s").json()
    assert only["gpu"] is None and [g["kind"] for g in only["groups"]] == ["gpu"]
    both = site.get("/search.json?q=relu+h100+sxm&gpu=l40s").json()
    assert both["gpu"]["slug"] == "l40s" and both["query"] == "relu h100 sxm"


def test_the_longest_gpu_name_in_a_query_wins(site):
    data = site.get("/search.json?q=relu+h100+sxm").json()
    assert (data["query"], data["gpu"]["slug"], data["gpu"]["readFrom"]) == ("relu", "h100-sxm", "h100 sxm")


def test_a_gpu_pages_pages_keep_its_filters(client):
    first = client.get("/gpus/b200.json?source=sol-execbench&collection=L1").json()
    assert (first["total"], first["pageCount"], first["matching"]) == (94, 2, 94)
    assert first["nextUrl"] == "/gpus/b200?source=sol-execbench&collection=L1&measured=true&page=2"
    second = client.get(first["nextUrl"].replace("/gpus/b200?", "/gpus/b200.json?")).json()
    assert len(first["workloads"]) + len(second["workloads"]) == 94
    assert not {w["slug"] for w in first["workloads"]} & {w["slug"] for w in second["workloads"]}
    assert second["previousUrl"] == "/gpus/b200?source=sol-execbench&collection=L1&measured=true"
    last = client.get("/gpus/h200.json?measured=false&page=5").json()  # 235 gaps, 50 a page
    assert (last["pageCount"], len(last["workloads"]), last["nextUrl"]) == (5, 35, None)


# --- Context travels: a page that names a GPU opens a workload on it ------------------------


@pytest.mark.parametrize("path", ["/workloads.json?gpu=l40s", "/gpus/l40s.json", "/search.json?q=relu+l40s"])
def test_a_page_naming_a_gpu_opens_the_workload_on_that_gpus_group(site, path):
    data = site.get(path).json()
    if "groups" in data:  # search: its workload hits
        rows = [hit for group in data["groups"] for hit in group["hits"] if hit["slug"] == NEW_WORKLOAD]
    else:
        rows = [row for row in data["workloads"] if row["slug"] == NEW_WORKLOAD]
    url = rows[0]["url"]
    assert "?group=" in url, url
    board = site.get(url.replace(f"/workloads/{NEW_WORKLOAD}", f"/workloads/{NEW_WORKLOAD}.json")).json()
    assert board["selectedGroup"]["gpu"] == "NVIDIA L40S"
    # Without the GPU, the default group (the fastest anywhere: the B200's).
    assert site.get(f"/workloads/{NEW_WORKLOAD}.json").json()["selectedGroup"]["gpu"] == "NVIDIA B200"


# --- Revisions: the current one counts, the older ones say they are superseded --------------


def test_an_older_revision_says_it_is_superseded_and_by_which(site):
    old = page(site, f"/workloads/{OLD_WORKLOAD}")
    banner = old.select_one("p.banner.superseded")
    assert banner is not None and text(banner).startswith("Superseded by ReLU , the current revision")
    assert banner.select_one(f"a[href='/workloads/{NEW_WORKLOAD}']") is not None
    assert "What changed: the problem's code changed" in text(banner)
    current = page(site, f"/workloads/{NEW_WORKLOAD}")
    assert text(current.select_one("p.banner.current")).startswith("Current revision of this problem")
    twin = site.get(f"/workloads/{OLD_WORKLOAD}.json").json()
    assert {r["slug"]: (r["current"], r["superseded"]) for r in twin["revisions"]} == {
        OLD_WORKLOAD: (True, True),
        NEW_WORKLOAD: (False, False),
    }


def test_coverage_counts_the_current_revision_and_the_older_ones_apart(site):
    b200 = site.get("/gpus/b200.json").json()["gpu"]
    problems = next(c for c in b200["bySource"] if c["source"] != "sweeps")
    # Both revisions have a B200 run; the current one alone counts, the older one apart.
    assert (problems["workloads"], problems["sourceWorkloads"], problems["supersededWorkloads"]) == (1, 1, 1)
    assert b200["measuredWorkloads"] + b200["gaps"] == 2  # current workloads: the problem's and the sweep
    assert "1 of 1 current workloads (100%); 1 superseded revision measured besides" in text(page(site, "/gpus/b200"))
    source = site.get(f"/sources/{problems['source']}.json").json()
    assert (source["workloadCount"], source["supersededWorkloads"]) == (2, 1)
    assert "2 workloads (1 current, 1 older revision, superseded)" in text(page(site, f"/sources/{problems['source']}"))


def test_revisions_sharing_a_title_are_titled_by_what_differs() -> None:
    older = RevisionFacts(1, "Square matrix multiplication", {"N": 2048}, "d467f85334896872")
    current = RevisionFacts(2, "Square matrix multiplication", {"N": 4096}, "7626d611b8f2c97a")
    other = RevisionFacts(3, "ReLU", {"dim": 16}, "aaaaaaaaaaaaaaaa")
    assert revision_titles([older, current, other]) == {
        1: "Square matrix multiplication (N=2048)",
        2: "Square matrix multiplication (N=4096)",
        3: "ReLU",
    }
    assert what_changed(older, current) == "N: 2048 → 4096"
    same = RevisionFacts(4, "Square matrix multiplication", {"N": 4096}, "0123456789abcdef")
    assert revision_titles([current, same])[4] == "Square matrix multiplication (content 01234567)"
    assert current_revision([(1, "level1/1@d4", datetime(2025, 3, 1, tzinfo=UTC)), (2, "level1/1@76", None)]) == 2


def test_search_and_home_prefer_the_current_revision(site, db):
    with db.sessions() as session:
        hits = [SearchHit("workload", slug, slug, "", f"/workloads/{slug}") for slug in (OLD_WORKLOAD, NEW_WORKLOAD)]
        assert [hit.slug for hit in current_revisions_first(session, hits)] == [NEW_WORKLOAD, OLD_WORKLOAD]
    home = site.get("/index.json").json()
    shown = [w["slug"] for s in home["catalogue"] for c in s["collections"] for w in c["workloads"]]
    assert NEW_WORKLOAD in shown and OLD_WORKLOAD not in shown
