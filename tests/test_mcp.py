"""``kernelindex mcp`` through the MCP SDK's own client: over stdio (the server a subprocess, asking a
live registry on both databases: initialize, list the tools, call each), and at ``/mcp`` over
streamable HTTP beside the site, where each request counts against the rate limit."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError

from kernelindex.client import Client
from kernelindex.mcp_server.http import with_mcp
from kernelindex.mcp_server.limits import CallBudget
from kernelindex.mcp_server.server import build_server
from tests.registries import (  # noqa: F401 (fixtures)
    FASTEST_AT_4096,
    MOE_LAYER,
    aic_bundled_registry,
    aic_registry,
    sol_registry,
)
from tests.servers import serving
from tests.test_aiconfigurator_pages import catalogue, moe, run_name  # noqa: F401 (fixtures)

TOOLS = {"search", "fastest", "run", "compare", "cite", "regressions", "gpu_coverage"}


@asynccontextmanager
async def stdio_session(registry: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kernelindex.cli", "mcp", "--registry", registry]
    )
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def urls_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [u for key, item in value.items() for u in ([item] if key.endswith("url") else urls_in(item))]
    if isinstance(value, list):
        return [u for item in value for u in urls_in(item)]
    return []


def test_every_tool_over_stdio_answers_with_permalinks(aic_registry, moe, catalogue):  # noqa: F811
    # Read before the server is asked: on PostgreSQL it shares this test's connection.
    fastest_run = run_name(catalogue, "1.3.0rc20", "moe_torch_flow")
    older, newer = run_name(catalogue, "0.22.0"), run_name(catalogue, "0.24.0")
    answers: dict[str, dict[str, Any]] = {}

    async def session_work() -> None:
        async with stdio_session(aic_registry) as session:
            listed = await session.list_tools()
            assert {tool.name for tool in listed.tools} == TOOLS
            assert all(tool.annotations and tool.annotations.read_only_hint for tool in listed.tools)
            answers["fastest"] = await call(session, "fastest", workload=moe, gpu="h200", case="num_tokens=16")
            answers["by words"] = await call(session, "fastest", workload="moe fp8_block", gpu="h200", case="1")
            answers["search"] = await call(session, "search", query="moe", gpu="h200")
            answers["run"] = await call(session, "run", name=fastest_run)
            answers["compare"] = await call(session, "compare", runs=[older, newer])
            answers["cite"] = await call(session, "cite", ref=fastest_run, format="bibtex")
            answers["regressions"] = await call(session, "regressions", gpu="h200")
            answers["gpu_coverage"] = await call(session, "gpu_coverage", gpu="h200")
            unknown = await session.call_tool("run", {"name": "no-such-run"})
            assert unknown.is_error and "No run has the name" in unknown.content[0].text  # type: ignore[union-attr]

    anyio.run(session_work)
    top = answers["fastest"]
    first = top["ranked"][0]
    assert (first["implementation"], first["latencyMs"], first["latencyNs"]) == (
        "TensorRT-LLM 1.3.0rc20 · moe_torch_flow",
        0.045,
        45_000,
    )
    assert (top["metric"], top["unit"], top["statistic"], top["case"]["label"]) == (
        "latency",
        "ms",
        "mean",
        "num_tokens=16",
    )
    assert first["measuredBy"] == "AIConfigurator"
    assert first["evidence"] == "reported" and first["url"] == f"{aic_registry}/runs/{fastest_run}"
    assert [entry["latencyNs"] for entry in top["ranked"]] == [45_000, 50_000, 60_000, 65_000]
    assert answers["by words"]["workload"] == moe and answers["by words"]["ranked"] == top["ranked"]
    assert answers["run"]["latencyNs"] > 0 and answers["run"]["gpu"] == "h200"
    assert [run["name"] for run in answers["compare"]["runs"]] == [older, newer]
    assert answers["cite"]["citation"].startswith("@") and answers["cite"]["of"] == "run"
    [regression] = answers["regressions"]["regressions"]
    assert (regression["newerVersion"], regression["olderVersion"]) == ("0.24.0", "0.22.0")
    assert regression["newerRunUrl"] == f"{aic_registry}/runs/{newer}"
    assert answers["gpu_coverage"]["gpu"] == "h200" and answers["gpu_coverage"]["workloadsMeasured"] >= 1
    for name, answer in answers.items():
        links = urls_in(answer)
        assert links, f"{name} answered no permalink"
        assert all(link.startswith(aic_registry + "/") for link in links), (name, links)


def test_fastest_names_the_moe_layers_fastest_on_the_h200_with_its_permalink(aic_bundled_registry):  # noqa: F811
    async def ask() -> dict[str, Any]:
        async with stdio_session(aic_bundled_registry) as session:
            return await call(session, "fastest", workload=MOE_LAYER, gpu="h200", case="num_tokens=4096", limit=3)

    top = anyio.run(ask)
    first = top["ranked"][0]
    assert (first["implementation"], first["latencyNs"]) == FASTEST_AT_4096
    assert first["latencyMs"] == 0.725787 and (top["unit"], top["statistic"]) == ("ms", "mean")
    assert first["url"] == f"{aic_bundled_registry}/runs/{first['run']}"
    with Client(aic_bundled_registry) as client:
        run = client.run(first["run"])  # the permalink names the run the registry serves
    assert (run.workload, run.gpu) == (MOE_LAYER, "h200")


def test_a_capped_server_refuses_calls_past_its_budget(sol_registry):  # noqa: F811
    server = build_server(lambda: Client(sol_registry), CallBudget(2, 60))

    async def calls() -> list[bool]:
        return [(await server.call_tool("gpu_coverage", {"gpu": "b200"}) is not None) for _ in range(2)]

    assert anyio.run(calls) == [True, True]
    with pytest.raises(ToolError, match="Too many calls"):
        anyio.run(server.call_tool, "gpu_coverage", {"gpu": "b200"})


def test_the_tools_at_slash_mcp_beside_the_site_and_their_rate_limit(sol_registry):  # noqa: F811
    site = FastAPI()

    @site.get("/")
    def home() -> dict[str, str]:
        return {"site": "yes"}

    counted: list[str] = []
    over_the_limit = [False]

    def allow(address: str) -> bool:
        counted.append(address)
        return not over_the_limit[0]

    server = build_server(lambda: Client(sol_registry))
    app = with_mcp(site, server, allow, "Too many MCP requests")

    async def session_work(base: str) -> tuple[set[str], dict[str, Any]]:
        async with streamable_http_client(f"{base}/mcp") as streams, ClientSession(*streams[:2]) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            return names, await call(session, "run", name="sol-submission-16893")

    with serving(app) as base:
        assert httpx.get(f"{base}/").json() == {"site": "yes"}
        names, run = anyio.run(session_work, base)
        assert len(counted) >= 3 and set(counted) == {"127.0.0.1"}  # every request to /mcp, none to the site
        over_the_limit[0] = True
        refused = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert names == TOOLS and run["name"] == "sol-submission-16893"
    assert run["url"] == f"{sol_registry}/runs/sol-submission-16893"
    assert refused.status_code == 429 and refused.headers["content-type"] == "application/problem+json"
    assert json.loads(refused.content)["detail"] == "Too many MCP requests"
