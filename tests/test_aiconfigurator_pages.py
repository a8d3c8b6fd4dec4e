"""AIConfigurator on the workload page and ``/regressions``: a workload's runs ranked at one case of
its sweep, filtered by framework and version, with version regressions flagged against the
source's noise, over a tiny catalogue of Parquet tables ingested through the adapter.

The MoE workload (DeepSeek-V3's layer, H200) is swept over num_tokens 1, 16 and 256:
- vLLM 0.22.0 and 0.24.0 run the same kernel; 0.24.0 is 30 % slower at num_tokens=16 (the planted
  regression), 2 % slower at num_tokens=1 (within the noise: not one) and faster at 256;
- SGLang measured num_tokens 1 and 16 only; TensorRT-LLM all three.
A GEMM table where vLLM and SGLang both call ``torch.nn.functional.linear`` gives the noise
estimate: their ratios over 40 shapes are 1.00, 1.01, 1.02 and 1.03 in turn, so its 95th
percentile of |ratio − 1| is 3 %.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.db.regression_tables import RegressionNoise, VersionRegression
from kernelindex.db.tables import Run, Workload
from kernelindex.ingest.sources import ingest
from kernelindex.settings import Settings
from kernelindex.store import regressions
from kernelindex.store.regressions import refresh_regressions, refresh_source_regressions
from kernelindex.web import case_window
from tests.multi_gpu_catalogue import NEW_WORKLOAD, SWEEP_WORKLOAD, write_catalogue
from tests.pages import page, text

MOE = {
    "op_name": "moe",
    "moe_dtype": "fp8_block",
    "hidden_size": 7168,
    "inter_size": 2048,
    "topk": 8,
    "num_experts": 256,
    "moe_tp_size": 1,
    "moe_ep_size": 8,
    "distribution": "balanced",
}
TOKENS = [1, 16, 256]
# (folder framework, version, framework as the rows write it, kernel, latency in ms per num_tokens)
MOE_RUNS = [
    ("vllm", "0.22.0", "VLLM", "vllm_fused_moe", [0.010, 0.050, 0.200]),
    ("vllm", "0.24.0", "VLLM", "vllm_fused_moe", [0.0102, 0.065, 0.190]),
    ("sglang", "0.5.10", "SGLang", "sglang_fused_moe_triton", [0.009, 0.060, None]),
    ("trtllm", "1.3.0rc20", "TRTLLM", "moe_torch_flow", [0.008, 0.045, 0.170]),
]
GEMM_M = list(range(1, 41))
GEMM_KERNEL = "torch.nn.functional.linear"


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_tables(root: Path) -> Path:
    data = root / "data" / "h200_sxm"
    for folder, version, written, kernel, latencies in MOE_RUNS:
        rows = [
            {"framework": written, "version": version, "device": "NVIDIA H200", "kernel_source": kernel, **MOE}
            | {"num_tokens": tokens, "latency": latency}
            for tokens, latency in zip(TOKENS, latencies, strict=True)
            if latency is not None
        ]
        _write(data / "moe" / folder / version / "moe_perf.parquet", rows)
    for folder, version, written, factor in (("vllm", "0.22.0", "VLLM", 0), ("sglang", "0.5.10", "SGLang", 1)):
        rows = [
            {
                "framework": written,
                "version": version,
                "device": "NVIDIA H200",
                "op_name": "gemm",
                "kernel_source": GEMM_KERNEL,
                "gemm_dtype": "bfloat16",
                "m": m,
                "n": 4096,
                "k": 4096,
                # SGLang's figure is vLLM's × 1.00, 1.01, 1.02, 1.03 in turn.
                "latency": 0.1 * (1 + factor * (m % 4) / 100),
            }
            for m in GEMM_M
        ]
        _write(data / "gemm" / folder / version / "gemm_perf.parquet", rows)
    return root


@pytest.fixture
def catalogue(db, tmp_path):  # type: ignore[no-untyped-def]
    root = write_tables(tmp_path / "aic")
    summary = ingest(
        db.sessions,
        Settings(database_url=db.url),
        "aiconfigurator",
        options={"data_dir": str(root), "data_version": "0.12.0"},
    )
    assert summary.status == "succeeded", summary.errors
    refresh_source_regressions(db.sessions, "aiconfigurator")
    return db


@pytest.fixture
def site(make_app, catalogue) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(make_app(catalogue)) as client:
        yield client


@pytest.fixture
def moe(catalogue) -> str:  # type: ignore[no-untyped-def]
    with catalogue.sessions() as session:
        return session.scalar(select(Workload.name).where(Workload.name.like("aic-moe-%")))


def run_name(db, version: str, kernel: str = "vllm_fused_moe") -> str:  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        for run in session.scalars(select(Run).where(Run.name.like("aic-moe-%"))):
            metrics = run.manifest_json
            if f'"version":"{version}"' in metrics and f'"kernel_source":"{kernel}"' in metrics:
                return run.name
    raise AssertionError(f"no run of {version} {kernel}")


def ranked_rows(soup: BeautifulSoup) -> list[list[str]]:
    table = soup.select_one("#case-ranking table.case-ranked")
    assert table is not None
    return [[text(cell) for cell in tr.select("td")][:7] for tr in table.select("tbody tr")]


# --- The per-case ranking ------------------------------------------------------------------


def test_a_case_ranks_every_framework_and_version_by_its_latency_there(site, moe):
    soup = page(site, f"/workloads/{moe}?case=1")
    assert text(soup.select_one("#h-case-ranking")).startswith("Per case: num_tokens=16")
    assert ranked_rows(soup) == [
        [
            "1",
            "TensorRT-LLM 1.3.0rc20 · moe_torch_flow",
            "TensorRT-LLM",
            "1.3.0rc20",
            "moe_torch_flow",
            "45.00 µs mean",
            "1.00×",
        ],
        ["2", "vLLM 0.22.0 · vllm_fused_moe", "vLLM", "0.22.0", "vllm_fused_moe", "50.00 µs mean", "1.11×"],
        [
            "3",
            "SGLang 0.5.10 · sglang_fused_moe_triton",
            "SGLang",
            "0.5.10",
            "sglang_fused_moe_triton",
            "60.00 µs mean",
            "1.33×",
        ],
        ["4", "vLLM 0.24.0 · vllm_fused_moe", "vLLM", "0.24.0", "vllm_fused_moe", "65.00 µs mean", "1.44×"],
    ]
    selected = soup.select_one("#case-ranking select[name=case] option[selected]")
    assert selected is not None and selected["value"] == "1" and "num_tokens=16" in text(selected)


def test_only_the_planted_regression_is_flagged_and_it_links_both_runs(site, catalogue, moe):
    newer, older = run_name(catalogue, "0.24.0"), run_name(catalogue, "0.22.0")
    soup = page(site, f"/workloads/{moe}?case=1")
    flagged = soup.select("#case-ranking tr.regressed")
    assert len(flagged) == 1
    assert text(flagged[0].select_one(".regression")) == "slower than vLLM 0.22.0 by 30%"
    links = {a["href"] for a in flagged[0].select("a")}
    assert {f"/runs/{newer}", f"/runs/{older}"} <= links
    # 2 % slower at num_tokens=1 is within the 3 % noise; faster at 256 is no regression.
    for case in (0, 2):
        assert not page(site, f"/workloads/{moe}?case={case}").select("#case-ranking tr.regressed")
    note = text(page(site, f"/workloads/{moe}?case=1").select_one("#case-ranking .regression-noise"))
    assert "by more than 3%" in note and "95th percentile of |ratio − 1| over 40 pairs" in note


def test_a_run_that_did_not_measure_the_case_is_listed_apart(site, moe):
    soup = page(site, f"/workloads/{moe}?case=2")
    assert [row[1] for row in ranked_rows(soup)] == [
        "TensorRT-LLM 1.3.0rc20 · moe_torch_flow",
        "vLLM 0.24.0 · vllm_fused_moe",
        "vLLM 0.22.0 · vllm_fused_moe",
    ]
    assert [text(li) for li in soup.select("#case-ranking .not-measured-runs li")] == [
        "SGLang 0.5.10 · sglang_fused_moe_triton"
    ]


def test_without_a_case_the_page_opens_on_the_case_most_runs_measured(site, moe):
    soup = page(site, f"/workloads/{moe}")
    # num_tokens 1 and 16 were measured by all four runs; the middle of the two (in sweep order) is 1.
    assert text(soup.select_one("#h-case-ranking")).startswith("Per case: num_tokens=1 ")
    assert "no case was chosen" in text(soup.select_one("#case-ranking"))


def test_the_json_twin_holds_the_same_ranking(site, catalogue, moe):
    body = site.get(f"/workloads/{moe}.json?case=1").json()["caseRanking"]
    assert body["caseIndex"] == 1 and body["caseLabel"] == "num_tokens=16" and body["defaultCase"] is False
    assert [(row["rank"], row["framework"], row["version"], row["latencyNs"]) for row in body["rows"]] == [
        (1, "TensorRT-LLM", "1.3.0rc20", 45_000),
        (2, "vLLM", "0.22.0", 50_000),
        (3, "SGLang", "0.5.10", 60_000),
        (4, "vLLM", "0.24.0", 65_000),
    ]
    flag = body["rows"][3]["regressions"]
    assert [(f["olderVersion"], f["olderRun"], round(f["slowdown"], 6)) for f in flag] == [
        ("0.22.0", run_name(catalogue, "0.22.0"), 0.3)
    ]
    assert body["noiseBound"] == pytest.approx(0.03)
    # Noise found from two frameworks calling one function bounds no figure: each row is ranked by its
    # figure alone, its place certain, and marked so.
    assert [
        (row["rankRange"], row["rankText"], row["distinctFromBest"], row["uncertainty"]) for row in body["rows"]
    ] == [
        ([1, 1], "1", False, None),
        ([2, 2], "2", True, None),
        ([3, 3], "3", True, None),
        ([4, 4], "4", True, None),
    ]
    assert body["headline"] == "#1"
    assert "4 figures of unknown spread" in body["uncertaintyNote"]
    assert [link["label"] for link in body["versionLinks"]] == [
        "SGLang 0.5.10",
        "TensorRT-LLM 1.3.0rc20",
        "vLLM 0.22.0",
        "vLLM 0.24.0",
    ]


# --- Long sweeps, a window of cases at a time ----------------------------------------------


@pytest.fixture
def two_cases_a_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(case_window, "CASES_PER_PAGE", 2)


def shown_cases(soup: BeautifulSoup) -> dict[str, list[str]]:
    return {
        "sweep": [text(tr.select_one("td")) for tr in soup.select("#sweep table.sweep-table tbody tr")],
        "cases": [text(tr.select_one("td")) for tr in soup.select("table.cases tbody tr")],
        "select": [option["value"] for option in soup.select('#case-ranking select[name="case"] option')],
        "markers": [len(group.select("circle.marker")) for group in soup.select("#sweep svg g")],
    }


def test_a_short_sweep_shows_every_case_without_a_pager(site, moe):
    soup = page(site, f"/workloads/{moe}")
    assert shown_cases(soup)["cases"] == ["1", "2", "3"] and shown_cases(soup)["sweep"] == ["1", "2", "3"]
    assert soup.select("nav.case-pager") == []
    assert site.get(f"/workloads/{moe}.json").json()["casePager"] is None


def test_a_long_sweep_shows_one_window_of_cases_with_links_to_the_next(site, moe, two_cases_a_page):
    soup = page(site, f"/workloads/{moe}")
    shown = shown_cases(soup)
    assert shown["sweep"] == ["1", "2"] and shown["cases"] == ["1", "2"] and shown["select"] == ["0", "1"]
    # TensorRT-LLM and the vLLM runs measured both cases; SGLang's line too (it lacks only the third).
    assert shown["markers"] == [2, 2, 2, 2]
    pagers = soup.select("nav.case-pager")
    assert [text(nav) for nav in pagers] == ["Cases 1–2 of 3 (page 1 of 2) Next cases →"] * 2
    assert [nav.select_one("a[rel=next]")["href"] for nav in pagers] == [
        f"/workloads/{moe}?cases=2#sweep",
        f"/workloads/{moe}?cases=2#cases",
    ]

    later = shown_cases(page(site, f"/workloads/{moe}?cases=2"))
    # The chosen case (the default, num_tokens=1) stays selectable beside the window's.
    assert later["sweep"] == ["3"] and later["cases"] == ["3"] and later["select"] == ["0", "2"]
    # SGLang did not measure num_tokens=256: its line has no point in this window.
    assert sorted(later["markers"]) == [0, 1, 1, 1]


def test_a_chosen_case_opens_the_window_that_holds_it(site, moe, two_cases_a_page):
    soup = page(site, f"/workloads/{moe}?case=2&framework=vLLM")
    assert shown_cases(soup)["cases"] == ["3"]
    previous = soup.select_one("nav.case-pager a[rel=prev]")
    assert previous is not None and previous["href"] == f"/workloads/{moe}?case=2&framework=vLLM&cases=1#sweep"
    assert text(soup.select_one("#h-case-ranking")).startswith("Per case: num_tokens=256")


def test_the_json_twin_shows_the_same_window(site, moe, two_cases_a_page):
    body = site.get(f"/workloads/{moe}.json?cases=2").json()
    assert body["casePager"] | {"sweepNextUrl": None} == {
        "first": 3,
        "last": 3,
        "total": 3,
        "page": 2,
        "pageCount": 2,
        "sweepPreviousUrl": f"/workloads/{moe}?cases=1#sweep",
        "sweepNextUrl": None,
        "tablePreviousUrl": f"/workloads/{moe}?cases=1#cases",
        "tableNextUrl": None,
    }
    assert [case["index"] for case in body["cases"]] == [3]
    assert [row["index"] for row in body["sweep"]["rows"]] == [3] and body["sweep"]["caseCount"] == 3


@pytest.mark.parametrize("value", ["3", "0", "-1", "x", "%C2%B2", "9" * 30])
def test_a_window_past_the_last_is_a_clear_400(site, moe, two_cases_a_page, value):
    for suffix in ("", ".json"):
        response = site.get(f"/workloads/{moe}{suffix}?cases={value}")
        assert response.status_code == 400, response.text
        body = response.json()["detail"] if suffix else response.text.replace("&#39;", "'")
        assert "cases must be a page of this workload's cases, 1 to 2 (2 cases a page)" in body


# --- Framework and version filters ---------------------------------------------------------


def test_a_framework_filter_narrows_the_ranking_and_the_sweep(site, moe):
    soup = page(site, f"/workloads/{moe}?case=1&framework=vllm")
    assert [(row[0], row[3]) for row in ranked_rows(soup)] == [("2", "0.22.0"), ("4", "0.24.0")]
    assert [text(li) for li in soup.select("#sweep .legend li")] == [
        "vLLM 0.22.0 · vllm_fused_moe",
        "vLLM 0.24.0 · vllm_fused_moe",
    ]
    current = soup.select_one("#case-ranking nav.case-filters strong[aria-current]")
    assert current is not None and text(current) == "vLLM"
    assert text(soup.select_one("#sweep .sweep-filter")).startswith("Only the runs of vLLM, as filtered")


def test_a_version_filter_keeps_one_version(site, moe):
    soup = page(site, f"/workloads/{moe}?case=1&framework=vLLM&version=0.24.0")
    assert [(row[0], row[2], row[3]) for row in ranked_rows(soup)] == [("4", "vLLM", "0.24.0")]
    assert [text(li) for li in soup.select("#sweep .legend li")] == ["vLLM 0.24.0 · vllm_fused_moe"]


def test_the_filter_links_keep_the_chosen_case(site, moe):
    soup = page(site, f"/workloads/{moe}?case=2")
    links = {text(a): a["href"] for a in soup.select("#case-ranking nav.case-filters a")}
    assert links["SGLang"] == f"/workloads/{moe}?case=2&framework=SGLang#case-ranking"
    assert links["vLLM 0.24.0"] == f"/workloads/{moe}?case=2&framework=vLLM&version=0.24.0#case-ranking"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("case=3", "case must be a case index from 0 to 2"),
        ("case=-1", "case must be a whole number"),
        ("case=abc", "case must be a whole number"),
        ("case=%C2%B2", "case must be a whole number"),
        ("case=99999999999999999999", "case must be a whole number"),
        ("framework=pytorch", "framework 'pytorch' has no run in this comparison group; frameworks here: SGLang"),
        ("framework=vLLM&version=0.5.10", "version '0.5.10' is not one vLLM has in this comparison group"),
        ("version=9.9", "version '9.9' is not one the runs have"),
        ("cases=2", "cases must be a page of this workload's cases, 1 (200 cases a page); got '2'"),
    ],
)
def test_bad_parameters_are_a_clear_400(site, moe, query, message):
    for suffix in ("", ".json"):
        response = site.get(f"/workloads/{moe}{suffix}?{query}")
        assert response.status_code == 400, response.text
        assert message in (response.json()["detail"] if suffix else response.text.replace("&#39;", "'"))


def test_a_sweep_whose_runs_name_no_framework_refuses_a_framework_filter(make_app, db):
    write_catalogue(db.sessions)
    with TestClient(make_app(db)) as client:
        assert page(client, f"/workloads/{SWEEP_WORKLOAD}?case=3").select_one("#case-ranking")
        response = client.get(f"/workloads/{SWEEP_WORKLOAD}.json?framework=vLLM")
        assert response.status_code == 400
        assert "name no framework or version" in response.json()["detail"]
        single = client.get(f"/workloads/{NEW_WORKLOAD}.json?case=0")
        assert single.status_code == 400 and "no per-case results" in single.json()["detail"]


# --- /regressions ----------------------------------------------------------------------------


def test_regressions_lists_the_planted_one_with_both_runs_linked(site, catalogue, moe):
    soup = page(site, "/regressions")
    rows = soup.select("table.regressions tbody tr")
    assert len(rows) == 1
    cells = [text(cell) for cell in rows[0].select("td")]
    assert cells[1:] == [
        "num_tokens=16",
        "NVIDIA H200",
        "vLLM · vllm_fused_moe",
        "vLLM 0.24.0 65.00 µs",
        "vLLM 0.22.0 50.00 µs",
        "30%",
    ]
    assert rows[0].select_one("a.newer-run")["href"] == f"/runs/{run_name(catalogue, '0.24.0')}"
    assert rows[0].select_one("a.older-run")["href"] == f"/runs/{run_name(catalogue, '0.22.0')}"
    link = rows[0].select_one("td a")["href"]
    assert link.startswith(f"/workloads/{moe}?group=") and link.endswith("&case=1#case-ranking")
    assert page(site, link).select("#case-ranking tr.regressed")
    assert "noise bound 3%" in text(soup.select_one(".regression-noise"))


def test_the_regressions_json_twin_and_its_filters(site, catalogue):
    body = site.get("/regressions.json?gpu=h200&framework=vllm").json()
    assert body["total"] == 1 and body["gpu"] == "h200" and body["framework"] == "vLLM"
    (row,) = body["regressions"]
    assert (row["newerVersion"], row["olderVersion"], row["newerLatencyNs"], row["olderLatencyNs"]) == (
        "0.24.0",
        "0.22.0",
        65_000,
        50_000,
    )
    assert body["noise"][0]["pairs"] == 40 and body["noise"][0]["estimated"] is True
    assert site.get("/regressions.json?gpu=b200").json()["total"] == 0


def test_regressions_filter_by_workload_and_by_kernel(site, catalogue, moe):
    soup = page(site, "/regressions?gpu=h200")
    row = soup.select_one("table.regressions tbody tr")
    only_workload = row.select_one("a.filter-link[href*='workload=']")["href"]
    only_kernel = row.select_one("a.filter-link[href*='kernel=']")["href"]
    assert only_workload == f"/regressions?gpu=h200&workload={moe}"
    assert only_kernel == "/regressions?gpu=h200&kernel=vllm_fused_moe"
    by_workload = site.get(only_workload.replace("/regressions", "/regressions.json", 1)).json()
    assert by_workload["total"] == 1 and by_workload["workload"] == moe
    by_kernel = site.get("/regressions.json?kernel=VLLM_FUSED_MOE&framework=vllm").json()  # in any case
    assert by_kernel["total"] == 1 and by_kernel["kernel"] == "vllm_fused_moe"
    # Another workload, or a kernel with no regression, narrows to nothing or is refused.
    with catalogue.sessions() as session:
        other = session.scalar(select(Workload.name).where(Workload.name != moe).limit(1))
    assert site.get(f"/regressions.json?workload={other}").json()["total"] == 0
    narrowed = page(site, f"/regressions?workload={moe}")
    assert f"Workload: {by_workload['workloadTitle']} · every workload" in text(narrowed.select_one("nav.filters"))
    assert narrowed.select_one("nav.filters a[href='/regressions']") is not None


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("workload=no-such-workload", "No workload has the slug 'no-such-workload'."),
        ("kernel=no_such_kernel", "No version regression is recorded for kernel 'no_such_kernel'."),
        ("gpu=h2000", "No GPU has the slug 'h2000'. Did you mean"),
        ("framework=vlm", "No version regression is recorded for framework 'vlm'. Did you mean vLLM?"),
        ("page=2", "page 2 is past the last page (1)"),
        ("page=0", "page must be a whole number"),
    ],
)
def test_bad_regression_filters_are_a_clear_400(site, query, message):
    response = site.get(f"/regressions.json?{query}")
    assert response.status_code == 400 and message in response.json()["detail"]


# --- The refresh --------------------------------------------------------------------------


def test_a_refresh_writes_the_same_rows_again_and_may_cover_some_workloads(catalogue, moe):
    with catalogue.sessions() as session:
        source_id = session.scalar(select(Workload.source_id).where(Workload.name == moe))
        workload_id = session.scalar(select(Workload.id).where(Workload.name == moe))

        def rows() -> list[tuple[int, int, float]]:
            found = session.execute(
                select(VersionRegression.case_index, VersionRegression.newer_run_id, VersionRegression.slowdown)
            )
            return sorted(tuple(row) for row in found)

        before = rows()
        again = refresh_regressions(session, source_id)
        assert rows() == before and again.regressions == 1 and again.noise.bound == pytest.approx(0.03)
        partial = refresh_regressions(session, source_id, [workload_id])
        assert partial.workloads == 1 and rows() == before
        assert session.scalar(select(func.count()).select_from(RegressionNoise)) == 1


def _regression_rows(session: Any) -> list[tuple[Any, ...]]:
    found = session.execute(
        select(
            VersionRegression.workload_id,
            VersionRegression.case_index,
            VersionRegression.newer_run_id,
            VersionRegression.older_run_id,
            VersionRegression.slowdown,
        )
    )
    return sorted(tuple(row) for row in found)


@pytest.mark.parametrize("workers_die", [False, True], ids=["workers", "workers-die"])
def test_a_refresh_in_worker_processes_finds_what_one_process_finds(catalogue, monkeypatch, workers_die):
    with catalogue.sessions() as session:
        source_id = session.scalar(select(Workload.source_id).where(Workload.name.like("aic-%")).limit(1))
        alone = refresh_regressions(session, source_id)
        before = _regression_rows(session)
        assert before, "the catalogue holds regressions to compare"

        monkeypatch.setattr(regressions, "PARALLEL_FROM", 1)
        monkeypatch.setattr(regressions, "WORKLOADS_PER_TASK", 1)
        monkeypatch.setattr(regressions.os, "cpu_count", lambda: 2)
        if workers_die:
            # The second task's worker dies: what it had not returned is compared here.
            submitted = regressions.ProcessPoolExecutor.submit
            calls = iter(range(10**6))

            def submit(pool, *args):
                future = submitted(pool, *args)
                if next(calls) == 1:
                    future.result = _raise_broken_pool
                return future

            monkeypatch.setattr(regressions.ProcessPoolExecutor, "submit", submit)
        spread = refresh_regressions(session, source_id)
        assert _regression_rows(session) == before
        assert (spread.workloads, spread.regressions, spread.noise) == (alone.workloads, alone.regressions, alone.noise)


def _raise_broken_pool(timeout: float | None = None) -> None:
    raise BrokenProcessPool("a worker died")
