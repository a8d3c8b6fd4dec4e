"""The MCP server: KernelIndex's read-only tools for agents (``build_server``)."""
