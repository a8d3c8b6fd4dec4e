"""An implementation's page: its counts, one row per workload and GPU with its best run there,
page by page, filtered by GPU and by source; bad page and filter values are refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.multi_gpu_catalogue import NEW_WORKLOAD, OLD_WORKLOAD, SWEEP_WORKLOAD, write_catalogue
from tests.pages import page as html
from tests.pages import text


@pytest.fixture
def site(make_app, db) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    write_catalogue(db.sessions)
    with TestClient(make_app(db)) as client:
        yield client


def rows(client: TestClient, path: str) -> list[tuple[str, str, int, str | None]]:
    """(workload, GPU, runs there, best run) of each row of the page's JSON twin."""
    response = client.get(path)
    assert response.status_code == 200, response.text
    return [
        (w["slug"], w["gpu"], w["runs"], w["best"]["run"] if w["best"] else None) for w in response.json()["workloads"]
    ]


def test_an_implementation_on_several_gpus_shows_its_best_run_per_workload_and_gpu(site):
    assert rows(site, "/implementations/pytorch.json") == [
        (NEW_WORKLOAD, "b200", 2, "p-compile-b200"),
        (NEW_WORKLOAD, "h100-sxm", 3, "p-compile-h100-a"),
        # The failed run is faster; a figure is only ever an eligible run's.
        (NEW_WORKLOAD, "l40s", 2, "p-eager-l40s"),
        (OLD_WORKLOAD, "b200", 1, "p-old-eager-b200"),
        (SWEEP_WORKLOAD, "h100-sxm", 1, "s-torch"),
    ]
    page = html(site, "/implementations/pytorch")
    assert text(page.select_one("p.lede")).startswith("9 runs on 3 workloads, 3 GPUs ·")
    body = page.select("table.data tbody tr")
    assert len(body) == 5
    sweep = text(body[-1])
    assert "NVIDIA H100 SXM" in sweep and "2 of 2" in sweep  # Liger-Kernel leads that group
    assert [a["href"] for a in body[-1].select("a")][:3] == [
        f"/workloads/{SWEEP_WORKLOAD}",
        "/gpus/h100-sxm",
        "/runs/s-torch",
    ]


def test_an_implementation_page_filters_by_gpu_and_by_source(site):
    page = html(site, "/implementations/pytorch")
    gpus = {text(a): a["href"] for a in page.select('nav[aria-label="GPU"] a')}
    assert gpus == {
        "Every GPU 9": "/implementations/pytorch",
        "NVIDIA B200 3": "/implementations/pytorch?gpu=b200",
        "NVIDIA H100 SXM 4": "/implementations/pytorch?gpu=h100-sxm",
        "NVIDIA L40S 2": "/implementations/pytorch?gpu=l40s",
    }
    sources = [text(a) for a in page.select('nav[aria-label="Source"] a')]
    assert sources == ["Every source 9", "Problem Bench 8", "Sweep Bench 1"]
    assert rows(site, "/implementations/pytorch.json?gpu=H100-SXM") == [
        (NEW_WORKLOAD, "h100-sxm", 3, "p-compile-h100-a"),
        (SWEEP_WORKLOAD, "h100-sxm", 1, "s-torch"),
    ]
    assert rows(site, "/implementations/pytorch.json?gpu=h100-sxm&source=sweeps") == [
        (SWEEP_WORKLOAD, "h100-sxm", 1, "s-torch")
    ]
    # A filter keeps the other one in its links.
    filtered = html(site, "/implementations/pytorch?gpu=h100-sxm")
    assert filtered.select_one('nav[aria-label="Source"] a[href$="source=sweeps"]')["href"] == (
        "/implementations/pytorch?gpu=h100-sxm&source=sweeps"
    )
    assert filtered.select_one('nav[aria-label="GPU"] a[aria-current="page"]')["href"].endswith("gpu=h100-sxm")


def test_an_implementation_on_one_gpu_from_one_source_offers_no_filter(site):
    page = html(site, "/implementations/liger-kernel")
    assert page.select('nav[aria-label="GPU"]') == [] and page.select('nav[aria-label="Source"]') == []
    assert text(page.select_one("p.lede")).startswith("2 runs on 1 workload, 1 GPU ·")


def test_a_known_gpu_it_has_no_run_on_shows_no_row(site):
    page = html(site, "/implementations/pytorch?gpu=h200")
    assert text(page.select_one("table.data tbody")) == "No run that matches."
    assert "Page 1 of 1 · 0 workload–GPU pairs" in text(page.select_one("nav.pager"))


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("gpu=nope", "No GPU has the slug"),
        ("source=nope", "No source has the slug"),
        ("page=0", "page must be a whole number"),
        ("page=two", "page must be a whole number"),
        ("page=2", "past the last page"),
    ],
)
def test_bad_filters_and_pages_are_refused(site, query, detail):
    for path in ("/implementations/pytorch", "/implementations/pytorch.json"):
        response = site.get(f"{path}?{query}")
        assert response.status_code == 400, response.text
        assert detail in response.text


def test_a_long_implementation_page_is_split_into_pages(client):
    first = client.get("/implementations/geometric.json").json()
    assert (first["runCount"], first["workloadCount"], first["gpuCount"]) == (91, 64, 1)
    assert (first["total"], first["page"], first["pageCount"], len(first["workloads"])) == (64, 1, 2, 50)
    assert first["nextUrl"] == "/implementations/geometric?page=2" and first["previousUrl"] is None
    second = client.get("/implementations/geometric.json?page=2").json()
    assert len(second["workloads"]) == 14 and second["nextUrl"] is None
    assert second["previousUrl"] == "/implementations/geometric"
    slugs = [w["slug"] for w in first["workloads"] + second["workloads"]]
    assert slugs == sorted(set(slugs)) and len(slugs) == 64
    page = html(client, "/implementations/geometric?page=2")
    assert len(page.select("table.data tbody tr")) == 14
    assert "Page 2 of 2 · 64 workload–GPU pairs" in text(page.select_one("nav.pager"))
    assert page.select_one('nav.pager a[rel="prev"]')["href"] == "/implementations/geometric"
