"""``kernelindex search|top|show|compare|cite|submit``: a registry's answers on a terminal.

Each command reads one registry through ``kernelindex.client`` (``--registry URL``, default
``$KERNELINDEX_REGISTRY_URL``, else the local server ``kernelindex serve`` runs) and prints a
table, or with ``--json`` / ``--jsonl`` the API's own JSON. Exit status: 0 found; 1 nothing
found (or a submission refused); 2 a usage or network error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from kernelindex import urls
from kernelindex.commands.output import (
    FOUND,
    NOTHING_FOUND,
    USAGE_OR_NETWORK,
    Mode,
    answered,
    emit,
    err,
    fail,
    latency_ms,
    link,
    out,
)
from kernelindex.settings import Settings

if TYPE_CHECKING:
    from kernelindex.client import Client

# The client (with the API's models, FastAPI's among them) is imported by each command when it
# runs, so that `kernelindex ingest` and the rest start without it.
CITATION_CHOICES = ("bibtex", "csl", "ris", "text")  # ``kernelindex.client.CITATION_FORMATS``, by name

REGISTRY_ENV = "KERNELINDEX_REGISTRY_URL"
API_KEY_ENV = "KERNELINDEX_API_KEY"
# A submission is one manifest bundle: far below this; a larger file is refused before sending.
MAX_SUBMISSION_BYTES = 8 * 1024 * 1024


def default_registry() -> str:
    """``$KERNELINDEX_REGISTRY_URL``, else the origin the local server's links are written for."""
    return os.environ.get(REGISTRY_ENV) or Settings().public_url


def _client(registry: str | None) -> Client:
    from kernelindex.client import Client

    try:
        return Client(registry or default_registry())
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


registry_option = click.option(
    "--registry",
    metavar="URL",
    help=f"The registry to ask (default: ${REGISTRY_ENV}, else the local server's URL).",
)


def output_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--jsonl", "mode", flag_value="jsonl", help="One JSON object a line (the items).")(command)
    command = click.option("--json", "mode", flag_value="json", help="The API's JSON answer, whole.")(command)
    return click.option("--table", "mode", flag_value="table", default=True, hidden=True)(command)


def _exit(found: bool) -> None:
    raise SystemExit(FOUND if found else NOTHING_FOUND)


