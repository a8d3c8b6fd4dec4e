"""A run's figures case by case, as a server-side SVG chart with a table of the same figures.

Liger-Kernel sweeps publish each case's median with its 20th–80th percentiles: one dot per case
on a log latency axis, with a line across the spread. A controlled rerun measures each case
against its roofline bound: one bar per case on a linear axis of the share of the bound reached.
Sources that publish only a suite figure get a sentence instead (``CaseDistribution.chart`` is
``None``); ``case_distribution`` decides which a run gets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelindex.figures import DATASHEET, share_label
from kernelindex.manifests import BenchmarkRun
from kernelindex.web.charts.history import ChartTick, fit_text, label_column, log_scale
from kernelindex.web.format import latency, percent
from kernelindex.web.pages import Part
from kernelindex.web.rerun_part import RerunCaseRow

WIDTH = 480  # about a phone's width, as every chart (kernelindex.web.charts.history)
# The label column is as wide as the longest case label needs, from NARROWEST to WIDEST.
NARROWEST, WIDEST, RIGHT, TOP, BOTTOM = 72, 200, 56, 8, 40
ROW = 22
LABEL_GAP = 8  # between a case's label and the plot, as the template draws it


class CaseRow(Part):
    label: str  # the case's varying axes, "V=4096"
    short_label: str  # the label as the chart shows it: shortened with "…" where it is too long
    y: float
    x: float  # where the figure is drawn
    low_x: float | None = None  # the spread, where the source gives one
    high_x: float | None = None
    value: str  # the figure as the table shows it
    spread: str | None = None


class CaseChart(Part):
    id: str
    title: str
    description: str
    kind: str  # "latency": dots on a log axis; "share": bars from zero on a linear axis
    width: int = WIDTH
    height: int
    left: int
    right_edge: int = WIDTH - RIGHT
    axis_y: float
    axis_title: str
    value_heading: str
    spread_heading: str | None
    ticks: list[ChartTick]
    rows: list[CaseRow]


class CaseDistribution(Part):
    chart: CaseChart | None
    note: str  # what the figures are, or why there is no chart


@dataclass(frozen=True)
class CaseFigure:
    label: str
    value: float  # ns for latencies, a percentage for shares
    low: float | None = None
    high: float | None = None


def case_labels(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each case by the axes that vary across the suite ("V=4096"); "case 3" where none vary."""
    varying = [name for name in cases[0] if len({repr(case.get(name)) for case in cases}) > 1] if cases else []
    return [
        " ".join(f"{name}={case.get(name)}" for name in varying) if varying else f"case {index}"
        for index, case in enumerate(cases)
    ]


def _height(count: int) -> int:
    return TOP + ROW * count + BOTTOM


def latency_chart(figures: Sequence[CaseFigure], statistic: str, spread: str) -> CaseChart:
    """Per-case latencies (ns) on a log axis; ``spread`` names the low–high range ("p20–p80")."""
    left = label_column([f.label for f in figures], LABEL_GAP, NARROWEST, WIDEST)
    scale = log_scale(
        [v for f in figures for v in (f.value, f.low, f.high) if v is not None and v > 0], left, WIDTH - RIGHT
    )
    has_spread = any(f.low is not None and f.high is not None for f in figures)
    return CaseChart(
        id="case-latency",
        title=f"Latency per case ({statistic}, log scale)",
        description=(
            f"{len(figures)} cases from {latency(round(min(f.value for f in figures)))} to "
            f"{latency(round(max(f.value for f in figures)))}"
            + (f"; a line spans each case's {spread}." if has_spread else ".")
        ),
        kind="latency",
        left=left,
        height=_height(len(figures)),
        axis_y=TOP + ROW * len(figures),
        axis_title=f"latency ({statistic}), log scale",
        value_heading=statistic.capitalize(),
        spread_heading=spread if has_spread else None,
        ticks=scale.ticks(),
        rows=[
            CaseRow(
                label=figure.label,
                short_label=fit_text(figure.label, left - LABEL_GAP - 2),
                y=TOP + ROW * index + ROW / 2,
                x=scale.at(figure.value),
                low_x=scale.at(figure.low) if figure.low else None,
                high_x=scale.at(figure.high) if figure.high else None,
                value=latency(round(figure.value)),
                spread=f"{latency(round(figure.low))} – {latency(round(figure.high))}"
                if figure.low and figure.high
                else None,
            )
            for index, figure in enumerate(figures)
        ],
    )


