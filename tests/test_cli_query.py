"""``kernelindex search|top|show|compare|cite|submit`` against a live registry (both databases):
their tables, ``--json`` and ``--jsonl``, and exit statuses (0 found, 1 nothing found, 2 usage or
network error)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from kernelindex.cli import main
from kernelindex.client import CITATION_FORMATS
from kernelindex.commands.query import CITATION_CHOICES
from tests.registries import (  # noqa: F401 (fixtures)
    FASTEST_AT_4096,
    MOE_LAYER,
    aic_bundled_registry,
    aic_registry,
    sol_registry,
)
from tests.servers import free_port, serving
from tests.test_aiconfigurator_pages import catalogue, moe, run_name  # noqa: F401 (fixtures)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


def test_top_json_puts_the_fastest_at_the_case_first(aic_registry, moe, catalogue):  # noqa: F811
    # Read before the server is asked: on PostgreSQL it shares this test's connection.
    fastest = run_name(catalogue, "1.3.0rc20", "moe_torch_flow")
    result = invoke("top", moe, "--gpu", "h200", "--case", "num_tokens=16", "--json", "--registry", aic_registry)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    first = body["entries"][0]
    assert (first["implementation"], first["latencyNs"]) == ("TensorRT-LLM 1.3.0rc20 · moe_torch_flow", 45_000)
    assert first["run"] == fastest
    assert (body["case"]["label"], body["statistic"], body["unit"]) == ("num_tokens=16", "mean", "ns")


def test_top_names_the_fastest_moe_layer_on_the_h200_at_4096_tokens(aic_bundled_registry):  # noqa: F811
    for case in ("22", "num_tokens=4096"):
        result = invoke("top", MOE_LAYER, "--gpu", "h200", "--case", case, "--json", "--registry", aic_bundled_registry)
        assert result.exit_code == 0, result.output
        first = json.loads(result.stdout)["entries"][0]
        assert (first["implementation"], first["latencyNs"]) == FASTEST_AT_4096
    table = invoke("top", MOE_LAYER, "--gpu", "h200", "--case", "22", "--registry", aic_bundled_registry)
    ranked = [line for line in table.stdout.splitlines() if line.startswith("│ 1 ")]
    assert "TensorRT-LLM 1.3.0rc20" in ranked[0] and "0.726" in ranked[0]


def test_top_table_says_what_each_figure_is(aic_registry, moe):  # noqa: F811
    result = invoke("top", moe, "--gpu", "h200", "--case", "1", "--registry", aic_registry)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "num_tokens=16 (case 1)" in text and "mean (ms)" in text
    assert "AIConfigurator collector" in text and "measured and published by AIConfigurator" in text
    lines = [line for line in result.stdout.splitlines() if "│" in line and line.split("│")[1].strip().isdigit()]
    assert [line.split("│")[3].strip() for line in lines] == ["0.0450", "0.0500", "0.0600", "0.0650"]


def test_top_jsonl_is_one_entry_a_line(aic_registry, moe):  # noqa: F811
    result = invoke("top", moe, "--gpu", "h200", "--case", "1", "--limit", "3", "--jsonl", "--registry", aic_registry)
    assert result.exit_code == 0
    entries = [json.loads(line) for line in result.stdout.splitlines()]
    assert [entry["latencyNs"] for entry in entries] == [45_000, 50_000, 60_000]


def test_top_exit_statuses(aic_registry, moe):  # noqa: F811
    assert invoke("top", moe, "--gpu", "b200", "--registry", aic_registry).exit_code == 1  # no run there
    assert invoke("top", "no-such-workload", "--registry", aic_registry).exit_code == 1
    refused = invoke("top", moe, "--gpu", "h200", "--case", "9", "--registry", aic_registry)
    assert refused.exit_code == 2 and "from 0 to 2" in refused.stderr


def test_search_finds_and_says_when_nothing_matches(sol_registry):  # noqa: F811
    found = invoke("search", "conv2d residual", "--jsonl", "--registry", sol_registry)
    assert found.exit_code == 0
    assert json.loads(found.stdout.splitlines()[0])["slug"] == "l1-040-conv2d-residual-block"
    table = invoke("search", "conv2d residual", "--registry", sol_registry)
    assert table.exit_code == 0 and "l1-040-conv2d-residual-block" in table.stdout
    nothing = invoke("search", "qqqzzzxxx", "--registry", sol_registry)
    assert nothing.exit_code == 1 and "Nothing matches" in nothing.stderr


def test_show_and_compare(sol_registry):  # noqa: F811
    shown = invoke("show", "sol-submission-16893", "--json", "--registry", sol_registry)
    assert shown.exit_code == 0
    run = json.loads(shown.stdout)
    assert run["name"] == "sol-submission-16893" and run["latencyNs"] > 0
    table = invoke("show", "sol-submission-16893", "--registry", sol_registry)
    assert table.exit_code == 0 and f"{sol_registry}/runs/sol-submission-16893" in table.stdout
    assert invoke("show", "no-such-run", "--registry", sol_registry).exit_code == 1
    listed = invoke("top", run["workload"], "--jsonl", "--registry", sol_registry)
    names = [json.loads(line)["run"] for line in listed.stdout.splitlines()][:2]
    compared = invoke("compare", *names, "--json", "--registry", sol_registry)
    assert compared.exit_code == 0
    assert [column["name"] for column in json.loads(compared.stdout)["runs"]] == names
    assert invoke("compare", names[0], "--registry", sol_registry).exit_code == 2  # one run: a usage error


def test_cite_a_run_or_a_workload(sol_registry):  # noqa: F811
    bibtex = invoke("cite", "sol-submission-16893", "--format", "bibtex", "--registry", sol_registry)
    assert bibtex.exit_code == 0 and bibtex.stdout.startswith("@")
    board = invoke("cite", "l1-040-conv2d-residual-block", "--format", "ris", "--json", "--registry", sol_registry)
    body = json.loads(board.stdout)
    assert (body["of"], body["format"]) == ("workload", "ris") and "TY  - " in body["citation"]
    assert invoke("cite", "nothing-by-this-name", "--registry", sol_registry).exit_code == 1


def test_network_and_usage_errors_exit_2():
    closed = f"http://127.0.0.1:{free_port()}"
    result = invoke("show", "sol-submission-16893", "--registry", closed)
    assert result.exit_code == 2 and "could not be reached" in result.stderr
    assert invoke("show", "x", "--registry", "not-a-url").exit_code == 2
    assert invoke("top").exit_code == 2


def test_the_registry_comes_from_the_environment(sol_registry):  # noqa: F811
    result = invoke("show", "sol-submission-16893", "--json", env={"KERNELINDEX_REGISTRY_URL": sol_registry})
    assert result.exit_code == 0 and json.loads(result.stdout)["name"] == "sol-submission-16893"


# --- submit: a tiny server that mimics POST /api/v1/submissions (the real one is tested with it) ---


@pytest.fixture
def submissions() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    mimic = FastAPI()

    @mimic.post("/api/v1/submissions")
    async def receive(request: Request) -> JSONResponse:
        body = await request.body()
        received.append({"authorization": request.headers.get("authorization"), "body": body})
        if request.headers.get("authorization") != "Bearer good-key":
            return JSONResponse({"title": "Unauthorized", "status": 401, "detail": "bad key"}, status_code=401)
        if b"broken" in body:
            problem = {"type": "about:blank", "title": "Unprocessable", "status": 422, "detail": "digest mismatch"}
            return JSONResponse(problem | {"check": "digest"}, status_code=422)
        return JSONResponse({"id": "sub-7", "status": "queued", "url": "/submissions/sub-7"}, status_code=202)

    with serving(mimic) as base:
        yield base, received


def test_submit_posts_the_file_as_it_is(submissions, tmp_path: Path):
    base, received = submissions
    file = tmp_path / "submission.json"
    file.write_bytes(b'{"kind": "Submission",  "spec": {}}')
    result = invoke("submit", str(file), "--registry", base, "--api-key", "good-key")
    assert result.exit_code == 0, result.output
    assert "sub-7" in result.stdout and f"{base}/submissions/sub-7" in result.stdout
    assert received == [{"authorization": "Bearer good-key", "body": file.read_bytes()}]
    by_env = invoke("submit", str(file), "--registry", base, "--json", env={"KERNELINDEX_API_KEY": "good-key"})
    assert json.loads(by_env.stdout)["id"] == "sub-7"


def test_submit_refusals_and_usage_errors(submissions, tmp_path: Path):
    base, received = submissions
    broken = tmp_path / "broken.json"
    broken.write_text('{"broken": true}')
    refused = invoke("submit", str(broken), "--registry", base, "--api-key", "good-key")
    assert refused.exit_code == 1 and "digest mismatch" in refused.stderr and "check: digest" in refused.stderr
    assert invoke("submit", str(broken), "--registry", base, "--api-key", "wrong").exit_code == 1
    not_json = tmp_path / "not.json"
    not_json.write_text("{")
    assert invoke("submit", str(not_json), "--registry", base, "--api-key", "good-key").exit_code == 2
    assert invoke("submit", str(broken), "--registry", base, env={"KERNELINDEX_API_KEY": ""}).exit_code == 2
    assert len(received) == 2  # neither the file that is not JSON nor the call without a key was sent


def test_the_citation_choices_are_the_clients_formats():
    assert sorted(CITATION_CHOICES) == sorted(CITATION_FORMATS)


def test_the_command_line_starts_without_the_client_or_the_mcp_sdk():
    code = "import sys, kernelindex.cli; print(sorted(m for m in ('mcp', 'kernelindex.client') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("command", ["search", "top", "show", "compare", "cite", "submit", "mcp"])
def test_each_query_command_has_help_and_is_listed(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Usage:" in result.output and "--registry" in result.output
    assert f"  {command} " in invoke("--help").output
