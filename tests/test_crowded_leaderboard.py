"""A leaderboard with more implementations than a page shows: the matrix across GPUs and the
implementations table list a page of them, and say where the rest are."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from kernelindex.store.batch import Batch, RunRecord
from kernelindex.store.ingest import apply_batch, ensure_source
from tests.multi_gpu_catalogue import (
    NEW_SHA,
    NOW,
    PROBLEM_SOURCE,
    digests,
    environment,
    implementation,
    problem_workload,
    protocol,
    run,
)
from tests.pages import page, text

SLUG = "problem-l1-19-relu-crowded"
KERNELS = 60


def crowded_batch() -> Batch:
    """60 implementations, each measured once on a B200 and once on an H100; kernel 0 the slowest."""
    timing = protocol("problem-timing", "mean")
    gpus = {
        "b200": environment("crowd-b200", "NVIDIA B200", {}, provider="Cloud One"),
        "h100": environment("crowd-h100", "NVIDIA H100 SXM", {}, provider="Cloud One"),
    }
    kernels = [implementation(f"kernel-{n:02d}", f"Kernel {n:02d}", f"Kernel {n:02d}", "1") for n in range(KERNELS)]
    workload = problem_workload(SLUG, NEW_SHA, "ReLU, crowded")
    runs = [
        RunRecord(
            manifest=run(
                f"crowd-{kernel.metadata.name}-{gpu}",
                {"mean": (KERNELS - n) * 1_000 + (0 if gpu == "b200" else 500)},
                "mean",
                datetime(2025, 3, 1, tzinfo=UTC),
                digests(workload, timing, gpus[gpu], kernel),
            ),
            implementation=kernel.metadata.name,
            protocol=timing.metadata.name,
            environment=gpus[gpu].metadata.name,
            external_id=f"{kernel.metadata.name}-{gpu}",
        )
        for n, kernel in enumerate(kernels)
        for gpu in gpus
    ]
    return Batch(
        unit="crowded",
        workload=workload,
        external_id="level1/19@crowded",
        protocols=[timing],
        environments=list(gpus.values()),
        implementations=kernels,
        runs=runs,
    )


@pytest.fixture
def site(make_app, db) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with db.sessions() as session:
        apply_batch(session, ensure_source(session, PROBLEM_SOURCE), crowded_batch(), NOW)
        session.commit()
    with TestClient(make_app(db)) as client:
        yield client


def matrix_titles(client: TestClient, query: str = "") -> list[str]:
    html = page(client, f"/workloads/{SLUG}{query}")
    return [text(th) for th in html.select("table.matrix tbody th")]


def test_the_matrix_lists_fifty_implementations_a_page_by_name(site):
    html = page(site, f"/workloads/{SLUG}")
    assert matrix_titles(site) == [f"Kernel {n:02d}" for n in range(50)]
    pager = html.select_one('nav[aria-label="Implementations across GPUs"]')
    assert "Implementations 1–50 of 60, by name" in text(pager)
    assert pager.select_one("a[rel=next]")["href"] == f"/workloads/{SLUG}?matrix=2#across-gpus-matrix"
    assert matrix_titles(site, "?matrix=2") == [f"Kernel {n:02d}" for n in range(50, 60)]
    # Each GPU's figure is over every implementation, not the page's.
    assert [text(tr.select("td")[0]) for tr in html.select("table.cross-gpu tbody tr")] == [
        "1.000 µs mean",
        "1.500 µs mean",
    ]


def test_a_matrix_page_past_the_last_is_a_clear_400(site):
    for path in (f"/workloads/{SLUG}?matrix=3", f"/workloads/{SLUG}.json?matrix=3"):
        response = site.get(path)
        assert response.status_code == 400
        assert "matrix page 3 is past the last page of the table across GPUs (2)" in response.text


def test_the_json_twin_holds_the_page_of_the_matrix_once_and_the_api_every_line(site):
    twin = site.get(f"/workloads/{SLUG}.json?matrix=2").json()
    view = twin["crossGpu"]
    assert (view["implementationCount"], view["firstImplementation"], len(view["implementations"])) == (60, 51, 10)
    # The page's drawing of the same figures is not repeated in its JSON.
    assert not {"crossGpuRows", "crossGpuChart", "crossGpuFastest"} & set(twin)
    api = site.get(f"/api/v1/workloads/{SLUG}").json()["crossGpu"]
    assert [line["implementation"] for line in api["implementations"]] == [f"kernel-{n:02d}" for n in range(60)]
    assert (api["implementationCount"], api["firstImplementation"]) == (60, 1)


def test_the_implementations_table_shows_the_fastest_fifty_and_links_the_rest(site):
    html = page(site, f"/workloads/{SLUG}")
    section = html.select_one("section#implementations")
    shown = [text(tr.select_one("td a")) for tr in section.select("tbody tr")]
    assert shown == [f"Kernel {n:02d}" for n in range(59, 9, -1)]
    note = section.select_one("p.note")
    assert "The fastest 50 of 60 implementations" in text(note)
    rest = page(site, note.select_one("a")["href"].split("#")[0])
    ranked = [text(tr.select_one("td a[href^='/implementations/']")) for tr in rest.select("table.ranked tbody tr")]
    assert ranked == [f"Kernel {n:02d}" for n in range(9, -1, -1)]
    assert site.get(f"/workloads/{SLUG}.json").json()["implementationCount"] == 60
