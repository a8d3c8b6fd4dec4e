"""``kernelindex mcp``: the registry's read-only tools for agents, over stdio or streamable HTTP.

Built on the official MCP Python SDK (``MCPServer``). Every tool reads the registry through
``kernelindex.client``; every call counts against a ``CallBudget`` (refused past it, as the
API's own limits refuse); every answer carries the permalinks of what it used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from kernelindex import __version__
from kernelindex.client import Client, ClientError
from kernelindex.mcp_server.limits import CallBudget
from kernelindex.mcp_server.tools import Answer, RegistryTools, ToolRefusal

# Generous for an agent at work, a stop for one in a loop: 120 calls a minute.
CALLS_PER_WINDOW = 120
WINDOW_S = 60.0
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
INSTRUCTIONS = (
    "KernelIndex is a registry of GPU-kernel benchmark results. Every figure is a latency with its "
    "statistic (mean, median, geomean…) and unit, measured under a named protocol, with an evidence "
    "level; cite the 'url' permalinks of the records you use. 'fastest' answers who is fastest at a "
    "workload on a GPU (at one case of a sweep, e.g. case='num_tokens=4096')."
)

Gpu = Annotated[str | None, Field(description="a GPU slug, e.g. h200, b200, mi300x")]


def build_server(client: Callable[[], Client], budget: CallBudget | None = None) -> MCPServer[Any]:
    """The MCP server over the registry ``client()`` reaches."""
    tools = RegistryTools(client)
    limit = budget or CallBudget(CALLS_PER_WINDOW, WINDOW_S)
    server: MCPServer[Any] = MCPServer(
        name="kernelindex",
        title="KernelIndex",
        version=__version__,
        instructions=INSTRUCTIONS,
        # INFO would log every HTTP request the client makes (on stderr): noise to an agent's host.
        log_level="WARNING",
    )

    def answer(call: Callable[[], Answer]) -> Answer:
        wait = limit.take()
        if wait is not None:
            raise ToolError(f"Too many calls: at most {limit.count} a minute; try again in {wait:.0f} s.")
        try:
            return call()
        except (ClientError, ToolRefusal) as exc:
            raise ToolError(str(exc)) from None

    @server.tool(name="search", annotations=READ_ONLY)
    def search_tool(
        query: Annotated[str, Field(description="any words: a workload, operator, model, GPU or project")],
        gpu: Gpu = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> Answer:
        """Search workloads, implementations, GPUs and models; with gpu, each workload's fastest run there."""
        return answer(lambda: tools.search(query, gpu, limit))

    @server.tool(name="fastest", annotations=READ_ONLY)
    def fastest_tool(
        workload: Annotated[str, Field(description="a workload's slug, or words describing it")],
        gpu: Gpu = None,
        case: Annotated[
            str | None, Field(description="a sweep's case: a 0-based index or axis values, e.g. num_tokens=4096")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> Answer:
        """The ranked fastest runs of a workload on a GPU (at one case), with latency, statistic, unit,
        evidence and permalinks."""
        return answer(lambda: tools.fastest(workload, gpu, case, limit))

    @server.tool(name="run", annotations=READ_ONLY)
    def run_tool(name: Annotated[str, Field(description="a run's name or digest")]) -> Answer:
        """One run: its latency and statistic, rank in its comparison group, evidence, environment, protocol."""
        return answer(lambda: tools.run(name))

    @server.tool(name="compare", annotations=READ_ONLY)
    def compare_tool(
        runs: Annotated[list[str], Field(min_length=2, max_length=8, description="2–8 run names")],
    ) -> Answer:
        """Compare runs field by field; a winner only when all share one comparison group and are eligible."""
        return answer(lambda: tools.compare(runs))

    @server.tool(name="cite", annotations=READ_ONLY)
    def cite_tool(
        ref: Annotated[str, Field(description="a run's name, or a workload's slug (its leaderboard, as of today)")],
        format: Annotated[str, Field(description="bibtex, ris, csl or text")] = "text",
    ) -> Answer:
        """A citation of a run or of a workload's leaderboard."""
        return answer(lambda: tools.cite(ref, format))

    @server.tool(name="regressions", annotations=READ_ONLY)
    def regressions_tool(
        gpu: Gpu = None,
        framework: Annotated[str | None, Field(description="e.g. vLLM, SGLang, TensorRT-LLM")] = None,
        workload: Annotated[str | None, Field(description="a workload's slug")] = None,
        kernel: Annotated[str | None, Field(description="a kernel as the source names it")] = None,
        page: Annotated[int, Field(ge=1)] = 1,
    ) -> Answer:
        """Version regressions: a framework's newer version slower than an older one at one case, largest first."""
        return answer(lambda: tools.regressions(gpu, framework, workload, kernel, page))

    @server.tool(name="gpu_coverage", annotations=READ_ONLY)
    def gpu_coverage_tool(gpu: Annotated[str, Field(description="a GPU slug, e.g. h200")]) -> Answer:
        """How many workloads were measured on a GPU and how many were not (its gaps), per source."""
        return answer(lambda: tools.gpu_coverage(gpu))

    return server
