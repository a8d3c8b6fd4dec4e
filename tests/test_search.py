"""Search (PRODUCT.md §6): the index, ranked results, suggestions, "did you mean", hostile input."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import func, select

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.search_tables import SearchEntry, SearchTerm, SearchWord
from kernelindex.db.tables import Implementation, Workload
from kernelindex.ingest.runner import run_ingest
from kernelindex.store import search as store
from tests.conftest import StoreUnderTest
from tests.upstream import FakeUpstream

HOSTILE = [
    '"',
    '""',
    "*",
    "conv*",
    "NEAR(",
    "NEAR(conv2d residual, 2)",
    "a OR",
    "a AND NOT b",
    "-conv2d",
    "title:conv2d",
    "(conv2d OR gemm",
    "'; DROP TABLE workload; --",
    "' OR 1=1 --",
    "%",
    "_",
    "%_%",
    "\\",
    "^conv",
    "ünïcødé nörm",
    "注意力",
    "🔥🔥",
    "\u202econv2d",
    " ",
    "x" * 200,
    "a " * 100,
    "conv2d " * 28,
]
# Refused with a 400 before any page sees them (kernelindex.web.request_guard); the store takes them too.
CONTROL = ["\x00", "conv\x00 2d", "\x01\x1f\x7f", "\x1b[31m", "\t\n\r"]


def slugs(hits, kind=None):  # type: ignore[no-untyped-def]
    return [hit.slug for hit in hits if kind is None or hit.kind == kind]


def index_state(db):  # type: ignore[no-untyped-def]
    """Every entry (with its id), every term and every word of the index."""
    with db.sessions() as session:
        entries = sorted(
            session.execute(
                select(SearchEntry.id, SearchEntry.kind, SearchEntry.slug, SearchEntry.title, SearchEntry.subtitle)
            ).all()
        )
        terms = sorted(session.execute(select(SearchTerm.term, SearchTerm.entry_id, SearchTerm.weight)).all())
        words = sorted(session.scalars(select(SearchWord.word)))
    return entries, terms, words


# --- Terms --------------------------------------------------------------------------


def test_words_fold_case_and_accents_and_split_on_everything_else():
    assert store.words("Ångström_Conv2D  (fp8)-backward") == ["angstrom", "conv2d", "fp8", "backward"]
    assert store.words('"; DROP--*') == ["drop"]
    assert store.words("\x00\u202e%_") == []


def test_query_terms_are_distinct_and_capped():
    assert store.query_terms("conv conv 2d") == ["conv", "2d"]
    assert len(store.query_terms("a b c d e f g h i j k")) == store.MAX_QUERY_TERMS
    assert store.query_terms("x" * 500) == ["x" * store.MAX_TERM_CHARS]


def test_names_also_give_camel_case_parts_and_joined_short_words():
    terms = store.Terms().add("NAFNet layer norm", store.NAME, name=True).weights
    assert {"nafnet", "naf", "net", "layer", "norm", "layernorm"} <= set(terms)
    # Long words are not joined, and stop words are neither indexed nor joined.
    assert store.Terms().add("attention with rope", store.NAME, name=True).weights.keys() == {"attention", "rope"}


def test_stop_words_are_not_searched_for(loaded_db):
    assert store.query_terms("attention with rope and the qk") == ["attention", "rope", "qk"]
    with loaded_db.sessions() as session:
        assert store.search(session, "with the").hits == []
        assert store.search(session, "attention with rope").hits == store.search(session, "attention rope").hits


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("atention", "attention", 1), ("layrnorm", "layernorm", 1), ("residul", "residual", 1), ("gemm", "gmem", 1)],
)
def test_edit_distance_counts_inserts_deletes_and_swaps(a, b, distance):
    assert store.edit_distance(a, b, 2) == distance
    assert store.edit_distance("conv2d", "attention", 2) == 3  # capped at limit + 1


# --- Ranked search ------------------------------------------------------------------


def test_search_finds_a_workload_by_a_word_of_its_slug(loaded_db):
    with loaded_db.sessions() as session:
        results = store.search(session, "conv2d")
    assert results.hits[0].slug == "l1-040-conv2d-residual-block"
    assert results.hits[0].url == "/workloads/l1-040-conv2d-residual-block"
    assert results.hits[0].title == "Conv2d residual block"
    assert results.hits[0].subtitle == "L1 · NAFNet · 16 cases"
    assert results.did_you_mean is None


@pytest.mark.parametrize(
    ("query", "kind", "slug", "url"),
    [
        ("NAFNet", "model", "nafnet", "/models/nafnet"),
        ("nafnet", "model", "nafnet", "/models/nafnet"),
        ("B200", "gpu", "b200", "/gpus/b200"),
        ("sm_100", "gpu", "b200", "/gpus/b200"),
        ("Geometric", "implementation", "geometric", "/implementations/geometric"),
        ("040_conv2d_residual_block", "workload", "l1-040-conv2d-residual-block", None),
        ("l1-040", "workload", "l1-040-conv2d-residual-block", None),
    ],
)
def test_search_finds_models_gpus_projects_and_upstream_names(loaded_db, query, kind, slug, url):
    with loaded_db.sessions() as session:
        hits = store.search(session, query).hits
    assert hits[0].kind == kind and hits[0].slug == slug
    assert url is None or hits[0].url == url


def test_a_project_is_one_entry_however_many_revisions_it_has(loaded_db):
    with loaded_db.sessions() as session:
        revisions = session.scalar(select(func.count()).where(Implementation.project == "Geometric"))
        hits = store.search(session, "geometric", kinds={"implementation"}).hits
    assert revisions > 1
    assert [(hit.slug, hit.subtitle) for hit in hits] == [("geometric", f"{revisions} revisions")]


def test_a_gpu_is_one_entry_with_its_architecture_and_environments(loaded_db):
    with loaded_db.sessions() as session:
        hits = store.search(session, "nvidia b200").hits
    assert [(hit.kind, hit.title, hit.subtitle) for hit in hits] == [("gpu", "NVIDIA B200", "sm_100 · 2 environments")]


def test_a_model_names_its_workloads_and_ranks_above_them(loaded_db):
    with loaded_db.sessions() as session:
        hits = store.search(session, "nafnet").hits
    model = hits[0]
    assert (model.kind, model.title) == ("model", "NAFNet")
    workloads = slugs(hits, "workload")
    assert "l1-040-conv2d-residual-block" in workloads
    assert model.subtitle == f"{len(workloads)} workloads"


def test_every_word_must_match_and_words_match_word_beginnings(loaded_db):
    with loaded_db.sessions() as session:
        both = slugs(store.search(session, "adaptive instance").hits)
        prefix = slugs(store.search(session, "adapt inst").hits)
        spelled_together = slugs(store.search(session, "rmsnorm").hits)
    assert both == prefix == ["l1-039-adaptive-instance-normalization-2d-backward"]
    assert "l1-069-rms-norm" in spelled_together  # "Rms norm" is found as one word too


def test_search_limits_to_the_kinds_asked_for(loaded_db):
    with loaded_db.sessions() as session:
        only_models = store.search(session, "nafnet", kinds={"model"}).hits
        with pytest.raises(ValueError, match="unknown kinds"):
            store.search(session, "nafnet", kinds={"run"})
    assert [(hit.kind, hit.slug) for hit in only_models] == [("model", "nafnet")]


def test_when_no_entry_matches_every_word_the_best_partial_matches_are_shown(loaded_db):
    with loaded_db.sessions() as session:
        results = store.search(session, "conv2d residul")
    assert results.hits[0].slug == "l1-040-conv2d-residual-block"
    assert results.did_you_mean == "conv2d residual"


@pytest.mark.parametrize(
    ("query", "correction"),
    [
        ("conv2d residul", "conv2d residual"),
        ("layrnorm", "layernorm"),
        ("atention", "attention"),
        ("adaptve instance", "adaptive instance"),
        ("NAFNte", "nafnet"),
    ],
)
def test_did_you_mean_corrects_near_misses_from_the_index_vocabulary(loaded_db, query, correction):
    with loaded_db.sessions() as session:
        assert store.search(session, query).did_you_mean == correction
        assert store.search(session, correction).did_you_mean is None
        assert store.search(session, correction).hits


@pytest.mark.parametrize("query", ["conv2d", "attention", "qqqqqqqqqq", "zx", "12345"])
def test_did_you_mean_stays_quiet_without_a_near_miss(loaded_db, query):
    with loaded_db.sessions() as session:
        assert store.search(session, query).did_you_mean is None


# --- Suggestions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("conv", "l1-040-conv2d-residual-block"),
        ("conv2d res", "l1-040-conv2d-residual-block"),
        ("adaptive inst", "l1-039-adaptive-instance-normalization-2d-backward"),
        ("Adaptive Instance Norm", "l1-039-adaptive-instance-normalization-2d-backward"),
        ("naf", "nafnet"),
        ("b20", "b200"),
        ("geom", "geometric"),
    ],
)
def test_suggestions_complete_word_prefixes(loaded_db, prefix, expected):
    with loaded_db.sessions() as session:
        suggestions = store.suggest(session, prefix)
    assert expected in slugs(suggestions)
    assert len(suggestions) <= 8


def test_suggestions_ignore_descriptions_and_wait_for_a_second_letter(loaded_db):
    with loaded_db.sessions() as session:
        # "restoration" is only in the description of l1-040 (and others).
        assert slugs(store.search(session, "restoration").hits)
        assert store.suggest(session, "restoration") == []
        assert store.suggest(session, "c") == []
        assert slugs(store.suggest(session, "adaptive i")) == slugs(store.suggest(session, "adaptive"))


# --- The pages ----------------------------------------------------------------------


def test_search_page_groups_results_by_kind_and_prefills_the_search_box(client):
    response = client.get("/search", params={"q": "nafnet"})
    assert response.status_code == 200
    page = BeautifulSoup(response.text, "html.parser")
    headings = [h.get_text(" ", strip=True) for h in page.select("section.results h2")]
    # The group of the best hit comes first: here the model itself, then its workloads.
    assert headings[0] == "Origin models 1" and headings[1].startswith("Workloads")
    assert [a["href"] for a in page.select("nav.collection-nav a")] == ["#results-model", "#results-workload"]
    assert page.select_one("#site-search")["value"] == "nafnet"
    assert page.select_one("#search-q")["value"] == "nafnet"
    assert page.select_one('link[rel="alternate"][type="application/json"]')["href"] == "/search.json?q=nafnet"
    model = page.select_one("section[aria-labelledby=results-model] a.hit")
    assert (model.get_text(strip=True), model["href"]) == ("NAFNet", "/models/nafnet")


@pytest.mark.parametrize("query", ["nafnet", "conv", "conv2d residul", "b200", "qwen3", "zzzzzz"])
def test_search_json_twin_has_the_hits_of_the_html_page(client, query):
    html = BeautifulSoup(client.get("/search", params={"q": query}).text, "html.parser")
    data = client.get("/search.json", params={"q": query}).json()
    shown = [
        (section["aria-labelledby"].removeprefix("results-"), a["href"], a.get_text(strip=True))
        for section in html.select("section.results")
        for a in section.select("a.hit")
    ]
    assert shown == [(group["kind"], hit["url"], hit["title"]) for group in data["groups"] for hit in group["hits"]]
    assert data["total"] == len(shown)
    assert data["query"] == query


def test_search_json_twin_for_a_near_miss(client):
    data = client.get("/search.json", params={"q": "layrnorm"}).json()
    assert data == {
        "query": "layrnorm",
        "kind": None,
        "gpu": None,
        "gpus": [{"value": "b200", "label": "NVIDIA B200 · 235", "selected": False}],
        "total": 0,
        "groups": [],
        "didYouMean": "layernorm",
        "didYouMeanUrl": "/search?q=layernorm",
    }
    page = BeautifulSoup(client.get("/search", params={"q": "layrnorm"}).text, "html.parser")
    link = page.select_one(".did-you-mean a")
    assert (link.get_text(strip=True), link["href"]) == ("layernorm", "/search?q=layernorm")
    assert "No results" in page.get_text()


def test_empty_search_shows_the_form_and_what_can_be_searched(client):
    response = client.get("/search")
    assert response.status_code == 200
    page = BeautifulSoup(response.text, "html.parser")
    assert page.select_one("form[action='/search'] input[name=q]") is not None
    assert page.select_one("h2#what").get_text() == "What you can search"
    assert client.get("/search.json", params={"q": "   "}).json()["groups"] == []


def test_search_page_filters_by_kind_and_refuses_an_unknown_kind(client):
    data = client.get("/search.json", params={"q": "nafnet", "kind": "model"}).json()
    assert [group["kind"] for group in data["groups"]] == ["model"]
    everything = client.get("/search.json", params={"q": "nafnet", "kind": ""}).json()  # the form's default
    assert everything == client.get("/search.json", params={"q": "nafnet"}).json()
    response = client.get("/search.json", params={"q": "nafnet", "kind": "run"})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("kind must be one of workload, implementation, gpu, model")


def test_suggestions_json_is_what_the_search_box_script_reads(client):
    response = client.get("/search/suggestions.json", params={"q": "adaptive inst"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "query": "adaptive inst",
        "suggestions": [
            {
                "title": "Adaptive instance normalization 2d backward",
                "kind": "workload",
                "subtitle": "L1 · NAFNet · 16 cases",
                "url": "/workloads/l1-039-adaptive-instance-normalization-2d-backward",
            }
        ],
    }
    again = client.get(
        "/search/suggestions.json", params={"q": "adaptive inst"}, headers={"If-None-Match": response.headers["etag"]}
    )
    assert again.status_code == 304


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_are_only_data(client, query):
    for path in ("/search", "/search.json", "/search/suggestions.json"):
        response = client.get(path, params={"q": query})
        assert response.status_code == 200, (path, response.text[:300])
    assert client.get("/search.json", params={"q": query}).json()["query"] == query.strip()
    assert client.get("/search/suggestions.json", params={"q": query}).json()["query"] == query


@pytest.mark.parametrize("query", CONTROL)
def test_control_characters_are_a_400_not_a_500(client, query):
    for path, content_type in (
        ("/search", "text/html; charset=utf-8"),
        ("/search.json", "application/problem+json"),
        ("/search/suggestions.json", "application/problem+json"),
    ):
        response = client.get(path, params={"q": query})
        assert response.status_code == 400
        assert response.headers["content-type"] == content_type
        assert "control characters" in response.text


@pytest.mark.parametrize("path", ["/search", "/search.json", "/search/suggestions.json"])
def test_a_query_longer_than_200_characters_is_a_400(client, path):
    assert client.get(path, params={"q": "x" * 200}).status_code == 200
    response = client.get(path, params={"q": "x" * 201})
    assert response.status_code == 400
    assert "201 characters long; at most 200" in response.text


# What the store makes of hostile text: the plain words in it, nothing else.
AS_WORDS = {
    "conv*": "conv",
    "^conv": "conv",
    "-conv2d": "conv2d",
    "\u202econv2d": "conv2d",
    "conv2d " * 28: "conv2d",
    "conv2d " * 5000: "conv2d",
    "NEAR(conv2d residual, 2)": "near conv2d residual 2",
    "title:conv2d": "title conv2d",
    "(conv2d OR gemm": "conv2d gemm",
    "a AND NOT b": "not b",
    "'; DROP TABLE workload; --": "drop table workload",
    "' OR 1=1 --": "1",
    "ünïcødé nörm": "unicøde norm",
    "conv\x00 2d": "conv 2d",
    "\x1b[31m": "31m",
}
# No word the index holds (or only stop words): no results, no suggestion, no correction.
FINDS_NOTHING = ['"', '""', "*", "%", "_", "%_%", "\\", "\t\n\r", " ", "🔥🔥", "a OR", "a " * 100, "NEAR(", "注意力"]
FINDS_NOTHING += ["\x00", "\x01\x1f\x7f", "\ud800", "x" * 200, "ab" * 50_000]


def test_the_store_reads_any_text_as_plain_words_whatever_its_length(loaded_db):
    assert {*HOSTILE, *CONTROL} <= {*AS_WORDS, *FINDS_NOTHING}
    with loaded_db.sessions() as session:
        workloads = session.scalar(select(func.count()).select_from(Workload))
        for query in FINDS_NOTHING:
            assert store.search(session, query) == store.SearchResults(query, [], None), repr(query[:40])
            assert store.suggest(session, query) == [], repr(query[:40])
        for query, plain in AS_WORDS.items():
            expected = store.search(session, plain)
            assert expected.hits or expected.did_you_mean, plain
            assert store.search(session, query) == replace(expected, query=query), repr(query[:40])
            assert store.suggest(session, query) == store.suggest(session, plain), repr(query[:40])
        longest = store.search(session, "conv2d " * 5000).hits
        assert slugs(longest)[:2] == ["l1-040-conv2d-residual-block", "l1-041-strided-conv2d-downsampling"]
        assert session.scalar(select(func.count()).select_from(Workload)) == workloads


# --- Keeping the index current --------------------------------------------------------


def ingest(db, upstream: FakeUpstream):  # type: ignore[no-untyped-def]
    summary = run_ingest(upstream.adapter(), db.sessions, origin="fake upstream")
    assert summary.status == "succeeded", summary.errors
    return summary


def test_ingest_adds_new_workloads_projects_and_models_to_the_index(db):
    ingest(db, FakeUpstream(kernel_ids=(62,)))
    with db.sessions() as session:
        assert store.search(session, "conv2d").hits == []
        assert store.search(session, "nafnet").hits == []
    upstream = FakeUpstream(kernel_ids=(39, 40, 62))
    ingest(db, upstream)
    with db.sessions() as session:
        assert slugs(store.search(session, "conv2d residual").hits) == ["l1-040-conv2d-residual-block"]
        model = store.search(session, "nafnet", kinds={"model"}).hits
        projects = {s["username"] for s in upstream.submissions[40]}
        found = {hit.title for hit in store.search(session, " ".join(projects), kinds={"implementation"}).hits}
    assert [(hit.slug, hit.subtitle) for hit in model] == [("nafnet", "2 workloads")]
    assert found <= projects and found


def test_unchanged_reingest_leaves_the_index_untouched(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    before = index_state(db)
    ingest(db, upstream)
    assert index_state(db) == before


def test_an_updated_workload_is_reindexed_with_its_new_slug_and_model(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    upstream.kernels[40]["description"] = "A zanzibarian convolution."
    batch = (lambda a: a.map("40", a.fetch("40")))(upstream.adapter())
    with db.sessions.begin() as session:
        # Renames are not stored by the ingest (slugs never change), so this sets one by hand.
        workload = session.scalars(select(Workload).where(Workload.external_id == "40")).one()
        workload.description = batch.workload.spec.definition.description
        workload.name, workload.origin_model = "l1-040-renamed", "OtherNet"
        session.flush()
        store.index_batch(session, batch, workload, Counter({"updated.workload": 1}))
    with db.sessions() as session:
        assert slugs(store.search(session, "zanzibarian").hits) == ["l1-040-renamed"]
        assert store.search(session, "restoration networks").hits == []
        models = {hit.slug: hit.subtitle for hit in store.search(session, "nafnet othernet", kinds={"model"}).hits}
    assert models == {"nafnet": "1 workload", "othernet": "1 workload"}
    assert ("workload", "l1-040-conv2d-residual-block") not in {
        (kind, slug) for _, kind, slug, *_ in index_state(db)[0]
    }


def test_a_workload_changed_upstream_is_reindexed_by_the_ingest(db):
    upstream = FakeUpstream()
    ingest(db, upstream)
    upstream.kernels[40]["description"] = "A zanzibarian convolution."
    ingest(db, upstream)
    with db.sessions() as session:
        assert slugs(store.search(session, "zanzibarian").hits) == ["l1-040-conv2d-residual-block"]


def test_rebuilding_the_index_changes_nothing_the_ingest_wrote(loaded_db):
    before = index_state(loaded_db)
    with loaded_db.sessions.begin() as session:
        store.rebuild_index(session)
    assert index_state(loaded_db) == before
    entries, terms, words = before
    assert {kind for _, kind, *_ in entries} == set(store.KINDS)
    assert words == sorted({term for term, _, _ in terms})


def test_the_migration_builds_the_index_of_a_store_filled_before_it(database_url):
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    filled = StoreUnderTest("fresh", database_url, make_sessionmaker(engine))
    ingest(filled, FakeUpstream())
    entries, terms, words = index_state(filled)
    migrate.downgrade(database_url, "0001")
    migrate.upgrade(database_url)
    again, again_terms, again_words = index_state(filled)
    engine.dispose()
    by_id = {entry_id: (kind, slug) for entry_id, kind, slug, *_ in entries}
    again_by_id = {entry_id: (kind, slug) for entry_id, kind, slug, *_ in again}
    assert sorted(row[1:] for row in again) == sorted(row[1:] for row in entries)
    assert sorted((t, again_by_id[e], w) for t, e, w in again_terms) == sorted((t, by_id[e], w) for t, e, w in terms)
    assert again_words == words