def share_chart(figures: Sequence[CaseFigure], what: str) -> CaseChart:
    """Per-case percentages (0–100, or beyond) as bars from zero on a linear axis; ``what`` is their
    heading, which begins with its unit ("% of SOL bound (datasheet)")."""
    top = max(100.0, max(f.value for f in figures))
    left = label_column([f.label for f in figures], LABEL_GAP, NARROWEST, WIDEST)
    span = WIDTH - RIGHT - left

    def x(value: float) -> float:
        return round(left + value / top * span, 1)

    return CaseChart(
        id="case-share",
        title=f"{what} per case",
        description=(
            f"{len(figures)} cases from {percent(min(f.value for f in figures))} "
            f"to {percent(max(f.value for f in figures))}."
        ),
        kind="share",
        left=left,
        height=_height(len(figures)),
        axis_y=TOP + ROW * len(figures),
        axis_title=what,
        value_heading=what,
        spread_heading=None,
        ticks=[ChartTick(position=x(value), label=f"{value:g} %") for value in range(0, int(top) + 1, 25)],
        rows=[
            CaseRow(
                label=f.label,
                short_label=fit_text(f.label, left - LABEL_GAP - 2),
                y=TOP + ROW * index + ROW / 2,
                x=x(f.value),
                value=percent(f.value),
            )
            for index, f in enumerate(figures)
        ],
    )


def sweep_distribution(run: BenchmarkRun, cases: Sequence[Mapping[str, Any]]) -> CaseDistribution | None:
    """A run whose manifest carries per-case medians (with p20/p80 where given); ``None`` without them."""
    results = [r for r in run.spec.case_results or [] if "median" in r["latencyNs"]]
    if not results:
        return None
    labels = case_labels(cases)
    figures = [
        CaseFigure(
            label=labels[r["caseIndex"]] if r["caseIndex"] < len(labels) else f"case {r['caseIndex']}",
            value=r["latencyNs"]["median"],
            low=r["latencyNs"].get("p20"),
            high=r["latencyNs"].get("p80"),
        )
        for r in results
    ]
    measured = f"{len(figures)} of {len(cases)} cases" if len(figures) < len(cases) else f"all {len(cases)} cases"
    return CaseDistribution(
        chart=latency_chart(figures, "median", "20th–80th percentile"),
        note=f"The source publishes each case's median and its 20th–80th percentiles; {measured} were measured.",
    )


def case_distribution(
    run: BenchmarkRun, cases: Sequence[Mapping[str, Any]], rerun_cases: Sequence[RerunCaseRow] | None
) -> CaseDistribution:
    """The run case by case where its source gives per-case figures; otherwise a line saying why not.

    ``cases`` are the workload's cases (their axes), ``rerun_cases`` a controlled rerun's rows.
    """
    if rerun_cases:
        labels = case_labels(cases)
        figures = [
            CaseFigure(label=labels[row.index], value=100 * row.sol_bound_ns / row.median_ns)
            for row in rerun_cases
            if row.sol_bound_ns > 0 and row.median_ns > 0 and row.index < len(labels)
        ]
        if figures:
            return CaseDistribution(
                chart=share_chart(figures, share_label(DATASHEET)),
                note="Each case's median against its speed of light on this GPU (datasheet peaks): 100 % would run "
                "at the speed of light, which no implementation can pass.",
            )
    if run.spec.case_index is not None:
        return CaseDistribution(chart=None, note="This run is one case of a suite; its figure is the one above.")
    if sweep := sweep_distribution(run, cases):
        return sweep
    if len(cases) == 1:
        return CaseDistribution(chart=None, note="This workload has one case: the figure above is the only one.")
    return CaseDistribution(
        chart=None,
        note=(
            f"The source publishes only the suite figure over the {len(cases)} cases; "
            "it gives no per-case figures for this run."
        ),
    )
