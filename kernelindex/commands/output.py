"""How the query commands answer: a rich table for people, ``--json`` or ``--jsonl`` for scripts,
and the exit status (0 found, 1 nothing found or refused, 2 usage or network error)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, NoReturn

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

FOUND, NOTHING_FOUND, USAGE_OR_NETWORK = 0, 1, 2
Mode = Literal["table", "json", "jsonl"]

# Piped into a file or a pager, tables are as wide as their names, not cut at 80 columns.
out = Console(width=None if Console().is_terminal else 200)
err = Console(stderr=True)


def plain(value: Any) -> Any:
    """A model as the API serves it (camelCase names, JSON values); anything else as it is."""
    return value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value


def emit(mode: Mode, document: Any, lines: Iterable[Any]) -> None:
    """``--json``: ``document`` whole; ``--jsonl``: each of ``lines`` on a line of its own."""
    if mode == "json":
        sys.stdout.write(json.dumps(plain(document), ensure_ascii=False, indent=2) + "\n")
    else:
        for line in lines:
            sys.stdout.write(json.dumps(plain(line), ensure_ascii=False, separators=(",", ":")) + "\n")


def fail(status: int, message: str) -> NoReturn:
    err.print(message, markup=False, highlight=False)
    sys.exit(status)


@contextmanager
def answered(what: str) -> Iterator[None]:
    """Client errors as one clear line and an exit status: 1 for a name no record has, 2 otherwise."""
    from kernelindex.client import ClientError, NetworkError, NotFoundError, ProblemError, UnexpectedResponse

    try:
        yield
    except NotFoundError as exc:
        fail(NOTHING_FOUND, f"Nothing found: {exc.problem.detail}")
    except ProblemError as exc:
        check = exc.body.get("check")
        fail(USAGE_OR_NETWORK, f"{what} refused: {exc}" + (f" (check: {check})" if check else ""))
    except (NetworkError, UnexpectedResponse) as exc:
        fail(USAGE_OR_NETWORK, f"{what} failed: {exc}")
    except ClientError as exc:  # any other the client may add
        fail(USAGE_OR_NETWORK, f"{what} failed: {exc}")


def latency_ms(ns: int | None) -> str:
    """A latency in milliseconds to three significant figures (725787 ns: "0.726")."""
    if ns is None:
        return "–"
    return f"{ns / 1e6:#.3g}".rstrip(".")


def link(url: str, text: str | None = None) -> str:
    """``text`` (the URL itself by default) linked to a permalink, for terminals that open links."""
    return f"[link={escape(url)}]{escape(text or url)}[/link]"
