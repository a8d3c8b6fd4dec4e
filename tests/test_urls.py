"""Every link the URL builder makes is answered by a route of the app, and encodes what it carries."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.routing import Match

from kernelindex import urls
from kernelindex.app import create_app
from kernelindex.settings import Settings

DIGEST = "sha256:" + "ab" * 32

BUILT = [
    urls.home(),
    urls.workloads(collection="L1", page=2),
    urls.workload("l1-040-conv2d-residual-block"),
    urls.workload_group("l1-040-conv2d-residual-block", DIGEST, sort="observed"),
    urls.workload_feed("l1-040-conv2d-residual-block"),
    urls.workload_citation("l1-040-conv2d-residual-block", "bib", as_of="2026-08-01"),
    urls.run("sol-submission-16893"),
    urls.run_citation("sol-submission-16893", "csl.json"),
    urls.attestation("attestation-1"),
    urls.implementation("geometric"),
    urls.gpu("b200"),
    urls.gpu("h100-sxm", source="kernelbench", measured="false", page=2),
    urls.gpus(),
    urls.model("nafnet"),
    urls.source("sol-execbench"),
    urls.sources(),
    urls.protocol("kernelindex-rerun-v1"),
    urls.manifest(DIGEST),
    urls.schema("BenchmarkRun"),
    urls.rerun_bundle("b" * 32),
    urls.rerun_source("kernelindex-039-triton"),
    urls.records(before="2026-08-01T00:00:00+00:00"),
    urls.records_feed(),
    urls.figures(),
    urls.figures("sol-score"),
    urls.regressions(gpu="h200", framework="vLLM", page=2),
    urls.search("conv2d", kind="workload"),
    urls.compare(["a", "b"]),
    urls.compare(["a", "b"], fmt="csv"),
    urls.signin("/account"),
    urls.catalogue_export(),
    urls.api_docs(),
    urls.api_compare(["a", "b"]),
    urls.json_twin("/workloads/l1-040-conv2d-residual-block?group=abc"),
    urls.json_twin("/"),
    urls.api_workload("l1-040-conv2d-residual-block"),
    urls.api_workload_top("aic-moe-c9871ce8a622e8b8", gpu="h200", case="num_tokens=4096"),
    urls.api_run("sol-submission-16893"),
    urls.api_runs(workload="l1-040-conv2d-residual-block", comparison_key=DIGEST),
    urls.api_implementation("geometric"),
    urls.api_gpu("b200"),
    urls.api_gpu_workloads("b200", measured="true"),
    urls.api_model("nafnet"),
    urls.api_source("sol-execbench"),
    urls.submit(),
    urls.user("ada"),
    urls.json_twin(urls.user("ada")),
    urls.submission("3f9a0c1d2e4b"),
    urls.json_twin(urls.submission("3f9a0c1d2e4b")),
]


POSTED = [
    urls.run_attestations("sol-submission-16893"),
    urls.run_reports("sol-submission-16893"),
    urls.submit(),
    urls.api_submissions(),
    urls.submission_withdrawal("3f9a0c1d2e4b"),
    *(urls.admin_submission("3f9a0c1d2e4b", decision) for decision in ("accept", "reject", "request-changes")),
]


@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    unused = tmp_path_factory.mktemp("urls") / "unused.db"  # routes are matched, never served
    app = create_app(Settings(database_url=f"sqlite:///{unused}", secret_key="k" * 64))
    return app.routes


@pytest.mark.parametrize(("method", "url"), [("GET", url) for url in BUILT] + [("POST", url) for url in POSTED])
def test_every_built_url_is_answered_by_a_route(routes, method, url):
    path = urlsplit(url).path
    scope = {"type": "http", "path": path, "root_path": "", "method": method, "headers": [], "query_string": b""}
    assert any(route.matches(scope)[0] is Match.FULL for route in routes), f"no route answers {method} {path}"


def test_segments_and_queries_are_encoded_and_empty_parameters_left_out():
    assert urls.run("a/b c") == "/runs/a%2Fb%20c"
    assert urls.manifest(DIGEST) == f"/manifests/{DIGEST}"  # the digest as it is written
    assert urls.workloads(q="conv 2d&x", tag="", gpu=None, page=1) == "/workloads?q=conv+2d%26x"
    assert parse_qs(urlsplit(urls.compare(["x", "y"])).query) == {"run": ["x", "y"]}
    assert urls.workload_group("w", DIGEST) == "/workloads/w?group=" + "ab" * 8
    assert urls.json_twin("/") == "/index.json"
    assert urls.json_twin("/gpus/b200?x=1") == "/gpus/b200.json?x=1"
    assert urls.absolute("https://kernelindex.example/", "/runs/r") == "https://kernelindex.example/runs/r"
