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


# Mantissas of the round latencies an axis is labelled at, coarse to fine.
TICK_STEPS = ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))


class LogScale(BaseModel):
    """Latency in ns to a pixel position on a log10 axis running from ``start`` to ``end`` pixels."""

    low: float  # log10 of the smallest latency the axis shows
    high: float
    start: float
    end: float

    def at(self, ns: float) -> float:
        return round(self.start + (math.log10(ns) - self.low) / (self.high - self.low) * (self.end - self.start), 1)

    def ticks(self) -> list[ChartTick]:
        """Round latencies inside the axis: 1, 2 and 5 × a power of ten ns (decades only when those
        crowd it), finer steps on a short axis, and the two ends when even those miss it."""
        decades = range(math.floor(self.low), math.ceil(self.high) + 1)
        inside: list[int] = []
        for steps in TICK_STEPS:
            inside = sorted(
                {round(m * 10**e) for e in decades for m in steps if self.low <= math.log10(m * 10**e) <= self.high}
            )
            if len(inside) >= 2:
                break
        if len(inside) > 7:
            inside = [value for value in inside if str(value).startswith("1")]
        if len(inside) > 7:
            inside = inside[::2]
        if len(inside) < 2:
            inside = [round(10**self.low), round(10**self.high)]
        return [ChartTick(position=self.at(value), label=round_latency(value)) for value in inside]


def round_latency(ns: int) -> str:
    """A round latency as an axis labels it: "2 ms", "500 µs", "1.5 µs" (no trailing zeros)."""
    number, unit = latency(ns).split(" ")
    return f"{number.rstrip('0').rstrip('.') if '.' in number else number} {unit}"


def log_scale(latencies: Sequence[float], start: float, end: float) -> LogScale:
    """An axis holding every one of ``latencies`` (positive ns) with a little room at both ends."""
    logs = [math.log10(value) for value in latencies]
    low, high = min(logs), max(logs)
    pad = max((high - low) * 0.06, 0.08)
    return LogScale(low=low - pad, high=high + pad, start=start, end=end)
