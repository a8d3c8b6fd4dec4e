"""Commands that ask a registry through ``kernelindex.client``, added to a group by ``register_query_commands``."""

from __future__ import annotations

import click

from kernelindex.commands.agent import mcp_command
from kernelindex.commands.query import COMMANDS


def register_query_commands(group: click.Group) -> None:
    for command in [*COMMANDS, mcp_command]:
        group.add_command(command)
