"""A server-side SVG line chart of a sweep: per-case latency against the swept axis, one line per
implementation, its measured spread as a band, on a log latency axis.

The x axis is numeric when every case value is a number (log spaced when the values are
positive and span a factor of four or more, as sweeps over sizes do) and categorical otherwise.
Series are told apart by a class per position (colour and dash pattern both change, so colour
never carries the difference alone) and named in a legend beside the chart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from pydantic import BaseModel

from kernelindex.manifests.types import NativeValue
from kernelindex.web.charts.history import ChartTick, log_scale
from kernelindex.web.format import latency

WIDTH, HEIGHT = 480, 280  # about a phone's width, as every chart (kernelindex.web.charts.history)
LEFT, RIGHT, TOP, BOTTOM = 60, 16, 16, 52
SERIES_STYLES = 8  # .sweep-s0 … .sweep-s7 in the stylesheet
MAX_X_LABELS = 8
LABEL_CHARACTERS = 14
# Neighbouring markers (6 px across) closer than this are not drawn: at 200 cases a window they
# sat 3 px apart, overlapping into a thick line no pointer could pick a case from (and a fifth
# of the largest page's bytes). The line and the table below carry every case.
MIN_MARKER_GAP = 8.0


@dataclass(frozen=True)
class SweepLine:
    """One implementation: per case its centre latency and spread (ns), or ``None`` where unmeasured."""

    title: str
    points: Sequence[tuple[int, int | None, int | None] | None]


class SweepMarker(BaseModel):
    x: float
    y: float
    label: str


class SweepWhisker(BaseModel):
    x: float
    y_high: float
    y_low: float


class SweepChartSeries(BaseModel):
    style: str  # the stylesheet class of the line, its band, markers and legend swatch
    title: str
    path: str
    bands: list[str]  # polygon points, one polygon per run of two or more neighbouring cases
    whiskers: list[SweepWhisker]  # the spread of a case with no measured neighbour
    markers: list[SweepMarker]


class SweepChart(BaseModel):
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    top: int = TOP
    bottom_edge: int = HEIGHT - BOTTOM
    x_title: str
    x_scale: str  # "log", "linear" or "categories": said in the figure's description
    series: list[SweepChartSeries]
    x_ticks: list[ChartTick]
    y_ticks: list[ChartTick]


def sweep_chart(axis: str, values: Sequence[NativeValue], numeric: bool, lines: Sequence[SweepLine]) -> SweepChart:
    latencies = [
        ns for line in lines for point in line.points if point is not None for ns in point if ns is not None and ns > 0
    ]
    y = log_scale(latencies, HEIGHT - BOTTOM, TOP)
    xs, x_scale = _x_positions(values, numeric)
    series = []
    for index, line in enumerate(lines):
        measured = [(position, point) for position, point in enumerate(line.points) if point is not None]
        runs = _consecutive(measured)
        series.append(
            SweepChartSeries(
                style=f"sweep-s{index % SERIES_STYLES}",
                title=line.title,
                path="".join(
                    f"{'M' if at == 0 else 'L'}{xs[position]},{y.at(centre)}"
                    for run in runs
                    for at, (position, (centre, _, _)) in enumerate(run)
                ),
                bands=[
                    " ".join(
                        [f"{xs[position]},{y.at(high)}" for position, (_, _, high) in run if high is not None]
                        + [f"{xs[position]},{y.at(low)}" for position, (_, low, _) in reversed(run) if low is not None]
                    )
                    for run in runs
                    if len(run) > 1 and _has_spread(run)
                ],
                whiskers=[
                    SweepWhisker(x=xs[position], y_high=y.at(high), y_low=y.at(low))
                    for run in runs
                    if len(run) == 1 and _has_spread(run)
                    for position, (_, low, high) in run
                    if low is not None and high is not None
                ],
                markers=[
                    SweepMarker(
                        x=xs[position],
                        y=y.at(centre),
                        label=f"{line.title}, {axis} {values[position]}: {latency(centre)}",
                    )
                    for position, (centre, _, _) in _marked(measured, runs, xs)
                ],
            )
        )
    step = max(1, math.ceil(len(values) / MAX_X_LABELS))
    return SweepChart(
        x_title=axis,
        x_scale=x_scale,
        series=series,
        x_ticks=[
            ChartTick(position=xs[position], label=_short(str(values[position])))
            for position in range(0, len(values), step)
        ],
        y_ticks=y.ticks(),
    )


def _x_positions(values: Sequence[NativeValue], numeric: bool) -> tuple[list[float], str]:
    span = WIDTH - RIGHT - LEFT
    if numeric:
        numbers = [float(value) for value in values]
        low, high = min(numbers), max(numbers)
        if high > low:
            logarithmic = low > 0 and high / low >= 4
            scale = math.log10 if logarithmic else float
            start, end = scale(low), scale(high)
            # An inset on both sides keeps the first and last labels inside the frame.
            inset = span * 0.04
            return [
                round(LEFT + inset + (scale(number) - start) / (end - start) * (span - 2 * inset), 1)
                for number in numbers
            ], "log" if logarithmic else "linear"
    width = span / len(values)
    return [round(LEFT + width * (position + 0.5), 1) for position in range(len(values))], "categories"


Point = tuple[int, tuple[int, int | None, int | None]]


def _consecutive(measured: list[Point]) -> list[list[Point]]:
    """The measured cases in runs of neighbours: a line (and its band) breaks where a case is missing."""
    runs: list[list[Point]] = []
    for point in measured:
        if runs and runs[-1][-1][0] == point[0] - 1:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def _marked(measured: list[Point], runs: list[list[Point]], xs: Sequence[float]) -> list[Point]:
    """The cases of ``measured`` (in ``runs`` of neighbours) that get a marker: all where neighbouring
    markers stand ``MIN_MARKER_GAP`` apart; otherwise only those with no measured neighbour, which
    draw no line."""
    gaps = (xs[after[0]] - xs[before[0]] for before, after in pairwise(measured))
    if all(gap >= MIN_MARKER_GAP for gap in gaps):
        return measured
    return [run[0] for run in runs if len(run) == 1]


def _has_spread(run: list[Point]) -> bool:
    return all(low is not None and high is not None for _, (_, low, high) in run)


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARACTERS else label[: LABEL_CHARACTERS - 1] + "…"
