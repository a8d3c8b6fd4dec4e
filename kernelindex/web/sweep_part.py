"""The workload page's sweep section: the selected group's per-case latencies as a chart and as a
table of the same numbers (cases × implementations), with peak memory beside latency."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex import urls
from kernelindex.store.sweeps import NOISE_SPREAD, Sweep, SweepPoint, SweepSeries
from kernelindex.web.charts.sweep import SweepChart, SweepLine, sweep_chart
from kernelindex.web.format import latency_in, latency_unit
from kernelindex.web.pages import Part

if TYPE_CHECKING:  # case_window builds its pager on this module's base model
    from kernelindex.web.case_window import CaseWindow


class SweepColumn(Part):
    """One implementation's series: the run it comes from and how much of the sweep that run measured."""

    implementation: str
    title: str
    style: str  # the chart's class for this series, shared by its legend swatch
    run: str
    run_url: str
    statistic: str
    spread: str | None  # e.g. "p20–p80"
    cases_measured: int
    cases_text: str | None  # "6 of 8 cases" when the run measured fewer than the workload holds
    has_memory: bool


class SweepCell(Part):
    latency_ns: int | None
    latency: str
    low_ns: int | None
    high_ns: int | None
    spread: str | None
    peak_memory_mb: float | None
    peak_memory: str | None


class SweepRow(Part):
    index: int
    value: str
    cells: list[SweepCell]


class SweepPart(Part):
    axis: str
    axis_description: str | None
    numeric: bool
    case_count: int
    columns: list[SweepColumn]
    rows: list[SweepRow]
    chart: SweepChart
    has_memory: bool


def cases_text(measured: int | None, total: int) -> str | None:
    """ "6 of 8 cases" for a run that measured part of its suite; ``None`` when it measured all of it
    (or publishes no per-case results)."""
    return f"{measured} of {total} cases" if measured is not None and measured < total else None


def megabytes(value: float) -> str:
    return f"{value:,.0f} MB" if value >= 100 else f"{value:,.1f} MB"


def _cell(point: SweepPoint | None, unit: str) -> SweepCell:
    """One case of one implementation, written in ``unit``: its column's, shared by every case."""
    if point is None:
        return SweepCell(
            latency_ns=None,
            latency="not measured",
            low_ns=None,
            high_ns=None,
            spread=None,
            peak_memory_mb=None,
            peak_memory=None,
        )
    spread = (
        f"{latency_in(point.low_ns, unit)}–{latency_in(point.high_ns, unit)}"
        if point.low_ns is not None and point.high_ns is not None
        else None
    )
    return SweepCell(
        latency_ns=point.latency_ns,
        latency=latency_in(point.latency_ns, unit),
        low_ns=point.low_ns,
        high_ns=point.high_ns,
        spread=spread,
        peak_memory_mb=point.peak_memory_mb,
        peak_memory=megabytes(point.peak_memory_mb) if point.peak_memory_mb is not None else None,
    )


def _spread_text(spread: tuple[str, str] | None) -> str | None:
    """ "p20–p80", or "± 10.0 % source noise" for a band of the source's noise."""
    if spread is None:
        return None
    if spread[0] == NOISE_SPREAD:
        return f"± {spread[1]} source noise"
    return "–".join(spread)


def _column(series: SweepSeries, case_count: int, style: str) -> SweepColumn:
    return SweepColumn(
        implementation=series.implementation,
        title=series.implementation_title,
        style=style,
        run=series.run,
        run_url=urls.run(series.run),
        statistic=series.statistic,
        spread=_spread_text(series.spread),
        cases_measured=series.cases_measured,
        cases_text=cases_text(series.cases_measured, case_count),
        has_memory=series.has_memory,
    )


def sweep_part(sweep: Sweep, window: CaseWindow) -> SweepPart:
    """The sweep over the cases of ``window`` (its runs' columns describe their whole sweep)."""
    shown = range(window.start, min(window.stop, len(sweep.values)))
    values = sweep.values[shown.start : shown.stop]  # several varying axes: each label written here
    chart = sweep_chart(
        sweep.axis,
        values,
        sweep.numeric,
        [
            SweepLine(
                title=series.implementation_title,
                points=[
                    (point.latency_ns, point.low_ns, point.high_ns) if (point := series.points[position]) else None
                    for position in shown
                ],
            )
            for series in sweep.series
        ],
    )
    columns = [
        _column(series, sweep.case_count, chart.series[position].style) for position, series in enumerate(sweep.series)
    ]
    units = [
        latency_unit(point.latency_ns for position in shown if (point := series.points[position]) is not None)
        for series in sweep.series
    ]
    return SweepPart(
        axis=sweep.axis,
        axis_description=sweep.axis_description,
        numeric=sweep.numeric,
        case_count=sweep.case_count,
        columns=columns,
        rows=[
            SweepRow(
                index=position + 1,
                value=str(value),
                cells=[_cell(series.points[position], unit) for series, unit in zip(sweep.series, units, strict=True)],
            )
            for position, value in zip(shown, values, strict=True)
        ],
        chart=chart,
        has_memory=any(column.has_memory for column in columns),
    )
