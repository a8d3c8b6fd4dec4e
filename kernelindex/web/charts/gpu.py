"""A server-side SVG dot chart of a workload's figures per GPU: one row per GPU on a log latency
axis, a dot per implementation's best there and a larger, labelled dot for the GPU's best.

The rows keep the order they are given (the registry's GPU order): the chart sets the GPUs
side by side and never ranks them. A GPU name too long for the label column is shortened with
"…"; the row's label keeps the full name as its tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from kernelindex.web.charts.history import ChartTick, fit_text, label_column, log_scale
from kernelindex.web.format import latency

WIDTH = 480  # about a phone's width, as every chart (kernelindex.web.charts.history)
# The label column is as wide as the longest GPU name needs, from NARROWEST to WIDEST.
NARROWEST, WIDEST, RIGHT, TOP, BOTTOM = 90, 180, 56, 12, 44
ROW = 30
LABEL_GAP = 10  # between a row's label and the plot, as the template draws it


@dataclass(frozen=True)
class GpuFigures:
    """What one row shows: the GPU, its best latency and each implementation's best there."""

    gpu: str
    best_ns: int
    implementations: Sequence[tuple[str, int]]  # (implementation title, its best latency in ns)
    statistic: str  # the primary statistic of the GPU's best run, e.g. "mean"


class GpuDot(BaseModel):
    x: float
    label: str  # the tooltip: implementation and latency


class GpuChartRow(BaseModel):
    gpu: str
    label: str  # the GPU's name as the row shows it: shortened with "…" where it is too long
    y: float
    best_x: float
    best_label: str
    dots: list[GpuDot]


class GpuChart(BaseModel):
    width: int = WIDTH
    height: int
    left: int
    right_edge: int = WIDTH - RIGHT
    axis_y: float
    axis_title: str
    rows: list[GpuChartRow]
    x_ticks: list[ChartTick]


def gpu_chart(figures: Sequence[GpuFigures]) -> GpuChart | None:
    """``None`` with fewer than two GPUs: there is nothing to set side by side."""
    if len(figures) < 2:
        return None
    left = label_column([row.gpu for row in figures], LABEL_GAP, NARROWEST, WIDEST)
    height = TOP + ROW * len(figures) + BOTTOM
    scale = log_scale(
        [ns for row in figures for ns in (row.best_ns, *(ns for _, ns in row.implementations))],
        left,
        WIDTH - RIGHT,
    )
    statistics = sorted({row.statistic for row in figures})
    return GpuChart(
        height=height,
        left=left,
        axis_y=TOP + ROW * len(figures),
        axis_title=f"latency ({', '.join(statistics)}), log scale",
        rows=[
            GpuChartRow(
                gpu=row.gpu,
                label=fit_text(row.gpu, left - LABEL_GAP - 2),
                y=TOP + ROW * index + ROW / 2,
                best_x=scale.at(row.best_ns),
                best_label=latency(row.best_ns),
                dots=[GpuDot(x=scale.at(ns), label=f"{title}: {latency(ns)}") for title, ns in row.implementations],
            )
            for index, row in enumerate(figures)
        ],
        x_ticks=scale.ticks(),
    )