@click.command("search")
@click.argument("query")
@click.option("--gpu", metavar="SLUG", help="Give each workload found its figures on this GPU (e.g. h200).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100))
@registry_option
@output_options
def search_command(query: str, gpu: str | None, limit: int, registry: str | None, mode: Mode) -> None:
    """Search workloads, implementations, GPUs and origin models."""
    with answered("Search"), _client(registry) as client:
        found = client.search(query, gpu=gpu, limit=limit)
        if mode != "table":
            emit(mode, found, found.hits)
            _exit(bool(found.hits))
        if not found.hits:
            hint = f" Did you mean {found.did_you_mean!r}?" if found.did_you_mean else ""
            err.print(f"Nothing matches {query!r}.{hint}", markup=False, highlight=False)
            _exit(False)
        on = found.gpu
        table = Table(title=f"{len(found.hits)} found for {found.query!r}" + (f" · figures on {on}" if on else ""))
        for column in ("kind", "name", "title", *(["fastest on " + on + " (ms)"] if on else []), "permalink"):
            # Names are what a reader copies into the next command: never wrapped.
            table.add_column(
                column, justify="right" if column.startswith("fastest") else "left", no_wrap=column == "name"
            )
        for hit in found.hits:
            best = hit.on_gpu.fastest if hit.on_gpu else None
            figure = [f"{latency_ms(best.latency_ns)} {best.primary_statistic}" if best else "–"] if on else []
            table.add_row(hit.kind, hit.slug, hit.title, *figure, link(client.permalink(hit.url)))
        out.print(table)


@click.command("top")
@click.argument("workload")
@click.option("--gpu", metavar="SLUG", help="The GPU (e.g. h200); default: the group the leaderboard opens on.")
@click.option("--case", metavar="N|AXIS=VALUE", help="A 0-based case index or its axis values (num_tokens=4096).")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@registry_option
@output_options
def top_command(workload: str, gpu: str | None, case: str | None, limit: int, registry: str | None, mode: Mode) -> None:
    """The fastest runs of WORKLOAD on a GPU, at one case of its sweep."""
    with answered("Top"), _client(registry) as client:
        ranked = client.workload_top(workload, gpu=gpu, case=case, limit=limit)
        if mode != "table":
            emit(mode, ranked, ranked.entries)
            _exit(bool(ranked.entries))
        if not ranked.entries:
            where = f" on {ranked.gpu}" if ranked.gpu else ""
            err.print(f"{workload} has no eligible run{where}.", markup=False, highlight=False)
            _exit(False)
        at = f" at {ranked.case.label} (case {ranked.case.index})" if ranked.case else ""
        sources = sorted({entry.source for entry in ranked.entries if entry.source})
        table = Table(
            title=f"{ranked.workload_title}\n{ranked.gpu_product}{at} · {ranked.protocol_title}",
            caption=f"{ranked.metric}, {ranked.statistic} as measured and published by {', '.join(sources)}, in ms; "
            f"{len(ranked.entries)} of {ranked.ranked_total} ranked · {client.permalink(ranked.url)}",
        )
        for column in ("#", "implementation", f"{ranked.statistic} (ms)", "× best", "evidence", "run"):
            right = column in ("#", "× best") or "(ms)" in column
            table.add_column(column, justify="right" if right else "left", no_wrap=column == "run")
        for entry in ranked.entries:
            table.add_row(
                str(entry.rank),
                entry.implementation,
                latency_ms(entry.latency_ns),
                f"{entry.vs_best:.2f}",
                entry.evidence,
                link(client.permalink(entry.url), entry.run),
            )
        out.print(table)


@click.command("show")
@click.argument("run")
@registry_option
@output_options
def show_command(run: str, registry: str | None, mode: Mode) -> None:
    """One run, by name or digest: its figure, rank, evidence and where it was measured."""
    with answered("Show"), _client(registry) as client:
        detail = client.run(run)
        if mode != "table":
            emit(mode, detail, [detail])
            return
        rank = f"{detail.rank} of {detail.group_size}" if detail.rank else "not ranked"
        rows = [
            ("workload", detail.workload),
            ("implementation", f"{detail.project} ({detail.revision})"),
            ("GPU · environment", f"{detail.gpu} · {detail.environment}"),
            ("protocol", detail.protocol),
            (f"latency, {detail.primary_statistic}", f"{latency_ms(detail.latency_ns)} ms ({detail.latency_ns} ns)"),
            ("rank in its group", rank + (f" · {detail.vs_best:.2f}× best" if detail.vs_best else "")),
            ("status · evidence", f"{detail.status} · {detail.evidence}"),
            ("not eligible because", "; ".join(detail.ineligibility_reasons) or "–"),
            ("availability", detail.availability.text),
            ("source", detail.source.name if detail.source else "–"),
            ("observed", detail.observed_at.isoformat()),
            ("digest", detail.digest),
        ]
        table = Table(title=detail.name, caption=client.permalink(detail.url), show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value")
        for field, value in rows:
            table.add_row(field, value)
        out.print(table)


@click.command("compare")
@click.argument("runs", nargs=-1, required=True)
@registry_option
@output_options
def compare_command(runs: tuple[str, ...], registry: str | None, mode: Mode) -> None:
    """Compare 2–8 runs field by field; a winner only when they are comparable."""
    if not 2 <= len(runs) <= 8:
        raise click.UsageError(f"compare takes 2 to 8 runs; got {len(runs)}.")
    with answered("Compare"), _client(registry) as client:
        result = client.compare(runs)
        if mode != "table":
            emit(mode, result, result.fields)
            return
        table = Table(title=result.verdict, caption=client.permalink(urls.compare(runs)))
        table.add_column("field", style="bold")
        for column in result.runs:
            table.add_column(column.name + (" (winner)" if column.winner else ""))
        for field in result.fields:
            table.add_row(field.label + (" ≠" if field.differs else ""), *field.display)
        out.print(table)


@click.command("cite")
@click.argument("ref", metavar="RUN|WORKLOAD")
@click.option("--format", "fmt", type=click.Choice(CITATION_CHOICES), default="text", show_default=True)
@registry_option
@output_options
def cite_command(ref: str, fmt: str, registry: str | None, mode: Mode) -> None:
    """A run's citation, or a workload leaderboard's (as of today), in a citation format."""
    from kernelindex.client import NotFoundError

    with answered("Cite"), _client(registry) as client:
        of = "run"
        try:
            text = client.citation(ref, fmt, of="run")
        except NotFoundError:
            of = "workload"
            text = client.citation(ref, fmt, of="workload")
        if mode == "table":
            out.print(text.rstrip("\n"), markup=False, highlight=False)
            return
        document = {"ref": ref, "of": of, "format": fmt, "citation": text}
        emit(mode, document, [document])


@click.command("submit")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--api-key", metavar="KEY", envvar=API_KEY_ENV, help=f"Your API key (default: ${API_KEY_ENV}).")
@registry_option
@output_options
def submit_command(file: Path, api_key: str | None, registry: str | None, mode: Mode) -> None:
    """Post FILE (a submission's JSON, sent as it is) to the registry's /api/v1/submissions."""
    from kernelindex.client import ClientError, ProblemError

    if not api_key:
        raise click.UsageError(f"an API key is needed: --api-key KEY or ${API_KEY_ENV}.")
    document = file.read_bytes()
    if len(document) > MAX_SUBMISSION_BYTES:
        fail(USAGE_OR_NETWORK, f"{file} is {len(document)} bytes; a submission is at most {MAX_SUBMISSION_BYTES}.")
    try:
        json.loads(document)
    except ValueError as exc:
        fail(USAGE_OR_NETWORK, f"{file} is not JSON: {exc}")
    with _client(registry) as client:
        try:
            receipt = client.submit(document, api_key)
        except ProblemError as exc:
            # A refusal names the check that failed; it is the submitter's to fix (1), unlike a fault (2).
            check = exc.body.get("check")
            status = NOTHING_FOUND if exc.status < 500 else USAGE_OR_NETWORK
            fail(status, f"Submission refused: {exc}" + (f" (check: {check})" if check else ""))
        except ClientError as exc:
            fail(USAGE_OR_NETWORK, f"Submission failed: {exc}")
        if mode != "table":
            emit(mode, receipt, [receipt])
            return
        out.print(f"Submission {receipt.id}: {receipt.status} · {client.permalink(receipt.url)}", highlight=False)


COMMANDS = [search_command, top_command, show_command, compare_command, cite_command, submit_command]
