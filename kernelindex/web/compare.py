"""``/compare?run=A&run=B…``: 2–8 runs side by side, as HTML, its JSON twin and CSV (PRODUCT.md §6)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import Field

from kernelindex import urls
from kernelindex.compare import MAX_RUNS, ComparedRun, CompareError, Comparison, check_run_names, compare_runs
from kernelindex.compare import Field as AlignedField
from kernelindex.figures import Share
from kernelindex.manifests.types import EvidenceLevel, format_utc
from kernelindex.store.run_queries import runs_to_compare
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.format import date, latency_column, ratio, score, short_digest
from kernelindex.web.pages import PageContext, Part, cached_response, page_route, render_page

router = APIRouter()

FieldKind = Literal["number", "text", "date", "digest", "evidence"]
Value = int | float | str | None
EVIDENCE_LABELS = {
    EvidenceLevel.REPORTED: "Reported",
    EvidenceLevel.REPRODUCIBLE: "Reproducible",
    EvidenceLevel.VERIFIED: "KernelIndex verified",
    EvidenceLevel.REPRODUCED: "Reproduced by KernelIndex",
    EvidenceLevel.REPLICATED: "Independently replicated",
}
NUMBER_FIELDS = {"latencyNs", "vsFastest", "rank", "solScore", "shareOfBound", "avgSpeedup", "casesFaster"}
FIELD_KINDS: dict[str, FieldKind] = {
    **dict.fromkeys(NUMBER_FIELDS, "number"),
    "observedAt": "date",
    "comparisonKey": "digest",
    "digest": "digest",
    "evidence": "evidence",
}
RunsParam = Annotated[
    list[str] | None,
    Query(description=f"a run name, repeated for each run: 2 to {MAX_RUNS} runs", examples=["sol-submission-36270"]),
]


class ComparedColumn(Part):
    """One run, heading its column."""

    name: str
    url: str
    api_url: str
    project: str
    implementation_url: str
    workload: str
    workload_title: str
    gpu: str
    stack: str
    latency: str
    winner: bool
    remove_url: str | None = Field(description="the same comparison without this run; null when only two are left")


class ComparedField(Part):
    """One aligned field: a value per run, in column order."""

    key: str
    label: str
    kind: FieldKind
    values: list[Value] = Field(description="machine values: integer ns, fractions, ISO 8601 UTC timestamps")
    display: list[str] = Field(description="the values as the page writes them")
    differs: bool


class CompareResult(Part):
    runs: list[ComparedColumn]
    fields: list[ComparedField]
    comparable: bool = Field(description="one comparison group and every run eligible")
    winner: str | None = Field(description="the fastest run's name, named only when comparable and not tied")
    reasons: list[str] = Field(description="why no winner can be named, e.g. 'different evaluation stacks'")
    verdict: str


class ComparePage(PageContext):
    template: ClassVar[str] = "compare.html"

    comparison: CompareResult
    csv_url: str
    api_url: str
    add_limit_reached: bool


def _machine(value: Any) -> Value:
    if isinstance(value, Share):
        return round(value.percent, 4)  # a percentage; the bound is named in ``display``
    return format_utc(value) if isinstance(value, datetime) else value


def _display(key: str, value: Any) -> str:
    if value is None:
        return {"rank": "not ranked", "uncertainty": "spread unknown"}.get(key, "–")
    match key:
        case "vsFastest" | "avgSpeedup":
            return ratio(value)
        case "rank":
            return f"#{value}"
        case "solScore":
            return score(value)
        case "shareOfBound":
            return f"{value.text} ({value.bound.name})"
        case "observedAt":
            return date(value)
        case "comparisonKey" | "digest":
            return short_digest(value)
        case "evidence":
            return EVIDENCE_LABELS.get(value, str(value))
    return str(value)


def _display_row(key: str, values: Sequence[Any]) -> list[str]:
    """A field's values as the page writes them; the latencies in one unit, chosen from them all."""
    if key == "latencyNs":
        return latency_column(values).texts
    return [_display(key, value) for value in values]


