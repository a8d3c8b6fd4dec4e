"""The server-side charts of the workload page, as plain functions: axes, gaps, categories, bars and dates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kernelindex.manifests.kinds import WorkloadCase
from kernelindex.store.sweeps import CaseLabels, _swept_axis
from kernelindex.web.charts.bar import Bar, bar_chart, latency_tick, nice_ticks, ratio_tick
from kernelindex.web.charts.gpu import GpuFigures, gpu_chart
from kernelindex.web.charts.history import RecordPoint, history_chart, log_scale, round_latency, time_ticks
from kernelindex.web.charts.sweep import SweepLine, sweep_chart


def test_a_case_no_run_measured_breaks_the_line_and_its_band():
    line = SweepLine("a", [(10_000, 9_000, 11_000), None, (40_000, 36_000, 44_000), (80_000, 72_000, 88_000)])
    chart = sweep_chart("n", [1, 2, 4, 8], True, [line])
    series = chart.series[0]
    assert series.path.count("M") == 2 and series.path.count("L") == 1
    # The lone first case gets a whisker; the two neighbours share one band.
    assert len(series.whiskers) == 1 and len(series.bands) == 1
    assert series.whiskers[0].y_high < series.markers[0].y < series.whiskers[0].y_low
    assert [marker.label for marker in series.markers] == ["a, n 1: 10.00 µs", "a, n 4: 40.00 µs", "a, n 8: 80.00 µs"]


def test_a_dense_sweep_draws_its_lines_without_a_marker_per_case():
    values = list(range(1001, 1201))  # a linear axis: 200 cases 2.6 px apart
    full = SweepLine("full", [(n, None, None) for n in values])
    # Measured at two neighbouring cases and once alone: only the lone case has no line to show it.
    sparse = SweepLine(
        "sparse", [(5_000, None, None), (6_000, None, None)] + [None] * 97 + [(7_000, None, None)] + [None] * 100
    )
    chart = sweep_chart("n", values, True, [full, sparse])
    assert chart.series[0].markers == []
    assert [marker.label for marker in chart.series[1].markers] == ["sparse, n 1100: 7.000 µs"]
    assert chart.series[0].path.count("L") == 199


def test_markers_stand_where_neighbouring_cases_are_far_enough_apart():
    values = list(range(1001, 1041))  # 40 cases on a linear axis: about 13 px apart
    chart = sweep_chart("n", values, True, [SweepLine("a", [(1_000, None, None)] * 40)])
    assert len(chart.series[0].markers) == 40


def test_text_values_sit_on_a_categorical_axis_in_case_order():
    values = ["dtype=float16, mode=full", "dtype=bfloat16, mode=full", "dtype=float32, mode=forward"]
    chart = sweep_chart("case", values, False, [SweepLine("a", [(1_000, None, None)] * 3)])
    assert chart.x_scale == "categories"
    xs = [tick.position for tick in chart.x_ticks]
    assert xs == sorted(xs) and xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.1)
    assert [tick.label for tick in chart.x_ticks] == ["dtype=float16…", "dtype=bfloat1…", "dtype=float32…"]
    assert chart.series[0].bands == [] and chart.series[0].whiskers == []


@pytest.mark.parametrize(
    ("values", "scale"),
    [([4096, 8192, 16384, 131072], "log"), ([1024, 2048, 3072], "linear"), ([0, 1, 2], "linear")],
)
def test_numbers_are_spaced_by_log_when_they_span_a_factor_of_four(values, scale):
    chart = sweep_chart("x", values, True, [SweepLine("a", [(1_000, None, None)] * len(values))])
    assert chart.x_scale == scale
    assert [tick.label for tick in chart.x_ticks] == [str(value) for value in values]


def test_many_cases_label_every_few_on_the_axis():
    values = list(range(1, 25))
    chart = sweep_chart("x", values, True, [SweepLine("a", [(1_000, None, None)] * 24)])
    assert [tick.label for tick in chart.x_ticks] == [str(value) for value in values[::3]]


def test_log_axis_ticks_are_round_latencies_inside_the_axis():
    scale = log_scale([15_000, 90_000], 0, 100)
    labels = [tick.label for tick in scale.ticks()]
    assert labels == ["20 µs", "50 µs", "100 µs"]  # 100 µs: inside the room left above 90 µs
    wide = log_scale([1_000, 50_000_000], 0, 100)
    assert [tick.label for tick in wide.ticks()] == ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms"]
    # A short axis is labelled at finer round steps.
    narrow = log_scale([809_800, 987_500], 0, 100)
    assert [tick.label for tick in narrow.ticks()] == ["700 µs", "1 ms"]
    assert [round_latency(ns) for ns in (2_000_000, 500_000, 1_500)] == ["2 ms", "500 µs", "1.5 µs"]


def test_one_gpu_is_no_chart_across_gpus():
    assert gpu_chart([GpuFigures("NVIDIA B200", 1_000, [("a", 1_000)], "mean")]) is None
    chart = gpu_chart(
        [GpuFigures("NVIDIA B200", 1_000, [("a", 1_000)], "mean"), GpuFigures("NVIDIA L40S", 5_000, [], "median")]
    )
    assert chart is not None
    assert chart.axis_title == "latency (mean, median), log scale"
    assert [row.gpu for row in chart.rows] == ["NVIDIA B200", "NVIDIA L40S"]


def day(month: int, date: int, hour: int = 0) -> datetime:
    return datetime(2026, month, date, hour, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "labels"),
    [
        (day(6, 16, 5), day(7, 5, 9), ["2026-06-21", "2026-06-28", "2026-07-05"]),
        (day(1, 1), day(3, 30), ["2026-01", "2026-02", "2026-03"]),
        (datetime(2023, 1, 3, tzinfo=UTC), day(8, 1), ["2024", "2025", "2026"]),
    ],
)
def test_the_history_time_axis_has_distinct_evenly_spaced_calendar_ticks(start, end, labels):
    points = [RecordPoint(start, 30_000, "A", None), RecordPoint(end, 25_000, "B", 1.2)]
    chart = history_chart(points)
    assert chart is not None
    assert [tick.label for tick in chart.x_ticks] == labels
    gaps = [b.position - a.position for a, b in zip(chart.x_ticks, chart.x_ticks[1:], strict=False)]
    if "-" in labels[0] and len(labels[0]) == 10:  # days or weeks apart: exactly even
        assert max(gaps) - min(gaps) < 0.2
    assert all(chart.left <= tick.position <= chart.right_edge for tick in chart.x_ticks)
    assert len(time_ticks(start, end)) == len(labels)


def test_records_of_one_day_get_a_week_around_them_and_one_label_for_the_current_record():
    points = [
        RecordPoint(day(8, 12, 1), 27_739, "Geometric", None),
        RecordPoint(day(8, 12, 9), 25_913, "Geometric", 27_739 / 25_913),
    ]
    chart = history_chart(points)
    assert chart is not None
    labels = [tick.label for tick in chart.x_ticks]
    assert "2026-08-12" in labels and len(labels) == len(set(labels)) >= 3
    assert chart.label == "Geometric, 25.91 µs"
    assert [point.title for point in chart.points] == [
        "2026-08-12: Geometric, 27.74 µs, first record",
        "2026-08-12: Geometric, 25.91 µs, 1.07× faster",
    ]
    assert chart.label_anchor in {"start", "end"} and chart.left <= chart.label_x <= chart.right_edge


def test_a_tiny_gain_is_a_percentage_not_one_times_faster():
    points = [RecordPoint(day(8, 1), 26_091, "A", None), RecordPoint(day(8, 9), 26_013, "B", 26_091 / 26_013)]
    chart = history_chart(points)
    assert chart is not None and chart.points[1].title.endswith("0.3 % faster")


# A bar chart's title, description and headings, which these tests do not look at.
WORDS = {"title": "t", "description": "d", "axis_title": "x", "value_heading": "x"}


def test_bars_start_at_zero_and_scale_with_their_figures():
    bars = [Bar("fast", 20_000, "20.0 µs", highlight=True), Bar("slow", 80_000, "80.0 µs")]
    chart = bar_chart(bars, **WORDS, tick_text=latency_tick("µs"))
    assert chart is not None
    assert chart.bars[1].width == pytest.approx(4 * chart.bars[0].width, rel=0.01)
    assert [tick.label for tick in chart.x_ticks] == ["0", "20 µs", "40 µs", "60 µs", "80 µs"]
    assert chart.x_ticks[0].position == chart.left and chart.bars[0].highlight and not chart.bars[1].highlight
    assert chart.height == chart.axis_y + 40


def test_a_speed_up_chart_draws_its_rule_at_one_and_a_single_bar_draws_nothing():
    bars = [Bar("a", 2.5, "2.50×"), Bar("baseline", 1.0, "1.00×", highlight=True)]
    chart = bar_chart(bars, **WORDS, tick_text=ratio_tick, rule_at=1.0)
    assert chart is not None and chart.rule_x == next(t.position for t in chart.x_ticks if t.label == "1×")
    assert bar_chart(bars[:1], **WORDS, tick_text=ratio_tick) is None


def test_long_names_are_shortened_in_the_chart_and_whole_in_the_tooltip():
    name = "Liger-Kernel · liger_cutile_fused_add_rms_norm, with a long description of its configuration"
    chart = bar_chart(
        [Bar(name, 2, "2"), Bar("b", 1, "1")],
        title="t",
        description="d",
        axis_title="x",
        value_heading="x",
        tick_text=str,
    )
    assert chart is not None and chart.bars[0].label.endswith("…") and chart.bars[0].full_label == name


@pytest.mark.parametrize(
    ("high", "ticks"), [(981_000, [0, 200_000, 400_000, 600_000, 800_000, 1_000_000]), (1.38, [0, 0.5, 1.0, 1.5])]
)
def test_nice_ticks_cover_the_largest_bar_in_round_steps(high, ticks):
    assert nice_ticks(high) == pytest.approx(ticks)


def test_cases_varying_several_axes_are_labelled_by_all_of_them_when_read():
    cases = [WorkloadCase(axes={"m": m, "n": n, "dtype": "fp16"}) for m, n in [(1, 8), (2, 16), (4, 32)]]
    axis, values = _swept_axis(cases)
    assert axis == "case" and isinstance(values, CaseLabels)
    assert list(values) == ["m=1, n=8", "m=2, n=16", "m=4, n=32"]
    assert values[-1] == "m=4, n=32" and values[1:] == ["m=2, n=16", "m=4, n=32"]
    assert list(_swept_axis([WorkloadCase(axes={})] * 2)[1]) == ["1", "2"]  # no axis: numbered
