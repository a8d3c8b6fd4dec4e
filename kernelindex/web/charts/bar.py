"""A server-side SVG horizontal bar chart: one bar per implementation on a linear axis from zero.

The leaderboard draws its ranked table with it (latency per implementation) and, where the
group has a baseline, each implementation's speed-up over it, with a rule at 1×. Bars start
at zero, so their lengths compare as the figures do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from kernelindex.web.charts.history import ChartTick, fit_text, label_column, text_width
from kernelindex.web.format import UNIT_SIZES, significant

WIDTH = 560  # about a phone's width, as every chart (kernelindex.web.charts.history)
# The label column is as wide as the longest label needs, from NARROWEST to WIDEST.
NARROWEST, WIDEST, RIGHT, TOP, BOTTOM = 80, 220, 64, 8, 40
ROW = 24
BAR = 14
# A label ends this far left of the axis; one too long for its column is shortened with "…" (the
# full name is the bar's and the label's title).
LABEL_GAP = 8
VALUE_GAP = 6  # between a bar's end and its figure


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    value_text: str  # the figure as the table beside the chart writes it
    url: str | None = None
    highlight: bool = False  # the #1, or the baseline itself
    # The interval around ``value`` (``kernelindex.uncertainty``), drawn as a whisker; None: unknown.
    low: float | None = None
    high: float | None = None
    interval_text: str | None = None


class ChartBar(BaseModel):
    label: str
    full_label: str
    y: float  # the bar's top
    text_y: float  # the baseline of its labels
    width: float
    value_text: str
    url: str | None
    highlight: bool
    whisker: tuple[float, float] | None = None  # the interval's ends on the axis
    text_x: float = 0  # where its figure is written: past the bar and its whisker
    interval_text: str | None = None


class BarChart(BaseModel):
    title: str
    description: str
    width: int = WIDTH
    height: int
    left: int
    right_edge: int = WIDTH - RIGHT
    bar_height: int = BAR
    axis_y: float
    axis_title: str
    # The axis title as drawn: centred under the bars, moved left as far as it must to fit the
    # chart, and shortened with "…" only if wider than the whole chart (then its title is whole).
    axis_title_text: str
    axis_title_x: float
    value_heading: str  # the figures' column in the table beside the chart
    bars: list[ChartBar]
    x_ticks: list[ChartTick]
    rule_x: float | None = None  # a reference rule, e.g. at 1× on a speed-up chart (its tick names it)
    whiskers: bool = False  # some bar has an interval: the table gives the intervals too


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Round values from 0 to at least ``high``: steps of 1, 2 or 5 × a power of ten, about ``count`` of them."""
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [step * index for index in range(math.ceil(high / step - 1e-9) + 1)]


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    description: str,
    axis_title: str,
    value_heading: str,
    tick_text: Callable[[float], str],
    rule_at: float | None = None,
) -> BarChart | None:
    """``None`` with fewer than two bars: one figure needs no chart. ``tick_text`` writes an axis value.

    The axis is stretched where needed so that the figure written after the longest bar ends
    inside the chart."""
    if len(bars) < 2 or any(bar.value <= 0 for bar in bars):
        return None
    reach = [max(bar.value, bar.high or 0) for bar in bars]  # a bar's end, or its whisker's
    ticks = nice_ticks(max(reach) if rule_at is None else max(rule_at, *reach))
    top = ticks[-1]
    left = label_column([bar.label for bar in bars], LABEL_GAP, NARROWEST, WIDEST)
    span = WIDTH - RIGHT - left
    room = WIDTH - 2 - left  # where a bar and its figure may reach
    top = max(
        top,
        *(end * span / (room - VALUE_GAP - text_width(bar.value_text)) for bar, end in zip(bars, reach, strict=True)),
    )

    def x(value: float) -> float:
        return round(left + value / top * span, 1)

    def whisker(bar: Bar) -> tuple[float, float] | None:
        return None if bar.low is None or bar.high is None else (x(bar.low), x(bar.high))

    axis_y = TOP + ROW * len(bars)
    return BarChart(
        title=title,
        description=description,
        height=round(axis_y + BOTTOM),
        left=left,
        axis_y=axis_y,
        axis_title=axis_title,
        axis_title_text=(shown := fit_text(axis_title, WIDTH - 4)),
        axis_title_x=round(min((left + WIDTH - RIGHT) / 2, WIDTH - 2 - text_width(shown) / 2), 1),
        value_heading=value_heading,
        bars=[
            ChartBar(
                label=fit_text(bar.label, left - LABEL_GAP - 2),
                full_label=bar.label,
                y=TOP + ROW * index + (ROW - BAR) / 2,
                text_y=TOP + ROW * index + ROW / 2 + 4,
                width=max(round(x(bar.value) - left, 1), 1.0),
                value_text=bar.value_text,
                url=bar.url,
                highlight=bar.highlight,
                whisker=whisker(bar),
                text_x=round(max(x(bar.value), x(bar.high or 0)) + VALUE_GAP, 1),
                interval_text=bar.interval_text,
            )
            for index, bar in enumerate(bars)
        ],
        whiskers=any(whisker(bar) for bar in bars),
        x_ticks=[ChartTick(position=x(value), label=tick_text(value)) for value in ticks if value <= top],
        rule_x=x(rule_at) if rule_at is not None else None,
    )


def _plain(value: float) -> str:
    text = significant(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def ratio_tick(value: float) -> str:
    """An axis value of a ratio axis: "0×", "1×", "2.5×", "10×"."""
    return "0×" if value == 0 else f"{_plain(value)}×"


def latency_tick(unit: str) -> Callable[[float], str]:
    """Axis values of a latency axis (ns) in ``unit``: "0", "20 µs", "1.5 ms"."""
    size = UNIT_SIZES[unit]
    return lambda value: "0" if value == 0 else f"{_plain(value / size)} {unit}"
