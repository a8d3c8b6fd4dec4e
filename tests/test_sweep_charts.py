"""The server-side charts of the workload page, as plain functions: axes, gaps and categories."""

from __future__ import annotations

import pytest

from kernelindex.web.chart import log_scale, round_latency
from kernelindex.web.gpu_chart import GpuFigures, gpu_chart
from kernelindex.web.sweep_chart import SweepLine, sweep_chart


def test_a_case_no_run_measured_breaks_the_line_and_its_band():
    line = SweepLine("a", [(10_000, 9_000, 11_000), None, (40_000, 36_000, 44_000), (80_000, 72_000, 88_000)])
    chart = sweep_chart("n", [1, 2, 4, 8], True, [line])
    series = chart.series[0]
    assert series.path.count("M") == 2 and series.path.count("L") == 1
    # The lone first case gets a whisker; the two neighbours share one band.
    assert len(series.whiskers) == 1 and len(series.bands) == 1
    assert series.whiskers[0].y_high < series.markers[0].y < series.whiskers[0].y_low
    assert [marker.label for marker in series.markers] == ["a, n 1: 10.0 µs", "a, n 4: 40.0 µs", "a, n 8: 80.0 µs"]


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
