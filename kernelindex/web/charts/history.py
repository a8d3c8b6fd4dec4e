"""A server-side SVG chart of record history: latency of the #1 over time, log scale.

Also what the other charts share: ``LogScale`` for latency, ``time_ticks`` for dates, and
``text_width``/``fit_text`` to keep a label inside the chart (an SVG clips whatever it draws
outside its viewBox, and a label's width is known only once a font draws it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from kernelindex.web.format import improvement, latency

# Charts are drawn about as wide as a phone's screen, so that one fits it whole (its 11 px type
# then shows at about 8 px); the stylesheet caps how far a wide screen enlarges them.
WIDTH, HEIGHT = 480, 220
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 16, 32
DAY = 86_400.0
# Advance widths in em of DejaVu Sans, the widest of the common system sans fonts (and the one
# Chromium draws with on Debian), so that a label fitted by them fits in narrower fonts too.
NARROW_CHARACTERS = dict.fromkeys("ijl.,:;|!'·", 0.32) | dict.fromkeys(" ()[]/-", 0.36) | {"I": 0.3, "J": 0.3}
SLIM_CHARACTERS = {"f": 0.36, "t": 0.4, "r": 0.42, "s": 0.53, "c": 0.56, "z": 0.53, "k": 0.58, "_": 0.5}
WIDE_CHARACTERS = dict.fromkeys("mM", 0.98) | dict.fromkeys("wW", 1.0) | dict.fromkeys("=×…+<>~", 0.84)
UPPER_WIDTH, OTHER_WIDTH = 0.78, 0.64  # capitals (at most), and lowercase letters, digits and the rest
LABEL_GAP = 8  # between the current record's point and its label
# The most date ticks an axis carries: at 11 px type a date label needs about 70 px.
MAX_TIME_TICKS = 5


class ChartPoint(BaseModel):
    x: float
    y: float
    title: str  # the point's tooltip: date, implementation, latency and gain


class ChartTick(BaseModel):
    position: float
    label: str


class HistoryChart(BaseModel):
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    axis_y: int = HEIGHT - BOTTOM
    path: str
    points: list[ChartPoint]
    y_ticks: list[ChartTick]
    x_ticks: list[ChartTick]
    # The current record, labelled on the chart (``label_text``, shortened to fit the chart);
    # anchored to its left when near the right edge.
    label: str
    label_text: str
    label_x: float
    label_y: float
    label_anchor: str


@dataclass(frozen=True)
class RecordPoint:
    observed_at: datetime
    latency_ns: int
    implementation: str
    improvement: float | None  # how many times faster than the record it broke; None for the first


def text_width(text: str, size: float = 11) -> float:
    """The width in px that ``text`` takes at ``size`` px in a wide sans font (an upper estimate)."""
    return size * sum(
        NARROW_CHARACTERS.get(c)
        or SLIM_CHARACTERS.get(c)
        or WIDE_CHARACTERS.get(c)
        or (UPPER_WIDTH if c.isupper() else OTHER_WIDTH)
        for c in text
    )


def fit_text(text: str, width: float, size: float = 11) -> str:
    """``text`` if it fits in ``width`` px at ``size`` px, else its longest start that fits with "…"
    after it (the full text belongs in the mark's ``<title>``)."""
    if text_width(text, size) <= width:
        return text
    end = len(text)
    while end > 0 and text_width(text[:end].rstrip() + "…", size) > width:
        end -= 1
    return text[:end].rstrip() + "…"


def label_column(labels: Sequence[str], gap: float, narrowest: float, widest: float) -> int:
    """The width of a chart's column of row labels: what the longest of ``labels`` takes, with
    ``gap`` before the plot, at least ``narrowest`` and at most ``widest`` (a longer label is
    shortened by ``fit_text``)."""
    needed = max((text_width(label) for label in labels), default=0) + gap + 2
    return math.ceil(min(max(needed, narrowest), widest))


def _month_start(moment: datetime, months: int) -> datetime:
    index = (moment.year * 12 + moment.month - 1) // months * months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


# Tick steps, fine to coarse: (days, months); a step in months starts on the first of a month.
TIME_STEPS = ((1, 0), (2, 0), (7, 0), (14, 0), (0, 1), (0, 2), (0, 3), (0, 6), (0, 12), (0, 24), (0, 60))


def time_ticks(start: datetime, end: datetime) -> list[datetime]:
    """Calendar dates inside ``[start, end]``, evenly spaced (days, weeks, months or years apart),
    at most ``MAX_TIME_TICKS`` of them, each a distinct date; the start's date for a shorter span."""
    for days, months in TIME_STEPS:
        if days:
            first = datetime(start.year, start.month, start.day, tzinfo=UTC)
            first += timedelta(days=(-first.toordinal()) % days)  # align on a multiple of the step
            moments = [first + timedelta(days=days * i) for i in range(MAX_TIME_TICKS + 2)]
        else:
            first = _month_start(start, months)
            moments = [_add_months(first, months * i) for i in range(MAX_TIME_TICKS + 2)]
        inside = [moment for moment in moments if start <= moment <= end]
        if len(inside) <= MAX_TIME_TICKS and (len(inside) >= 2 or moments[1] > end):
            return inside or [datetime(start.year, start.month, start.day, tzinfo=UTC)]
    return [start]


def _tick_label(moment: datetime, ticks: Sequence[datetime]) -> str:
    """A date as precise as the ticks need: "2026-07-05" days or weeks apart, "2026-07" months
    apart, "2026" years apart."""
    if len(ticks) > 1 and all(tick.day == 1 for tick in ticks):
        if all(tick.month == 1 for tick in ticks):
            return moment.strftime("%Y")
        return moment.strftime("%Y-%m")
    return moment.strftime("%Y-%m-%d")


def history_chart(points: Sequence[RecordPoint], until: datetime | None = None) -> HistoryChart | None:
    """Chart record breaks, oldest first, as a step line on a calendar time axis.

    The record holds until the next break, so the line steps down at each one and runs
    on to ``until`` (the newest observation). ``None`` when there is nothing to draw.
    """
    if not points:
        return None
    newest = max(points[-1].observed_at, until or points[-1].observed_at)
    first, last = points[0].observed_at, newest
    if (last - first).total_seconds() < DAY:
        # One day's records: a week around them, so that the day has room and its own tick.
        first, last = first - timedelta(days=3), last + timedelta(days=3)
    start, end = first.timestamp(), last.timestamp()
    scale = log_scale([point.latency_ns for point in points], HEIGHT - BOTTOM, TOP)

    def x(moment: float) -> float:
        return round(LEFT + (moment - start) / (end - start) * (WIDTH - LEFT - RIGHT), 1)

    coordinates = [(x(point.observed_at.timestamp()), scale.at(point.latency_ns)) for point in points]
    steps = [f"M{coordinates[0][0]},{coordinates[0][1]}"]
    steps.extend(f"H{nx}V{ny}" for nx, ny in coordinates[1:])
    steps.append(f"H{x(newest.timestamp())}")
    ticks = time_ticks(first, last)
    current = points[-1]
    label_x, label_y = coordinates[-1]
    near_right = label_x > (LEFT + WIDTH - RIGHT) / 2
    # The label runs from the point to the chart's edge on the side with more room; a long
    # implementation name is shortened to fit (each point's tooltip names it in full).
    figure = f", {latency(current.latency_ns)}"
    room = (label_x - LABEL_GAP if near_right else WIDTH - label_x - LABEL_GAP) - 2 - text_width(figure)
    return HistoryChart(
        path="".join(steps),
        points=[
            ChartPoint(
                x=cx,
                y=cy,
                title=(
                    f"{point.observed_at:%Y-%m-%d}: {point.implementation}, {latency(point.latency_ns)}, "
                    + ("first record" if point.improvement is None else improvement(point.improvement))
                ),
            )
            for (cx, cy), point in zip(coordinates, points, strict=True)
        ],
        y_ticks=scale.ticks(),
        x_ticks=[ChartTick(position=x(moment.timestamp()), label=_tick_label(moment, ticks)) for moment in ticks],
        label=current.implementation + figure,
        label_text=fit_text(current.implementation, room) + figure,
        label_x=round(label_x - LABEL_GAP if near_right else label_x + LABEL_GAP, 1),
        label_y=round(max(label_y - 8, TOP + 10), 1),
        label_anchor="end" if near_right else "start",
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
