"""A server-side SVG chart of record history: latency of the #1 over time, log scale."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel

from kernelindex.web.format import latency

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 32


class ChartPoint(BaseModel):
    x: float
    y: float
    label: str


class ChartTick(BaseModel):
    position: float
    label: str


class HistoryChart(BaseModel):
    width: int = WIDTH
    height: int = HEIGHT
    path: str
    points: list[ChartPoint]
    y_ticks: list[ChartTick]
    x_ticks: list[ChartTick]


def history_chart(points: Sequence[tuple[datetime, int, str]], until: datetime | None = None) -> HistoryChart | None:
    """Chart ``(observed_at, latency_ns, label)`` record breaks as a step line.

    The record holds until the next break, so the line steps down at each one and runs
    on to ``until`` (the newest observation). ``None`` when there is nothing to draw.
    """
    if not points:
        return None
    times = [moment.timestamp() for moment, _, _ in points]
    end = max(times[-1], until.timestamp() if until else times[-1])
    start = times[0]
    span = (end - start) or 86_400.0
    logs = [math.log10(ns) for _, ns, _ in points]
    low, high = math.floor(min(logs) * 4) / 4, math.ceil(max(logs) * 4) / 4
    if high - low < 0.25:
        low, high = low - 0.25, high + 0.25

    def x(moment: float) -> float:
        return round(LEFT + (moment - start) / span * (WIDTH - LEFT - RIGHT), 1)

    def y(log_value: float) -> float:
        return round(TOP + (high - log_value) / (high - low) * (HEIGHT - TOP - BOTTOM), 1)

    coordinates = [(x(t), y(v)) for t, v in zip(times, logs, strict=True)]
    steps = [f"M{coordinates[0][0]},{coordinates[0][1]}"]
    steps.extend(f"H{nx}V{ny}" for nx, ny in coordinates[1:])
    steps.append(f"H{x(end)}")
    decades = [low + (high - low) * i / 4 for i in range(5)]
    labelled = len(points) <= 8
    return HistoryChart(
        path="".join(steps),
        points=[
            ChartPoint(x=cx, y=cy, label=label if labelled else "")
            for (cx, cy), (_, _, label) in zip(coordinates, points, strict=True)
        ],
        y_ticks=[ChartTick(position=y(value), label=latency(round(10**value))) for value in decades],
        x_ticks=[
            ChartTick(position=x(moment), label=datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d"))
            for moment in (start, end)
        ],
    )
