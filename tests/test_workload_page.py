"""The workload page for many GPUs and many sources: figures across GPUs, sweeps, the reference
program, revisions and attribution, over a catalogue written through ``apply_batch``."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from tests.multi_gpu_catalogue import (
    NEW_SHA,
    NEW_WORKLOAD,
    OLD_SHA,
    OLD_WORKLOAD,
    PROBLEM_SOURCE,
    SWEEP_SOURCE,
    SWEEP_WORKLOAD,
    write_catalogue,
)
from tests.pages import page, text


@pytest.fixture
def site(make_app, db) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    write_catalogue(db.sessions)
    with TestClient(make_app(db)) as client:
        yield client


def rows(table) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [[text(cell) for cell in tr.select("th, td")] for tr in table.select("tbody tr")]


# --- Across GPUs ---------------------------------------------------------------------


def test_the_cross_gpu_table_holds_each_gpus_best_eligible_run_in_gpu_order(site):
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    section = html.select_one("section#across-gpus")
    # B200, H100 and L40S in the registry's GPU order (not by speed); the failed 1.000 µs run on
    # the L40S is no figure, and the H100's best is over its two setups.
    assert [row[:5] for row in rows(section.select_one("table.cross-gpu"))] == [
        ["NVIDIA B200", "15.00 µs mean", "PyTorch torch.compile, max-autotune", "NVIDIA B200 · Cloud One", "2"],
        [
            "NVIDIA H100 SXM",
            "26.00 µs mean",
            "PyTorch torch.compile, max-autotune",
            "NVIDIA H100 SXM · Cloud One (best of 2 setups)",
            "3",
        ],
        ["NVIDIA L40S", "90.00 µs mean", "PyTorch eager", "NVIDIA L40S · Lab Two", "1"],
    ]
    links = [a["href"] for a in section.select("table.cross-gpu a") if a["href"].startswith("/runs/")]
    assert links == ["/runs/p-compile-b200", "/runs/p-compile-h100-a", "/runs/p-eager-l40s"]
    assert "1.000 µs" not in text(section)


def test_the_matrix_has_a_row_per_implementation_and_a_column_per_gpu(site):
    matrix = page(site, f"/workloads/{NEW_WORKLOAD}").select_one("#across-gpus table.matrix")
    assert [text(th) for th in matrix.select("thead th")] == [
        "Implementation",
        "NVIDIA B200",
        "NVIDIA H100 SXM",
        "NVIDIA L40S",
    ]
    assert rows(matrix) == [
        ["PyTorch eager", "20.00 µs", "28.00 µs", "90.00 µs"],
        ["PyTorch torch.compile, max-autotune", "15.00 µs", "26.00 µs", "–"],
    ]
    assert [a["href"] for a in matrix.select("tbody tr:first-child a")] == [
        "/runs/p-eager-b200",
        "/runs/p-eager-h100-b",
        "/runs/p-eager-l40s",
    ]


def test_the_cross_gpu_view_says_gpus_are_never_ranked_and_charts_each_gpu(site):
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    section = html.select_one("section#across-gpus")
    note = text(section.select_one(".cross-gpu-note"))
    assert "comparison group of its own" in note and "never ranked against each other" in note
    svg = section.select_one("svg")
    assert svg["role"] == "img"
    labelled_by = svg["aria-labelledby"].split()
    assert [svg.select_one(f"#{ident}").name for ident in labelled_by] == ["title", "desc"]
    assert [text(label) for label in svg.select("text.row-label")] == ["NVIDIA B200", "NVIDIA H100 SXM", "NVIDIA L40S"]
    assert [text(label) for label in svg.select("text.value")] == ["15.00 µs", "26.00 µs", "90.00 µs"]
    # Log scale: 15 → 26 µs is a shorter step than 26 → 90 µs, in proportion to the logs.
    x = [float(dot["cx"]) for dot in svg.select("circle.point")]
    assert x[0] < x[1] < x[2]
    assert (x[1] - x[0]) / (x[2] - x[1]) == pytest.approx(0.4424, abs=0.01)
    # Small dots: each implementation's best on the GPU (two on B200 and H100, one on L40S).
    assert len(svg.select("circle.dot")) == 5
    contents = [a["href"] for a in html.select("nav.contents a")]
    assert "#across-gpus" in contents and "#sweep" not in contents


def test_a_workload_on_one_gpu_has_no_cross_gpu_view(site):
    html = page(site, f"/workloads/{OLD_WORKLOAD}")
    assert html.select_one("#across-gpus") is None
    assert site.get(f"/workloads/{OLD_WORKLOAD}.json").json()["crossGpu"] is None
    assert site.get(f"/api/v1/workloads/{OLD_WORKLOAD}").json()["crossGpu"] is None


def test_page_json_twin_and_api_give_the_same_cross_gpu_figures(site):
    twin = site.get(f"/workloads/{NEW_WORKLOAD}.json").json()
    api = site.get(f"/api/v1/workloads/{NEW_WORKLOAD}").json()
    assert twin["crossGpu"] == api["crossGpu"]
    view = api["crossGpu"]
    assert [(g["gpu"], g["best"]["run"], g["best"]["latencyNs"], g["environments"]) for g in view["gpus"]] == [
        ("b200", "p-compile-b200", 15_000, 1),
        ("h100-sxm", "p-compile-h100-a", 26_000, 2),
        ("l40s", "p-eager-l40s", 90_000, 1),
    ]
    assert {line["implementation"]: sorted(line["bestByGpu"]) for line in view["implementations"]} == {
        "pytorch-eager": ["b200", "h100-sxm", "l40s"],
        "torch-compile-max-autotune": ["b200", "h100-sxm"],
    }
    assert view["gpus"][1]["best"]["provider"] == "Cloud One"
    # The page shows what the twin holds.
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    shown = [row[1] for row in rows(html.select_one("table.cross-gpu"))]
    assert shown == [f"{g['best']['latencyNs'] / 1000:.2f} µs mean" for g in twin["crossGpu"]["gpus"]]


def test_groups_of_one_gpu_in_two_setups_are_told_apart(site):
    twin = site.get(f"/workloads/{NEW_WORKLOAD}.json").json()
    assert sorted(group["label"] for group in twin["groups"]) == [
        "NVIDIA B200 · Cloud One",
        "NVIDIA H100 SXM · Cloud One",
        "NVIDIA H100 SXM · Lab Two",
        "NVIDIA L40S · Lab Two",
    ]
    # The ranked table names each implementation beyond its project.
    ranked = twin["ranked"]
    assert [(row["implementation"], row["variant"]) for row in ranked] == [
        ("PyTorch", "torch.compile, max-autotune"),
        ("PyTorch", "eager"),
    ]
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    assert [row[2] for row in rows(html.select_one("table.ranked"))] == [
        "PyTorch torch.compile, max-autotune",
        "PyTorch eager",
    ]


def test_the_ranked_table_is_charted_as_bars_with_a_title_a_description_and_its_figures(site):
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    svg = html.select_one("#leaderboard figure.bars svg.bar-chart")
    assert svg["role"] == "img"
    title_id, desc_id = svg["aria-labelledby"].split()
    assert text(svg.select_one(f"title#{title_id}")).startswith("Latency per implementation on ")
    assert "linear axis from zero" in text(svg.select_one(f"desc#{desc_id}"))
    table = rows(html.select_one("table.ranked"))
    bars = svg.select("rect.bar")
    assert len(bars) == len(table) == 2
    # Each bar carries the figure its row shows; the ticks are distinct.
    assert [text(bar.select_one("title")).split(": ")[-1] for bar in bars] == [
        row[3].split(" ")[0] + " µs" for row in table
    ]
    ticks = [text(tick) for tick in svg.select("text.tick")]
    assert len(ticks) == len(set(ticks)) >= 3


def test_the_speed_up_over_eager_pytorch_is_charted_per_implementation(site):
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    svgs = html.select("#leaderboard figure.bars svg")
    speedup = next(svg for svg in svgs if "Speed-up over PyTorch eager" in text(svg.select_one("title")))
    labels = [text(node) for node in speedup.select("text.value")]
    twin = site.get(f"/workloads/{NEW_WORKLOAD}.json").json()
    eager, compiled = (
        next(r for r in twin["ranked"] if r["variant"] == v) for v in ("eager", "torch.compile, max-autotune")
    )
    assert labels == [f"{eager['latencyNs'] / compiled['latencyNs']:.2f}×", "1.00×"]
    assert speedup.select_one("line.rule") is not None
    assert len(speedup.select("rect.bar.highlight")) == 1  # the baseline itself
    # The same figures stand in a table beside the chart.
    figures = rows(speedup.find_parent("figure").select_one("details.chart-data table"))
    assert [row[1] for row in figures] == labels


def test_the_ranked_table_lists_one_row_per_implementation_and_every_run_on_request(site):
    twin = site.get(f"/workloads/{NEW_WORKLOAD}.json").json()
    h100 = next(group for group in twin["groups"] if group["label"] == "NVIDIA H100 SXM · Cloud One")
    best = site.get(f"/workloads/{NEW_WORKLOAD}.json", params={"group": h100["key"][7:23]}).json()
    every = site.get(f"/workloads/{NEW_WORKLOAD}.json", params={"group": h100["key"][7:23], "runs": "all"}).json()
    names = [row["implementation"] + " " + (row["variant"] or "") for row in best["ranked"]]
    assert len(names) == len(set(names))
    assert sum(row["implementationRuns"] for row in best["ranked"]) == len(every["ranked"])
    html = page(site, h100["url"])
    toggle = html.select_one("nav.run-modes")
    assert text(toggle.select_one('[aria-current="true"]')) == "Best run per implementation"
    assert "runs=all" in toggle.select_one("a")["href"]
    shown = page(site, toggle.select_one("a")["href"])
    assert len(rows(shown.select_one("table.ranked"))) == len(every["ranked"])
    assert shown.select_one('#leaderboard form.controls input[name="runs"]')["value"] == "all"


def test_a_bad_runs_value_is_a_clear_400(site):
    response = site.get(f"/workloads/{NEW_WORKLOAD}?runs=some")
    assert response.status_code == 400 and "runs" in response.text


# --- The sweep -------------------------------------------------------------------------


def test_the_sweep_table_has_cases_by_implementations_with_spread_and_memory(site):
    section = page(site, f"/workloads/{SWEEP_WORKLOAD}").select_one("section#sweep")
    # Each implementation's column is written in one unit, its spreads too.
    table_rows = rows(section.select_one("table.sweep-table"))
    for column in range(2, len(table_rows[0])):
        units = {word for row in table_rows for word in row[column].split() if word in {"ns", "µs", "ms", "s"}}
        assert len(units) <= 1, (column, units)
    assert text(section.select_one("h2")).startswith("Sweep over vocab_size")
    table = section.select_one("table.sweep-table")
    assert [text(th) for th in table.select("thead th")] == [
        "#",
        "vocab_size",
        "Liger-Kernel · liger median (p20–p80)",
        "Liger-Kernel · liger peak memory",
        "PyTorch · torch median (p20–p80)",
    ]
    assert rows(table) == [
        ["1", "4096", "10.00 µs 9.000 µs–11.00 µs", "512 MB", "15.00 µs 13.50 µs–16.50 µs"],
        ["2", "8192", "20.00 µs 18.00 µs–22.00 µs", "512 MB", "30.00 µs 27.00 µs–33.00 µs"],
        ["3", "16384", "40.00 µs 36.00 µs–44.00 µs", "–", "60.00 µs 54.00 µs–66.00 µs"],
        ["4", "32768", "80.00 µs 72.00 µs–88.00 µs", "–", "not measured"],
    ]
    assert "never ranked" in text(section.select_one("figcaption"))


def test_the_sweep_chart_draws_a_line_and_band_per_implementation_on_a_log_axis(site):
    section = page(site, f"/workloads/{SWEEP_WORKLOAD}").select_one("section#sweep")
    svg = section.select_one("svg")
    assert svg["role"] == "img"
    assert "log scale" in text(svg.select_one("desc"))
    series = svg.select("g.sweep-s0, g.sweep-s1")
    assert len(series) == 2
    liger, torch = series
    assert liger.select_one("path.line")["d"].count("L") == 3 and torch.select_one("path.line")["d"].count("L") == 2
    assert len(liger.select("polygon.band")) == 1 and len(torch.select("polygon.band")) == 1
    assert text(liger.select_one("circle.marker title")) == "Liger-Kernel · liger, vocab_size 4096: 10.00 µs"
    # Numeric, log-spaced axis: each doubling of vocab_size is the same step.
    xs = [float(point["cx"]) for point in liger.select("circle.marker")]
    steps = [round(b - a, 1) for a, b in pairwise(xs)]
    assert max(steps) - min(steps) <= 0.2
    # A doubling of latency is the same rise everywhere on the log latency axis.
    ys = [float(point["cy"]) for point in liger.select("circle.marker")]
    rises = [a - b for a, b in pairwise(ys)]
    assert max(rises) - min(rises) <= 0.2
    assert text(svg.select_one("text.axis-title")) == "vocab_size"
    legend = [text(li) for li in section.select("ul.legend li")]
    assert legend == ["Liger-Kernel · liger", "PyTorch · torch 3 of 4 cases"]


def test_a_run_that_measured_part_of_the_sweep_says_so_in_the_leaderboard(site):
    html = page(site, f"/workloads/{SWEEP_WORKLOAD}")
    ranked = rows(html.select_one("table.ranked"))
    assert [row[3] for row in ranked] == ["28.28 µs geomean", "30.00 µs geomean 3 of 4 cases"]
    twin = site.get(f"/workloads/{SWEEP_WORKLOAD}.json").json()
    assert [row["casesText"] for row in twin["ranked"]] == [None, "3 of 4 cases"]
    assert [column["casesMeasured"] for column in twin["sweep"]["columns"]] == [4, 3]
    assert twin["sweep"]["chart"]["x_scale"] == "log"


def test_two_releases_on_one_gpu_are_two_groups_named_by_their_software(site):
    twin = site.get(f"/workloads/{SWEEP_WORKLOAD}.json").json()
    assert sorted((group["label"], group["selected"]) for group in twin["groups"]) == [
        ("NVIDIA H100 SXM · sweep_kernel 0.5.2", True),
        ("NVIDIA H100 SXM · sweep_kernel 0.6.0", False),
    ]
    other = next(group for group in twin["groups"] if not group["selected"])
    html = page(site, other["url"])
    assert text(html.select_one("#sweep h2")) == "Sweep over vocab_size: NVIDIA H100 SXM · sweep_kernel 0.6.0"
    assert [row[2] for row in rows(html.select_one("table.sweep-table"))] == [
        "20.00 µs 18.00 µs–22.00 µs",
        "40.00 µs 36.00 µs–44.00 µs",
        "80.00 µs 72.00 µs–88.00 µs",
        "160.0 µs 144.0 µs–176.0 µs",
    ]


def test_a_workload_whose_runs_carry_no_case_results_has_no_sweep(site):
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    assert html.select_one("#sweep") is None
    assert site.get(f"/workloads/{NEW_WORKLOAD}.json").json()["sweep"] is None


# --- Reference program, inputs, revisions, attribution ------------------------------------


def test_the_reference_program_is_shown_escaped_and_collapsed(site):
    response = site.get(f"/workloads/{NEW_WORKLOAD}")
    assert '<script>alert("x")</script>' not in response.text
    assert "&lt;script&gt;" in response.text
    html = BeautifulSoup(response.text, "html.parser")
    details = html.select_one("#semantics details.reference")
    assert not details.has_attr("open")
    code = details.select_one("pre code").get_text()
    assert code.startswith("import torch\n") and '<script>alert("x")</script>' in code
    note = text(html.select_one("#reference").find_next_sibling("p"))
    assert "KernelBench/level1/19_ReLU.py" in note and f"sha256 {NEW_SHA[:12]}…" in note
    assert html.select_one("#reference").find_next_sibling("p").select_one(".digest code")["title"] == NEW_SHA
    upstream = html.select_one("#reference").find_next_sibling("p").select_one("a")
    assert upstream["href"] == f"https://raw.example.org/{NEW_SHA[:8]}/KernelBench/level1/19_ReLU.py"
    attribution = details.find_next_sibling("p")
    assert text(attribution).startswith(PROBLEM_SOURCE.attribution)
    assert attribution.select_one("a")["href"] == f"/sources/{PROBLEM_SOURCE.slug}"
    assert "#reference" in [a["href"] for a in html.select("nav.contents a")]


def test_the_input_shapes_are_a_table_in_the_semantics(site):
    table = page(site, f"/workloads/{NEW_WORKLOAD}").select_one("#semantics table")
    assert rows(table)[0] == ["x", "input", "float32", "[16, 16384]", ""]


def test_each_revision_links_the_others_with_content_hash_and_first_publication(site):
    html = page(site, f"/workloads/{NEW_WORKLOAD}")
    revisions = html.select_one("#overview .revisions")
    assert "Revision of level1/19" in text(revisions)
    # Each hash is shortened as every digest is: 12 hex characters, the whole value in its title and copy button.
    assert [" ".join(li.get_text().replace("Copy", "").split()) for li in revisions.select("li")] == [
        f"ReLU (first revision) · superseded (content sha256 {OLD_SHA[:12]}…, first published 2024-11-05)",
        f"This revision · current (content sha256 {NEW_SHA[:12]}…, first published 2025-03-03)",
    ]
    assert [code["title"] for code in revisions.select(".digest code")] == [OLD_SHA, NEW_SHA]
    assert [button["data-copy"] for button in revisions.select(".digest button.copy")] == [OLD_SHA, NEW_SHA]
    assert [a["href"] for a in revisions.select("a")] == [f"/workloads/{OLD_WORKLOAD}"]
    older = page(site, f"/workloads/{OLD_WORKLOAD}").select_one("#overview .revisions")
    assert [a["href"] for a in older.select("a")] == [f"/workloads/{NEW_WORKLOAD}"]
    api = site.get(f"/api/v1/workloads/{NEW_WORKLOAD}").json()["revisions"]
    assert [(r["slug"], r["current"], r["contentSha256"]) for r in api] == [
        (OLD_WORKLOAD, False, OLD_SHA),
        (NEW_WORKLOAD, True, NEW_SHA),
    ]
    assert site.get(f"/workloads/{NEW_WORKLOAD}.json").json()["revisions"] == api
    # A workload whose external id names no revision has none.
    assert site.get(f"/api/v1/workloads/{SWEEP_WORKLOAD}").json()["revisions"] == []
    assert page(site, f"/workloads/{SWEEP_WORKLOAD}").select_one(".revisions") is None


@pytest.mark.parametrize(
    ("path", "source"),
    [
        (f"/workloads/{NEW_WORKLOAD}", PROBLEM_SOURCE),
        (f"/workloads/{SWEEP_WORKLOAD}", SWEEP_SOURCE),
        ("/runs/p-eager-b200", PROBLEM_SOURCE),
        ("/runs/s-torch", SWEEP_SOURCE),
    ],
)
def test_pages_with_a_sources_figures_show_its_attribution_and_licence_link(site, path, source):
    html = page(site, path)
    lines = [node for node in html.select(".attribution") if text(node).startswith(source.attribution)]
    assert lines, f"{path} shows no attribution of {source.slug}"
    assert all(node.select_one("a")["href"] == f"/sources/{source.slug}" for node in lines)


def test_the_run_page_names_the_setup_of_its_group(site):
    html = page(site, "/runs/p-eager-h100-b")
    assert "NVIDIA H100 SXM · Lab Two" in text(html.select_one("#measurement"))


def test_the_run_page_says_how_much_of_the_sweep_a_run_measured(site):
    assert "measured 3 of 4 cases" in text(page(site, "/runs/s-torch").select_one("#measurement"))
    assert page(site, "/runs/s-liger").select_one("#measurement .badge.state-warning") is None
    assert site.get("/runs/s-liger.json").json()["casesMeasured"] is None


def test_the_new_sections_carry_no_inline_style_or_script(site):
    for path in (f"/workloads/{NEW_WORKLOAD}", f"/workloads/{SWEEP_WORKLOAD}"):
        body = site.get(path).text
        assert " style=" not in body
        assert "<script>" not in body
