"""The controlled-rerun section of a run page: per-case figures, a chart of the samples,
the signature that vouches for them, the ceilings behind the bounds, and the source.

Built from the stored bundle, so the page shows exactly what the runner signed. Two bounds
stand side by side and are named apart: the speed of light (``sol_*``: datasheet peaks, which
nothing beats) and the achievable bound (``achievable_*``: the ceilings the runner measured,
which some kernels beat).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kernelindex import figures, urls
from kernelindex.rerun import graph_check
from kernelindex.rerun.implementations import REGISTRY
from kernelindex.store.reruns import RerunResult
from kernelindex.store.runner_keys import RunnerKeyRow
from kernelindex.web.charts.history import ChartTick
from kernelindex.web.format import latency, latency_column
from kernelindex.web.pages import Part

CHART_WIDTH, CHART_HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 12, 28


class RerunCaseRow(Part):
    index: int
    axes: str
    median: str
    median_ns: int
    spread: str
    range: str
    sol_bound: str
    sol_bound_ns: int
    percent_of_sol_bound: str
    achievable_bound: str
    achievable_bound_ns: int
    percent_of_achievable_bound: str
    achievable_limiter: str
    max_error_over_tolerance: str
    manifest_url: str


class CaseMark(Part):
    """One case in the samples chart: whiskers min–max, box p10–p90, median tick, a dash at the
    speed of light and a dotted mark at the achievable bound."""

    x: float
    min_y: float
    max_y: float
    p10_y: float
    p90_y: float
    median_y: float
    sol_bound_y: float
    achievable_bound_y: float
    label: str


class SamplesChart(Part):
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    box_width: float
    cases: list[CaseMark]
    y_ticks: list[ChartTick]


class Ceiling(Part):
    name: str
    value: str
    method: str


class GraphCheckRow(Part):
    """A case's graph-replay check (`kernelindex.rerun.graph_check`): its state in words, both figures."""

    index: int
    state: str  # agrees, host-bound, graph-slower, not-captured
    flagged: bool
    blocking_median: str
    replay_median: str  # "" where the graph could not be captured
    ratio: float | None
    bound: float
    words: str


class ApprovedKey(Part):
    """An operator's key as a maintainer approved it for their account (``/admin/runner-keys``)."""

    handle: str
    operator_name: str
    machine: str
    approved_by: str
    approved_at: datetime
    revoked_at: datetime | None


class RerunPart(Part):
    bundle_id: str
    bundle_url: str
    bundle_sha256: str
    key_id: str
    # The operator the key registry named for the signing key; None where it named none.
    operator: str | None
    # Who the operator is and the machine, where the key was approved for an operator's account.
    approved_key: ApprovedKey | None = None
    signature: str
    session_id: str
    runner_version: str
    started_at: datetime
    finished_at: datetime
    gpu_uuid: str | None
    clocks: str
    cases_passed: int
    case_count: int
    sol_bound: str
    percent_of_sol_bound: str  # "" where no bound is known
    sol_compute_precision: str
    # The headings and words of the two shares (``kernelindex.figures``), naming each bound.
    sol_share_label: str = figures.share_label(figures.DATASHEET)
    sol_share_words: str = figures.share_words(figures.DATASHEET)
    achievable_share_label: str = figures.share_label(figures.MEASURED_CEILINGS)
    achievable_share_words: str = figures.share_words(figures.MEASURED_CEILINGS)
    achievable_bound: str
    percent_of_achievable_bound: str
    source_url: str
    source_path: str
    source_sha256: str
    source_current: bool
    protocol_url: str
    cases: list[RerunCaseRow]
    chart: SamplesChart
    ceilings: list[Ceiling]
    # Empty where the bundle carries no graph-replay figure (measured without --graph-check).
    graph_checks: list[GraphCheckRow] = []


