"""The run page as a reader sees it, for a run of each source: a title in words, human labels
with the source's own names beside them, the statistic named as computed, the dates and the
upstream record, the manifests folded, and the figures case by case where the source gives them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.app import create_app
from kernelindex.db.tables import Run
from kernelindex.ingest.kernelbench.manifests import protocol_manifest as kernelbench_protocol
from kernelindex.ingest.sources import ingest
from kernelindex.manifests import BenchmarkRun
from kernelindex.manifests.kinds import Comparability
from kernelindex.settings import Settings
from kernelindex.store.rerun_protocols import published_rerun_protocol
from kernelindex.web.field_labels import FIELD_LABELS, field_label, field_value
from kernelindex.web.statistic import statistic_name
from tests import kernelbench_slice, liger_slice
from tests.servers import serving
from tests.test_browser import browser  # noqa: F401  (the Chromium fixture)

SOL_RUN = "sol-submission-36270"


def page_of(client: TestClient, path: str) -> BeautifulSoup:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return BeautifulSoup(response.text, "html.parser")


def text(node: Any) -> str:
    return " ".join(node.get_text(" ", strip=True).split())


def facts(section: Any) -> dict[str, tuple[str, str | None]]:
    """Each fact of a section's lists: label → (value, the source's own name or None)."""
    found = {}
    for dt in section.select("dl.facts dt"):
        native = dt.select_one(".native")
        if native:
            native.extract()
        found[text(dt)] = (text(dt.find_next_sibling("dd")), text(native) if native else None)
    return found


# --- SOL-ExecBench ---------------------------------------------------------------------------


def test_sol_run_title_names_implementation_workload_and_gpu_with_the_run_name_small(client):
    page = page_of(client, f"/runs/{SOL_RUN}")
    assert text(page.select_one("h1")) == "Geometric · Conv2d residual block · NVIDIA B200"
    assert text(page.select_one("p.run-name")) == f"Run {SOL_RUN}"
    assert page.select_one("title").get_text().startswith("Geometric · Conv2d residual block · NVIDIA B200 · 25.91 µs")
    assert client.get(f"/runs/{SOL_RUN}.json").json()["title"] == "Geometric · Conv2d residual block · NVIDIA B200"


def test_sol_statistic_is_named_as_computed_in_the_hero_measurements_and_protocol(client):
    page = page_of(client, f"/runs/{SOL_RUN}")
    hero = page.select_one(".hero-figure")
    assert text(hero) == "25.91 µs geometric mean of case latencies (inferred)"
    assert hero.select_one("a.inferred")["href"] == "#protocol-note"
    assert "geometric mean" in text(page.select_one("#protocol-note"))
    assert facts(page.select_one("#measurements"))["Latency, geometric mean of case latencies"] == (
        "25.91 µs",
        "latencyNs.mean",
    )
    assert facts(page.select_one("#workload"))["Suite"] == ("16 cases · geometric mean of case latencies", None)
    assert facts(page.select_one("#protocol"))["Primary statistic"] == (
        "geometric mean of case latencies (published as “mean”; the aggregate is inferred)",
        "primaryStatistic",
    )
    data = client.get(f"/runs/{SOL_RUN}.json").json()
    assert (data["statistic"], data["statisticName"], data["statisticInferred"]) == (
        "mean",
        "geometric mean of case latencies",
        True,
    )


def test_run_16893_shows_its_latency_to_four_figures_and_its_source_score_under_its_own_name(client):
    page = page_of(client, "/runs/sol-submission-16893")
    assert text(page.select_one(".hero-figure")).startswith("209.8 µs ")
    figures = text(page.select_one("p.figures"))
    assert figures.startswith("SOL score 0.806 · 4.05× reference · 16/16 cases faster")
    # The share of SOL-ExecBench's own bound, computed by the registry and naming it, never "of SOL" alone.
    assert figures.endswith(" % of SOL bound (SOL-ExecBench T_SOL)") and not re.search(r"of SOL(?! bound)", figures)
    assert page.select_one("p.figures a")["href"] == "/figures#sol-score"
    data = client.get("/runs/sol-submission-16893.json").json()
    assert data["latency"] == "209.8 µs"
    assert data["solScore"] == 0.805502 and isinstance(data["solScore"], float)
    assert data["solScoreText"] == "0.806"
    share = data["shareOfBound"]
    assert (share["bound"], share["label"]) == ("sol-execbench", "% of SOL bound (SOL-ExecBench T_SOL)")
    assert isinstance(share["percent"], float) and share["text"] == f"{share['percent']:.1f} %"


def test_sol_source_fields_have_human_labels_their_own_names_and_unquoted_values(client):
    page = page_of(client, f"/runs/{SOL_RUN}")
    published = facts(page.select_one("#measurements"))
    assert published["SOL score"] == ("0.873692", "sol_score")
    assert published["Latency"] == ("0.025913 ms", "latency_ms")
    assert published["Mean speed-up vs baseline"] == ("7.1935×", "avg_speedup")
    assert published["Cases faster than the scoring baseline"] == ("16", "fast_1_count")
    assert published["Cases scored"] == ("16", "fast_1_total")
    environment = facts(page.select_one("#environment"))
    assert environment["Evaluation stack"] == ("v1.1", "evaluation_stack")
    assert environment["Worker"] == ("external-prod-b200-modal-1", None)
    protocol = facts(page.select_one("#protocol"))
    assert protocol["Comparability family"] == ("sol_execbench_leaderboard", "comparabilityFamily")
    main = page.select_one("main")
    for section in ("#identity", "#workload", "#measurements", "#protocol", "#environment"):
        assert '"' not in text(main.select_one(section)), section
        labels = [text(dt) for dt in main.select_one(section).select("dt")]
        assert not any(re.search(r"_|^[a-z]+[A-Z]", label) for label in labels), labels


def test_sol_dates_and_upstream_record(client):
    page = page_of(client, f"/runs/{SOL_RUN}")
    dates = page.select_one("#measurement p.dates")
    times = {time["datetime"][:10] for time in dates.select("time")}
    assert text(dates).startswith("Published 2026-08-12 · first recorded here ")
    assert "2026-08-12" in times and "last observed at the source" in text(dates)
    link = dates.select_one("a.upstream")
    assert link["href"] == "https://research.nvidia.com/benchmarks/sol-execbench/leaderboard/kernel/40/B200"
    assert text(link) == "Kernel 40 on the SOL-ExecBench leaderboard (B200)"
    data = client.get(f"/runs/{SOL_RUN}.json").json()
    assert data["upstream"] == {"label": text(link), "url": link["href"], "dated": "Published"}
    assert data["observedAt"].startswith("2026-08-12") and data["firstRecordedAt"] and data["lastObservedAt"]


def test_sol_run_says_in_one_line_that_per_case_figures_are_not_published(client):
    section = page_of(client, f"/runs/{SOL_RUN}").select_one("#measurements")
    assert section.select_one("h3#cases").get_text() == "Distribution over cases"
    assert text(section.select_one("#cases + p.note")) == (
        "The source publishes only the suite figure over the 16 cases; it gives no per-case figures for this run."
    )
    assert not section.select("figure.cases, svg")
    assert client.get(f"/runs/{SOL_RUN}.json").json()["cases"]["chart"] is None


def test_manifests_are_folded_with_short_digests_and_copy_buttons(client):
    page = page_of(client, f"/runs/{SOL_RUN}")
    blocks = page.select("#manifest details.manifest")
    assert len(blocks) == 5 and not any(block.has_attr("open") for block in blocks)
    for block in blocks:
        code = block.select_one(".digest code")
        assert code["title"].startswith("sha256:") and len(code["title"]) == 71
        assert text(code) == code["title"][:19] + "…"
        assert block.select_one(".digest button.copy")["data-copy"] == code["title"]


# --- KernelBench and Liger-Kernel ---------------------------------------------------------------


@pytest.fixture
def more_sources(make_app, db, tmp_path) -> Iterator[tuple[TestClient, dict[str, str]]]:  # type: ignore[no-untyped-def]
    """The app over small real slices of KernelBench and Liger-Kernel, with a run name of each."""
    settings = Settings(database_url=db.url, github_token=None)
    for slug, module in (("kernelbench", kernelbench_slice), ("liger-kernel", liger_slice)):
        snapshot = module.make_slice(tmp_path / slug)
        assert ingest(db.sessions, settings, slug, snapshot=snapshot, sleep=lambda _: None).status == "succeeded"
    with db.sessions() as session:
        names = list(session.scalars(select(Run.name).order_by(Run.name)))
    runs = {
        "kernelbench": next(n for n in names if n.startswith("kernelbench-l40s-modal-pytorch-eager-l1-")),
        "liger": next(n for n in names if n.startswith("liger-cross-entropy-full-v-") and "-liger-a100" in n),
    }
    with TestClient(make_app(db)) as client:
        yield client, runs


def test_kernelbench_run_names_its_trials_labels_its_fields_and_links_the_timing_file(more_sources):
    client, runs = more_sources
    page = page_of(client, f"/runs/{runs['kernelbench']}")
    title = text(page.select_one("h1"))
    assert title.startswith("PyTorch eager · ") and title.endswith(" · NVIDIA L40S")
    assert text(page.select_one(".hero-figure")).endswith("mean of 100 trials")
    published = facts(page.select_one("#measurements"))
    assert published["Timed trials"] == ("100", "num_trials")
    assert published["Standard deviation"][1] == "std_ms" and published["Standard deviation"][0].endswith(" ms")
    assert published["Execution mode"] == ("torch", "mode")
    commit, path = published["Commit"][0], published["File"][0]
    link = page.select_one("p.dates a.upstream")
    assert link["href"] == f"https://github.com/ScalingIntelligence/KernelBench/blob/{commit}/{path}"
    assert text(link) == f"{path} at commit {commit[:10]}"
    assert text(page.select_one("#cases + p.note")) == "This workload has one case: the figure above is the only one."


def test_liger_run_draws_its_cases_with_a_table_of_the_same_figures(more_sources):
    client, runs = more_sources
    page = page_of(client, f"/runs/{runs['liger']}")
    assert text(page.select_one("h1")) == (
        "Liger-Kernel / liger · Cross entropy, forward and backward, over vocab size (B=8, T=2048)"
        " · NVIDIA A100 SXM4 80GB"
    )
    assert text(page.select_one(".hero-figure")).endswith("geometric mean of case medians")
    assert facts(page.select_one("#measurements"))["Provider"] == ("liger", "kernel_provider")
    figure = page.select_one("#measurements figure.chart.cases")
    svg = figure.select_one("svg")
    assert svg["role"] == "img"
    title, desc = svg.select_one("title"), svg.select_one("desc")
    assert svg["aria-labelledby"] == f"{title['id']} {desc['id']}"
    assert text(title) == "Latency per case (median, log scale)"
    assert text(desc).startswith("6 cases from ")
    rows = page.select("#measurements table.cases-table tbody tr")
    labels = [text(row.select_one("th")) for row in rows]
    assert labels == [text(label) for label in svg.select("text.row-label")]
    assert all(label.startswith("V=") for label in labels) and len(labels) == 6
    assert [text(row.select("td")[0]) for row in rows] == [text(value) for value in svg.select("text.value")]
    assert len(svg.select("circle.point")) == 6 and len(svg.select("line.spread")) == 6
    spread = [text(row.select("td")[1]) for row in rows]
    assert all(re.fullmatch(r"[0-9.]+ (µs|ms) – [0-9.]+ (µs|ms)", cell) for cell in spread), spread
    dates = page.select_one("p.dates")
    assert text(dates).startswith("Measured 20")  # the sweep's own timestamp; the file says when it was published
    link = dates.select_one("a.upstream")
    assert link["href"] == "https://github.com/linkedin/Liger-Kernel/blob/main/benchmark/data/all_benchmark_data.csv"


# --- The label table ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("sol_score", 0.805502, "0.805502"),
        ("latency_ms", 0.209838, "0.209838 ms"),
        ("avg_speedup", 4.049, "4.049×"),
        ("bound_ns", 72825, "72,825 ns"),
        ("percent_of_sol_bound", 4.67, "4.67 %"),
        ("runner_key_id", "ed25519:c29063d8fc9b3779", "ed25519:c29063d8fc9b3779"),
        ("peak_memory_mb", 12.5, "12.5"),
        ("flag", True, "yes"),
    ],
)
def test_field_values_are_shown_as_published_with_their_unit(name, value, shown):
    assert field_value(name, value) == shown


def test_every_label_reads_as_words_and_an_unknown_field_gets_its_own():
    # A share's label begins with its unit, as every share on the site: "% of SOL bound (datasheet)".
    assert all(
        (label.label[0].isupper() or label.label.startswith("% of ")) and "_" not in label.label
        for label in FIELD_LABELS.values()
    )
    assert field_label("peak_memory_mb").label == "Peak memory mb"


# --- In a browser -------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("width", [390, 1400])
def test_citation_tabs_show_one_format_at_a_time_and_the_page_fits_the_screen(
    browser,  # noqa: F811  (the fixture imported above)
    committed_catalogue_url,
    width,
):
    app = create_app(Settings(database_url=committed_catalogue_url))
    with serving(app) as base:
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(f"{base}/runs/{SOL_RUN}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        tabs = page.locator("#cite [role=tab]")
        assert tabs.count() == 4
        assert page.locator("#cite .cite-panel:visible").count() == 1
        assert page.locator("#cite-bib").is_visible() and tabs.nth(0).get_attribute("aria-selected") == "true"
        tabs.nth(1).click()
        assert page.locator("#cite-ris").is_visible() and not page.locator("#cite-bib").is_visible()
        assert tabs.nth(1).get_attribute("aria-selected") == "true"
        page.keyboard.press("ArrowRight")
        assert page.locator("#cite-csl-json").is_visible()
        assert page.evaluate("document.activeElement.textContent") == "CSL-JSON"
        assert page.locator("#cite-csl-json button.copy").is_visible()
        assert not page.locator("#manifest details.manifest[open]").count()


# --- The statistic, named from the manifests ------------------------------------------------------


def _run(latency: dict[str, int], primary: str, **spec: Any) -> BenchmarkRun:
    digest = "sha256:" + "0" * 64
    return BenchmarkRun.model_validate(
        {
            "apiVersion": "kernelindex.dev/v1alpha1",
            "kind": "BenchmarkRun",
            "metadata": {"name": "a-run"},
            "spec": {
                "status": "passed",
                "timing": {"latencyNs": latency, "primaryStatistic": primary},
                "observedAt": "2026-01-01T00:00:00Z",
                "protocolDigest": digest,
                "workloadDigest": digest,
                "environmentDigest": digest,
                "implementationDigest": digest,
                **spec,
            },
        }
    )


def test_one_case_of_a_rerun_is_the_median_of_its_samples_and_the_suite_their_geometric_mean():
    protocol = published_rerun_protocol("kernelindex-rerun-v1")
    assert protocol is not None
    one_case = statistic_name(_run({"median": 1000}, "median", caseIndex=3), protocol, 16)
    assert (one_case.text, one_case.inferred) == ("median of 150 samples", False)
    assert statistic_name(_run({"median": 1000}, "median"), protocol, 16).text == "geometric mean of case medians"


def test_a_family_that_states_no_aggregate_names_its_statistic_over_the_cases():
    protocol = kernelbench_protocol(100).model_copy(deep=True)
    assert statistic_name(_run({"mean": 1000}, "mean"), protocol, 1).text == "mean of 100 trials"
    other = protocol.model_copy(
        update={"spec": protocol.spec.model_copy(update={"comparability": Comparability(family="other_harness")})}
    )
    assert statistic_name(_run({"mean": 1000}, "mean"), other, 4).text == "mean over 4 cases"
