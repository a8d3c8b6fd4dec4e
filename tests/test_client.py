"""``kernelindex.client`` against a live registry (uvicorn on 127.0.0.1, both databases), and its
retries, typed problems and submission call against ``httpx.MockTransport``."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from kernelindex.client import (
    BadRequestError,
    Client,
    NetworkError,
    NotFoundError,
    ServerError,
)
from tests.registries import aic_registry, sol_registry  # noqa: F401 (fixtures)
from tests.test_aiconfigurator_pages import catalogue, moe, run_name  # noqa: F401 (fixtures)

# At num_tokens=16 (case 1) of the MoE sweep: (framework, version, latency in ns), fastest first.
AT_16_TOKENS = [
    ("TensorRT-LLM", "1.3.0rc20", 45_000),
    ("vLLM", "0.22.0", 50_000),
    ("SGLang", "0.5.10", 60_000),
    ("vLLM", "0.24.0", 65_000),
]


def ranked(top: Any) -> list[tuple[str | None, str | None, int]]:
    return [(entry.framework, entry.version, entry.latency_ns) for entry in top.entries]


def test_top_ranks_the_sweep_at_the_case_asked_by_index_or_by_axis_values(aic_registry, moe, catalogue):  # noqa: F811
    # Read before the server is asked: on PostgreSQL it shares this test's connection.
    fastest = run_name(catalogue, "1.3.0rc20", "moe_torch_flow")
    with Client(aic_registry) as client:
        by_values = client.workload_top(moe, gpu="h200", case="num_tokens=16")
        by_index = client.workload_top(moe, gpu="h200", case=1)
        default = client.workload_top(moe, gpu="h200")
        first = client.run(by_values.entries[0].run)
    assert ranked(by_values) == ranked(by_index) == AT_16_TOKENS
    assert [entry.rank for entry in by_values.entries] == [1, 2, 3, 4]
    assert by_values.entries[3].vs_best == pytest.approx(65 / 45)
    assert by_values.case is not None and (by_values.case.index, by_values.case.label) == (1, "num_tokens=16")
    assert (by_values.metric, by_values.unit, by_values.statistic) == ("latency", "ns", "mean")
    assert by_values.gpu == "h200" and by_values.ranked_total == 4
    assert {entry.source for entry in by_values.entries} == {"AIConfigurator"}  # who measured them
    # Without a case: the one most runs measured (num_tokens=1), as the workload page opens on.
    assert default.case is not None and default.case.label == "num_tokens=1" and default.case.chosen is False
    # The #1's permalink names the run the API serves, measured on that GPU.
    assert first.name == fastest and first.gpu == "h200"
    assert by_values.entries[0].url == f"/runs/{first.name}"


def test_top_limit_keeps_the_fastest(aic_registry, moe):  # noqa: F811
    with Client(aic_registry) as client:
        top = client.workload_top(moe, gpu="h200", case=1, limit=2)
    assert ranked(top) == AT_16_TOKENS[:2] and top.ranked_total == 4


def test_top_refuses_a_case_or_gpu_it_cannot_use_with_the_problem_body(aic_registry, moe):  # noqa: F811
    with Client(aic_registry) as client:
        with pytest.raises(BadRequestError) as unknown_case:
            client.workload_top(moe, gpu="h200", case="num_tokens=17")
        with pytest.raises(BadRequestError) as out_of_range:
            client.workload_top(moe, gpu="h200", case=3)
        for garbage in ("--5", "²", "9" * 12, "num_tokens="):
            with pytest.raises(BadRequestError):
                client.workload_top(moe, gpu="h200", case=garbage)
        with pytest.raises(BadRequestError) as unknown_gpu:
            client.workload_top(moe, gpu="h2000")
        with pytest.raises(NotFoundError):
            client.workload_top("no-such-workload", gpu="h200")
        nowhere = client.workload_top(moe, gpu="b200")
    assert "num_tokens=17" in unknown_case.value.problem.detail
    assert "from 0 to 2" in out_of_range.value.problem.detail
    with Client(aic_registry) as client, pytest.raises(BadRequestError) as an_axis_value:
        client.workload_top(moe, gpu="h200", case=256)
    assert "give them: num_tokens=256 is case 2." in an_axis_value.value.problem.detail
    assert unknown_gpu.value.status == 400 and unknown_gpu.value.body["status"] == 400
    assert "Did you mean h200" in unknown_gpu.value.body["detail"]
    assert nowhere.entries == [] and nowhere.comparison_key is None


def test_top_without_a_sweep_ranks_the_suite_figure(sol_registry):  # noqa: F811
    with Client(sol_registry) as client:
        detail = client.workload("l1-040-conv2d-residual-block")
        top = client.workload_top("l1-040-conv2d-residual-block")
    assert top.case is None and top.entries
    assert top.comparison_key == detail.default_group
    assert detail.fastest is not None and top.entries[0].run == detail.fastest.run
    assert [entry.latency_ns for entry in top.entries] == sorted(entry.latency_ns for entry in top.entries)


def test_keyset_paging_walks_every_workload_once(sol_registry):  # noqa: F811
    requests: list[httpx.Request] = []
    with Client(sol_registry) as client:
        client._http.event_hooks["request"].append(requests.append)
        slugs = [item.slug for item in client.iter_workloads(page_size=40)]
        everything = [item.slug for item in client.iter_workloads(page_size=200)]
    assert len(slugs) == len(set(slugs)) == 235
    assert slugs == everything
    assert sum("/api/v1/workloads" in str(r.url) for r in requests) == 6 + 2  # 235 by 40, then by 200


def test_search_compare_gpu_and_citation_answer_in_the_api_models(sol_registry):  # noqa: F811
    with Client(sol_registry) as client:
        found = client.search("conv2d residual", limit=5)
        runs = [run.name for run in client.iter_runs(workload="l1-040-conv2d-residual-block", page_size=2)]
        comparison = client.compare(runs[:2])
        bibtex = client.citation(runs[0], "bibtex")
        board = client.citation("l1-040-conv2d-residual-block", "text", of="workload")
        gpus = list(client.iter_gpus(page_size=5))
        b200 = client.gpu("b200")
    assert found.hits[0].slug == "l1-040-conv2d-residual-block"
    assert [column.name for column in comparison.runs] == runs[:2]
    assert bibtex.startswith("@") and f"/runs/{runs[0]}" in bibtex
    assert "l1-040-conv2d-residual-block" in board
    assert "b200" in {gpu.slug for gpu in gpus} and b200.runs > 0


def test_an_unknown_run_is_a_typed_404_carrying_the_rfc_9457_body(sol_registry):  # noqa: F811
    with Client(sol_registry) as client, pytest.raises(NotFoundError) as caught:
        client.run("no-such-run")
    assert caught.value.status == 404
    assert caught.value.body == {
        "type": "about:blank",
        "title": "Not found",
        "status": 404,
        "detail": "No run has the name or digest 'no-such-run'.",
    }
    assert caught.value.problem.detail == caught.value.body["detail"]


def test_models_tolerate_members_the_api_adds_later(sol_registry):  # noqa: F811
    served = httpx.get(f"{sol_registry}/api/v1/workloads/l1-040-conv2d-residual-block/top").json()
    served["rankRange"] = {"low": 1, "high": 2}
    served["entries"][0]["rankRange"] = [1, 1]
    with Client("http://registry", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=served))) as c:
        top = c.workload_top("l1-040-conv2d-residual-block")
    assert top.entries[0].run == served["entries"][0]["run"]


# --- Retries, with the server mimicked ------------------------------------------------------------


def mocked(answers: list[Any], sleeps: list[float]) -> tuple[Client, list[httpx.Request]]:
    """A client whose requests get ``answers`` in turn (a response, or an exception to raise)."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return Client("http://registry", transport=httpx.MockTransport(handle), sleep=sleeps.append), seen


