"""Timing statistics and roofline bounds on known numbers (pure functions, no torch)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelindex.rerun import roofline, stats

CONV_CONST = {"in_channels": 3, "hidden_channels": 32, "out_channels": 3, "kernel_size": 3, "padding": 1}


def test_stats_median_percentile_and_geometric_mean_on_known_samples() -> None:
    assert stats.median([5, 1, 3]) == 3
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.percentile([10, 20, 30, 40, 50], 10) == pytest.approx(14.0)
    assert stats.percentile([10, 20, 30, 40, 50], 90) == pytest.approx(46.0)
    assert stats.percentile([7], 50) == 7
    assert stats.geometric_mean([1, 100]) == pytest.approx(10.0)
    assert stats.geometric_mean([2, 8, 4]) == pytest.approx(4.0)
    assert stats.suite_latency_ns([1000, 4000]) == 2000


@pytest.mark.parametrize("bad", [[], [0, 1], [-1.0]])
def test_stats_geometric_mean_refuses_empty_or_non_positive(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        stats.geometric_mean(bad)


def test_stats_case_summary_pools_trials_and_keeps_raw_samples() -> None:
    trials = [[100, 200, 300], [400, 500, 600], [700, 800, 900]]
    summary = stats.summarize_case(trials)
    assert summary["medianNs"] == 500
    assert summary["trialMediansNs"] == [200, 500, 800]
    assert (summary["minNs"], summary["maxNs"]) == (100, 900)
    assert summary["p10Ns"] == 180 and summary["p90Ns"] == 820
    assert (summary["q1Ns"], summary["q3Ns"], summary["iqrNs"]) == (300, 700, 400)
    assert summary["meanNs"] == 500
    assert summary["sampleCount"] == 9
    assert summary["samplesNs"] == trials
    assert all(isinstance(v, int) for k, v in summary.items() if k.endswith("Ns") and not isinstance(v, list))


def test_stats_case_summary_refuses_missing_or_non_positive_samples() -> None:
    with pytest.raises(ValueError):
        stats.summarize_case([[]])
    with pytest.raises(ValueError):
        stats.summarize_case([[5, 0]])


def test_roofline_adain_counts_on_a_known_case() -> None:
    axes = {"N": 8, "C": 32, "H": 480, "W": 640}
    elements = 8 * 32 * 480 * 640
    bytes_moved, flops = roofline.adain_bwd_counts(axes)
    assert bytes_moved == 4 * (3 * elements + 32 + 2 * 8 * 32 + 2 * 32)
    assert flops == 9 * elements
    record = roofline.case_roofline(
        "l1-039-adaptive-instance-normalization-2d-backward", axes, copy_bytes_per_s=4e12, fp32_flops_per_s=5e13
    )
    assert record["memoryNs"] == pytest.approx(bytes_moved / 4e12 * 1e9)
    assert record["boundNs"] == pytest.approx(bytes_moved / 4e3)  # ~943 us: memory-bound
    assert record["limiter"] == "memory"
    assert "fp32" in record["assumption"]


def test_roofline_conv_residual_counts_on_a_known_case() -> None:
    axes = CONV_CONST | {"batch_size": 2, "height": 4, "width": 5}
    pixels = 2 * 4 * 5
    bytes_moved, flops = roofline.conv_residual_counts(axes)
    assert bytes_moved == 4 * (pixels * 3 + (32 * 27 + 32 + 3 * 288 + 3) + pixels * 3)
    assert flops == 2 * pixels * (32 * 3 * 9 + 3 * 32 * 9) + pixels * (32 + 3 + 3)
    big = CONV_CONST | {"batch_size": 8, "height": 512, "width": 512}
    record = roofline.case_roofline("l1-040-conv2d-residual-block", big, 4e12, 5e13)
    assert record["limiter"] == "compute"
    assert record["boundNs"] == pytest.approx(record["flops"] / 5e13 * 1e9)
    assert math.isclose(
        roofline.bound_ns_at_rate(record["bytes"], record["flops"], 4e12, 5e13), record["boundNs"], rel_tol=1e-12
    )


def test_roofline_refuses_bad_axes_and_rates() -> None:
    with pytest.raises(ValueError):
        roofline.adain_bwd_counts({"N": 0, "C": 32, "H": 1, "W": 1})
    with pytest.raises(ValueError):
        roofline.bound_ns_at_rate(1, 1, 0.0, 1.0)


@given(
    seed=st.integers(min_value=0, max_value=2**64),
    n=st.sampled_from([1, 2, 3, 7, 128, 129, 150, 255, 256, 1000, 2**31 + 5]),
    count=st.integers(min_value=0, max_value=700),
)
def test_bulk_randrange_draws_are_those_of_randrange(seed: int, n: int, count: int) -> None:
    expected_rng = random.Random(seed)
    expected = [expected_rng.randrange(n) for _ in range(count)]
    assert stats.randrange_draws(random.Random(seed), n, count) == expected


@given(
    samples=st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=300),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_bootstrap_interval_is_the_one_randrange_resampling_gives(samples: list[int], seed: int) -> None:
    rng = random.Random(seed)
    n = len(samples)
    medians = [stats.median([samples[rng.randrange(n)] for _ in range(n)]) for _ in range(40)]
    expected = (round(stats.percentile(medians, 2.5)), round(stats.percentile(medians, 97.5)))
    assert stats.bootstrap_median_interval(samples, resamples=40, confidence=0.95, seed=seed) == expected