def rerun_part(result: RerunResult, protocol_name: str, key: RunnerKeyRow | None = None) -> RerunPart:
    """The rerun section of a run page; ``key``: the signing key, where a maintainer approved it for an
    operator's account (its details are shown where the run is credited to that operator)."""
    bundle = result.bundle
    document = json.loads(bundle.bundle_json)
    payload = document["payload"]
    implementation = payload["implementation"]
    measured_sha = implementation["sourceSha256"]
    installed = REGISTRY.get(implementation["name"])
    rows = []
    # Every latency of the per-case table (figures and bounds) in one unit, chosen from them all.
    unit = latency_column(
        [
            value
            for case, stored in zip(payload["cases"], result.cases, strict=True)
            for value in (
                case["timing"]["medianNs"],
                case["timing"]["p10Ns"],
                case["timing"]["p90Ns"],
                case["timing"]["minNs"],
                case["timing"]["maxNs"],
                stored.bound_ns or None,
                stored.achievable_bound_ns or None,
            )
        ]
    ).unit

    def written(ns: float) -> str:
        return figures.latency_in(ns, unit)

    for case, stored in zip(payload["cases"], result.cases, strict=True):
        timing, worst = case["timing"], max(c.get("maxErrorOverTolerance") or 0 for c in case["correctness"])
        rows.append(
            RerunCaseRow(
                index=case["index"],
                axes=" ".join(f"{k}={v}" for k, v in case["axes"].items()),
                median=written(timing["medianNs"]),
                median_ns=timing["medianNs"],
                spread=f"{written(timing['p10Ns'])} – {written(timing['p90Ns'])}",
                range=f"{written(timing['minNs'])} – {written(timing['maxNs'])}",
                sol_bound=written(stored.bound_ns) if stored.bound_ns > 0 else UNKNOWN_BOUND,
                sol_bound_ns=stored.bound_ns,
                percent_of_sol_bound=_percent(stored.bound_ns, timing["medianNs"]),
                achievable_bound=written(stored.achievable_bound_ns)
                if stored.achievable_bound_ns > 0
                else UNKNOWN_BOUND,
                achievable_bound_ns=stored.achievable_bound_ns,
                percent_of_achievable_bound=_percent(stored.achievable_bound_ns, timing["medianNs"]),
                achievable_limiter=case["roofline"]["limiter"] if case.get("roofline") else "–",  # none: a program
                max_error_over_tolerance=f"{worst:.3g}",
                manifest_url=urls.manifest(stored.digest),
            )
        )
    environment = payload["environment"]
    start, end = environment.get("clocksAtStart") or {}, environment.get("clocksAtEnd") or {}
    return RerunPart(
        bundle_id=bundle.bundle_id,
        bundle_url=urls.rerun_bundle(bundle.bundle_id),
        bundle_sha256=bundle.file_sha256,
        key_id=bundle.key_id,
        operator=bundle.operator,
        approved_key=(
            ApprovedKey(
                handle=key.handle,
                operator_name=key.operator_name,
                machine=key.machine,
                approved_by=key.approved_by,
                approved_at=key.approved_at,
                revoked_at=key.revoked_at,
            )
            if key is not None and key.operator == bundle.operator
            else None
        ),
        signature=document["signature"]["value"],
        session_id=payload["sessionId"],
        runner_version=payload["runnerVersion"],
        started_at=bundle.started_at,
        finished_at=bundle.finished_at,
        gpu_uuid=environment["gpu"].get("uuid"),
        clocks=(
            f"SM {start.get('clocks.sm', '?')} MHz (max {start.get('clocks.max.sm', '?')}), memory "
            f"{start.get('clocks.mem', '?')} MHz at start; SM {end.get('clocks.sm', '?')} MHz at end"
        ),
        cases_passed=result.cases_passed,
        case_count=result.case_count,
        sol_bound=_bound(result.bound_ns),
        percent_of_sol_bound=_percent(result.bound_ns, result.run.latency_ns),
        sol_compute_precision=_PRECISIONS.get(
            str(json.loads(result.run.manifest_json)["spec"]["sourceNative"]["metrics"].get("sol_compute_precision")),
            "not recorded",
        ),
        achievable_bound=_bound(result.achievable_bound_ns),
        percent_of_achievable_bound=_percent(result.achievable_bound_ns, result.run.latency_ns),
        source_url=urls.rerun_source(implementation["name"]),
        source_path=implementation["sourcePath"],
        source_sha256=measured_sha,
        source_current=installed is not None and installed.source_sha256() == measured_sha,
        protocol_url=urls.protocol(protocol_name),
        cases=rows,
        chart=samples_chart(
            payload["cases"],
            [stored.bound_ns for stored in result.cases],
            [stored.achievable_bound_ns for stored in result.cases],
        ),
        ceilings=[
            Ceiling(name=name, value=_rate(record), method=record.get("method", record.get("error", "")))
            for name, record in payload["ceilings"].items()
        ],
        graph_checks=[_graph_row(check, written) for check in graph_check.check_cases(payload["cases"])],
    )