def _shown_differs(field: AlignedField, display: Sequence[str]) -> bool:
    """Whether a reader sees different values: a figure differs only where it reads differently at
    the precision shown (26,085 ns and 26,091 ns both read "26.1 µs"); a digest, shortened on the
    page but whole in its title, wherever the values differ."""
    if FIELD_KINDS.get(field.key) == "digest":
        return field.differs
    return field.differs and len(set(display)) > 1


def comparison_result(comparison: Comparison, runs: Sequence[ComparedRun]) -> CompareResult:
    names = list(comparison.runs)
    fields = [
        ComparedField(
            key=field.key,
            label=field.label,
            kind=FIELD_KINDS.get(field.key, "text"),
            values=[_machine(value) for value in field.values],
            display=(display := _display_row(field.key, field.values)),
            differs=_shown_differs(field, display),
        )
        for field in comparison.fields
    ]
    latencies = latency_column([run.latency_ns for run in runs]).texts
    columns = [
        ComparedColumn(
            name=run.name,
            url=urls.run(run.name),
            api_url=urls.api_run(run.name),
            project=run.project,
            implementation_url=urls.implementation(run.project_slug),
            workload=run.workload_slug,
            workload_title=run.workload_title,
            gpu=run.gpu_product,
            stack=run.stack,
            latency=f"{latencies[index]} {run.primary_statistic}",
            winner=run.name == comparison.winner,
            remove_url=urls.compare(n for n in names if n != run.name) if len(names) > 2 else None,
        )
        for index, run in enumerate(runs)
    ]
    return CompareResult(
        runs=columns,
        fields=fields,
        comparable=comparison.comparable,
        winner=comparison.winner,
        reasons=list(comparison.reasons),
        verdict=comparison.verdict,
    )


def compare_named(session: Any, names: Sequence[str] | None) -> CompareResult:
    """The comparison of the runs named; ``BadRequest`` or ``NotFound`` with the reason otherwise."""
    try:
        names = check_run_names(list(names or []))
    except CompareError as exc:
        raise BadRequest(str(exc)) from None
    runs, missing = runs_to_compare(session, names)
    if missing:
        listed = ", ".join(repr(name) for name in missing)
        raise NotFound(f"No run is named {listed}." if len(missing) == 1 else f"No runs are named {listed}.")
    return comparison_result(compare_runs(runs), runs)


@page_route(router, "/compare")
def compare(request: Request, session: SessionDep, run: RunsParam = None) -> Response:
    result = compare_named(session, run)
    names = [column.name for column in result.runs]
    context = ComparePage(
        comparison=result,
        csv_url=urls.compare(names, fmt="csv"),
        api_url=urls.api_compare(names),
        add_limit_reached=len(result.runs) >= MAX_RUNS,
    )
    return render_page(request, context)


def _csv_cell(value: Value) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def comparison_csv(result: CompareResult) -> str:
    """One row per field, one column per run, machine values (as in the JSON's ``values``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["field", "label", *(column.name for column in result.runs), "differs"])
    for field in result.fields:
        writer.writerow(
            [field.key, field.label, *(_csv_cell(v) for v in field.values), "true" if field.differs else "false"]
        )
    return out.getvalue()


@router.get("/compare.csv", include_in_schema=False)
def compare_csv(request: Request, session: SessionDep, run: RunsParam = None) -> Response:
    result = compare_named(session, run)
    names = [column.name for column in result.runs]
    stem = "-vs-".join(names)
    filename = f"compare-{stem}.csv" if len(stem) <= 150 else f"compare-{len(names)}-runs.csv"
    return cached_response(
        request,
        comparison_csv(result).encode(),
        "text/csv; charset=utf-8",
        {
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Link": f'<{urls.compare(names, fmt="json")}>; rel="alternate"; type="application/json"',
        },
    )
