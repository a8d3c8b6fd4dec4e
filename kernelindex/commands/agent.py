"""``kernelindex mcp``: the MCP server on stdin/stdout, for an agent that starts it as a subprocess."""

from __future__ import annotations

import click

from kernelindex.commands.query import default_registry, registry_option


@click.command("mcp")
@registry_option
def mcp_command(registry: str | None) -> None:
    """Serve KernelIndex's read-only MCP tools over stdio (search, fastest, run, compare, cite,
    regressions, gpu_coverage), answering from the registry at --registry."""
    # Imported here: the MCP SDK is needed by this command alone.
    from kernelindex.client import Client
    from kernelindex.mcp_server.server import build_server

    base = registry or default_registry()
    try:
        Client(base).close()  # refuse a malformed URL now, not at the first tool call
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    build_server(lambda: Client(base)).run("stdio")
