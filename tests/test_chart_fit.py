"""Every chart keeps its labels inside its own width: an SVG clips what it draws outside its viewBox.

Widths are the charts' own estimate (``text_width``, a wide font's advance widths); the
browser test (tests/test_page_kinds.py) checks the drawn result in Chromium.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kernelindex.web.charts import bar as bars_module
from kernelindex.web.charts import case as cases_module
from kernelindex.web.charts import gpu as gpus_module
from kernelindex.web.charts.bar import Bar, bar_chart, latency_tick
from kernelindex.web.charts.case import CaseFigure, latency_chart, share_chart
from kernelindex.web.charts.gpu import GpuFigures, gpu_chart
from kernelindex.web.charts.history import WIDTH, RecordPoint, fit_text, history_chart, label_column, text_width

LONG_GPU = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
LONG_KERNEL = "vLLM · vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic vLLM 0.24.0"


@pytest.mark.parametrize("width", [40, 120, 300])
def test_a_fitted_text_is_the_text_itself_or_a_start_of_it_that_fits(width):
    fitted = fit_text(LONG_KERNEL, width)
    assert text_width(fitted) <= width
    assert fitted == LONG_KERNEL or (fitted.endswith("…") and LONG_KERNEL.startswith(fitted[:-1]))
    assert fit_text("B200", width) == "B200"


def test_a_label_column_is_as_wide_as_its_longest_label_needs_within_its_bounds():
    assert label_column(["a"], 8, 72, 200) == 72
    needed = label_column(["N=1 H=1163 W=1249"], 8, 72, 200)
    assert 72 < needed < 200 and fit_text("N=1 H=1163 W=1249", needed - 8 - 2) == "N=1 H=1163 W=1249"
    assert label_column([LONG_KERNEL], 8, 72, 200) == 200


def test_a_long_gpu_name_is_shortened_on_its_row_and_whole_in_its_tooltip():
    figures = [
        GpuFigures("NVIDIA B200", 1_000_000, [("a", 1_000_000)], "mean"),
        GpuFigures(LONG_GPU, 9_000_000, [("a", 9_000_000)], "mean"),
    ]
    chart = gpu_chart(figures)
    assert chart is not None
    assert [row.gpu for row in chart.rows] == ["NVIDIA B200", LONG_GPU]
    assert chart.rows[0].label == "NVIDIA B200" and chart.rows[1].label.endswith("…")
    assert all(text_width(row.label) <= chart.left - gpus_module.LABEL_GAP for row in chart.rows)
    assert chart.width == gpus_module.WIDTH


def test_a_bar_its_label_and_its_figure_stay_inside_the_chart():
    chart = bar_chart(
        [Bar(LONG_KERNEL, 80_000, "80.0 µs"), Bar("b", 79_000, "79.0 µs")],
        title="t",
        description="d",
        axis_title="latency (mean), shorter is faster, over a long description of what the figures are",
        value_heading="x",
        tick_text=latency_tick("µs"),
    )
    assert chart is not None
    assert chart.bars[0].full_label == LONG_KERNEL and chart.bars[0].label.endswith("…")
    assert text_width(chart.bars[0].label) <= chart.left - bars_module.LABEL_GAP
    for bar in chart.bars:
        assert chart.left + bar.width + bars_module.VALUE_GAP + text_width(bar.value_text) <= chart.width
    assert all(chart.left <= tick.position <= chart.right_edge for tick in chart.x_ticks)
    half = text_width(chart.axis_title_text) / 2
    assert chart.axis_title_x - half >= 0 and chart.axis_title_x + half <= chart.width


def test_case_labels_fit_their_column_and_values_fit_the_chart():
    labels = ["N=1 H=1163 W=1249", "N=8 H=480 W=640"]
    for chart in (
        latency_chart([CaseFigure(label, 1000.0 * (i + 1)) for i, label in enumerate(labels)], "median", "p20–p80"),
        share_chart([CaseFigure(label, 50.0 + i) for i, label in enumerate(labels)], "Share of the speed of light"),
    ):
        assert [row.short_label for row in chart.rows] == labels
        assert all(text_width(row.label) <= chart.left - cases_module.LABEL_GAP for row in chart.rows)
        assert all(row.x + 8 + text_width(row.value) <= chart.width for row in chart.rows)


@pytest.mark.parametrize("day", [2, 20])
def test_the_record_label_fits_on_the_side_of_its_point_with_more_room(day):
    points = [
        RecordPoint(datetime(2026, 8, 1, tzinfo=UTC), 2_000_000, "a", None),
        RecordPoint(datetime(2026, 8, day, tzinfo=UTC), 1_200_000, LONG_KERNEL, 1.6),
    ]
    chart = history_chart(points, until=datetime(2026, 8, 30, tzinfo=UTC))
    assert chart is not None and chart.label == f"{LONG_KERNEL}, 1.200 ms" and chart.label_text.endswith("…, 1.200 ms")
    drawn = text_width(chart.label_text)
    if chart.label_anchor == "end":
        assert chart.label_x - drawn >= 0
    else:
        assert chart.label_x + drawn <= WIDTH