def _graph_row(check: graph_check.GraphCheck, written: Callable[[float], str]) -> GraphCheckRow:
    bound = f"{check.bound:.0%}"
    replay = written(check.replay_median_ns) if check.replay_median_ns is not None else ""
    ratio = check.ratio or 1.0
    if check.state == graph_check.NOT_CAPTURED:
        words = f"CUDA-graph capture failed ({check.error}); the figure is not checked against replay"
    elif check.state == graph_check.HOST_BOUND:
        words = (
            f"flagged: the blocking-kernel figure is {ratio - 1:.0%} above graph replay (bound {bound}), "
            "so part of it is the host's launch time, not the GPU's work"
        )
    elif check.state == graph_check.GRAPH_SLOWER:
        slower = 1 / ratio - 1
        words = f"flagged: graph replay is {slower:.0%} slower than the blocking-kernel figure (bound {bound})"
    else:
        words = f"agrees with graph replay within {bound}"
    return GraphCheckRow(
        index=check.case_index,
        state=check.state,
        flagged=check.flagged,
        blocking_median=written(check.blocking_median_ns),
        replay_median=replay,
        ratio=round(check.ratio, 4) if check.ratio is not None else None,
        bound=check.bound,
        words=words,
    )


# How a page names the datasheet peak the speed of light's compute term was taken at.
_PRECISIONS = {
    "fp64": "FP64",
    "fp64Tensor": "FP64 tensor cores",
    "fp32": "FP32 CUDA cores",
    "tf32Tensor": "TF32 tensor cores",
    "bf16Tensor": "BF16 tensor cores",
    "fp16Tensor": "FP16 tensor cores",
    "fp8Tensor": "FP8 tensor cores",
}


UNKNOWN_BOUND = "not known"


def _bound(bound_ns: int) -> str:
    return latency(bound_ns) if bound_ns > 0 else UNKNOWN_BOUND


def _percent(bound_ns: int, measured_ns: int) -> str:
    """The share of a bound reached ("4.7 %", "0.5 %"); "" where the bound is not known: no share."""
    value = figures.share_of_bound(bound_ns, measured_ns)
    return "" if value is None else figures.percent(value)


def _rate(record: dict[str, Any]) -> str:
    value, unit = record.get("value"), record.get("unit", "")
    if not isinstance(value, (int, float)):
        return "not measured"
    if unit == "bytes/s":
        return f"{value / 1e12:.2f} TB/s"
    return f"{value / 1e12:.1f} TFLOP/s" if unit == "FLOP/s" else f"{value:.3g} {unit}"


def samples_chart(cases: list[dict[str, Any]], sol_ns: list[int], achievable_ns: list[int]) -> SamplesChart:
    """Every case's samples on one log-scale axis, with its two bounds beside them."""
    values = [v for case in cases for v in (case["timing"]["minNs"], case["timing"]["maxNs"])]
    values += [b for b in (*sol_ns, *achievable_ns) if b > 0]
    low = math.floor(math.log10(min(values)) * 2) / 2
    high = math.ceil(math.log10(max(values)) * 2) / 2
    if high - low < 0.5:
        high = low + 0.5
    step = (CHART_WIDTH - LEFT - RIGHT) / len(cases)

    def y(ns: float) -> float:
        return round(TOP + (high - math.log10(max(ns, 1))) / (high - low) * (CHART_HEIGHT - TOP - BOTTOM), 1)

    marks = [
        CaseMark(
            x=round(LEFT + step * (i + 0.5), 1),
            min_y=y(case["timing"]["minNs"]),
            max_y=y(case["timing"]["maxNs"]),
            p10_y=y(case["timing"]["p10Ns"]),
            p90_y=y(case["timing"]["p90Ns"]),
            median_y=y(case["timing"]["medianNs"]),
            sol_bound_y=y(sol) if sol > 0 else y(10**low),
            achievable_bound_y=y(achievable) if achievable > 0 else y(10**low),
            label=str(case["index"]),
        )
        for i, (case, sol, achievable) in enumerate(zip(cases, sol_ns, achievable_ns, strict=True))
    ]
    ticks = [ChartTick(position=y(10**value), label=latency(round(10**value))) for value in _steps(low, high)]
    return SamplesChart(box_width=round(min(step * 0.5, 16), 1), cases=marks, y_ticks=ticks)


def _steps(low: float, high: float) -> list[float]:
    count = round((high - low) / 0.5)
    return [low + 0.5 * i for i in range(count + 1)]