GPU_PAGE = {"items": [], "nextCursor": None}


def test_a_busy_registry_is_asked_again_after_its_retry_after():
    sleeps: list[float] = []
    busy = httpx.Response(503, headers={"Retry-After": "2"}, json={"title": "Service unavailable", "status": 503})
    client, seen = mocked([busy, busy, httpx.Response(200, json=GPU_PAGE)], sleeps)
    assert list(client.iter_gpus()) == []
    assert sleeps == [2.0, 2.0] and len(seen) == 3


def test_network_errors_back_off_exponentially_then_raise():
    sleeps: list[float] = []
    client, seen = mocked([httpx.ConnectError("refused") for _ in range(4)], sleeps)
    with pytest.raises(NetworkError, match="could not be reached"):
        client.gpu("h200")
    assert sleeps == [0.5, 1.0, 2.0] and len(seen) == 4


def test_a_server_error_after_the_retries_is_typed():
    sleeps: list[float] = []
    down = httpx.Response(502, text="bad gateway")
    client, _ = mocked([down, down, down, down], sleeps)
    with pytest.raises(ServerError) as caught:
        client.gpu("h200")
    assert caught.value.status == 502 and caught.value.body == {"detail": "bad gateway"}
    assert len(sleeps) == 3


# --- Submissions: the server's side is tested with the submissions API; here, its contract -------


def test_submit_posts_the_file_as_it_is_with_the_bearer_key():
    document = b'{"apiVersion": "kernelindex.dev/v1alpha1", "kind": "Submission"}'
    receipt = {"id": "sub-1", "status": "queued", "url": "/submissions/sub-1", "checks": []}
    sleeps: list[float] = []
    client, seen = mocked([httpx.Response(202, json=receipt)], sleeps)
    answer = client.submit(document, "key-123")
    assert (answer.id, answer.status, answer.url) == ("sub-1", "queued", "/submissions/sub-1")
    assert answer.model_extra == {"checks": []}
    request = seen[0]
    assert request.method == "POST" and request.url.path == "/api/v1/submissions"
    assert request.headers["Authorization"] == "Bearer key-123" and request.content == document


def test_a_refused_submission_carries_its_check_and_is_not_sent_again():
    problem = {"type": "about:blank", "title": "Unprocessable", "status": 422, "detail": "bad", "check": "digest"}
    sleeps: list[float] = []
    client, seen = mocked([httpx.Response(422, json=problem)], sleeps)
    with pytest.raises(BadRequestError) as caught:
        client.submit(json.dumps({}).encode(), "key")
    assert caught.value.body["check"] == "digest" and len(seen) == 1 and sleeps == []
    busy_client, busy_seen = mocked([httpx.Response(503, json={"status": 503})], sleeps)
    with pytest.raises(ServerError):
        busy_client.submit(b"{}", "key")  # a POST that reached the server is never repeated
    assert len(busy_seen) == 1


def test_a_registry_is_an_http_url():
    with pytest.raises(ValueError, match="http"):
        Client("ftp://registry")
