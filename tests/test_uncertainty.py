"""The uncertainty of a ranked figure and the rank ranges it allows (``kernelindex.uncertainty``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kernelindex.ranking import RunFacts, rank_group, record_history
from kernelindex.uncertainty import (
    REPORTED_PERCENTILES,
    REPORTED_STD,
    SAMPLES,
    SOURCE_NOISE,
    Uncertainty,
    figure_uncertainty,
    headline_text,
    noise_uncertainty,
    rank_ranges,
    rank_texts,
    suite_uncertainty,
    tied_with_best,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _run(name: str, ns: int, spread: float | None, day: int = 0) -> RunFacts:
    """A run whose figure is ``ns`` ± ``spread`` (a fraction), or of unknown spread."""
    uncertainty = None if spread is None else noise_uncertainty(ns, spread)
    return RunFacts(name, "g", ns, T0 + timedelta(days=day), uncertainty=uncertainty)


def test_kernelbench_std_gives_mean_plus_minus_two_standard_errors() -> None:
    found = figure_uncertainty({"mean": 1_000_000, "min": 900_000}, "mean", {"std_ms": 0.05, "num_trials": 100})
    # 2 × 0.05 ms / √100 = 0.01 ms
    assert found == Uncertainty(REPORTED_STD, 990_000, 1_010_000)


def test_liger_percentiles_and_rerun_intervals_are_taken_as_reported() -> None:
    assert figure_uncertainty({"median": 500, "p20": 480, "p80": 530}, "median") == Uncertainty(
        REPORTED_PERCENTILES, 480, 530
    )
    rerun = {"median": 500, "p10": 400, "median_ci_low": 495, "median_ci_high": 507}
    assert figure_uncertainty(rerun, "median") == Uncertainty(SAMPLES, 495, 507)
    # A median outside its own percentiles widens the interval rather than falling outside it.
    assert figure_uncertainty({"median": 600, "p20": 480, "p80": 530}, "median") == Uncertainty(
        REPORTED_PERCENTILES, 480, 600
    )


def test_nothing_reported_is_unknown() -> None:
    assert figure_uncertainty({"mean": 1000}, "mean", {"std_ms": 0.1}) is None  # no trial count
    assert figure_uncertainty({"geomean": 1000}, "geomean") is None
    assert figure_uncertainty({"mean": 1000}, "mean", {"std_ms": True, "num_trials": 5}) is None


def test_suite_interval_is_the_geometric_mean_of_its_cases() -> None:
    cases = [Uncertainty(REPORTED_PERCENTILES, 90, 110), Uncertainty(REPORTED_PERCENTILES, 360, 440)]
    assert suite_uncertainty(cases, 200) == Uncertainty(REPORTED_PERCENTILES, 180, 220)
    assert suite_uncertainty([cases[0], None], 200) is None
    assert suite_uncertainty([cases[0], Uncertainty(SOURCE_NOISE, 1, 2)], 200) is None


def test_clear_winner_is_distinct_and_alone_at_one() -> None:
    ranked = rank_group([_run("a", 100, 0.02), _run("b", 150, 0.02), _run("c", 200, 0.02)])
    assert [entry.rank_range for entry in ranked] == [(1, 1), (2, 2), (3, 3)]
    assert [entry.distinct_from_best for entry in ranked] == [False, True, True]
    assert rank_texts([entry.rank_range for entry in ranked]) == ["1", "2", "3"]
    assert tied_with_best(ranked[0].run.interval, [entry.run.interval for entry in ranked[1:]]) == 0
    assert headline_text(0) == "#1"


def test_three_way_tie_at_the_top() -> None:
    ranked = rank_group([_run("a", 100, 0.05), _run("b", 103, 0.05), _run("c", 106, 0.05), _run("d", 200, 0.05)])
    ranges = [entry.rank_range for entry in ranked]
    assert ranges == [(1, 3), (1, 3), (1, 3), (4, 4)]
    assert rank_texts(ranges) == ["=1", "=1", "=1", "4"]
    assert [entry.distinct_from_best for entry in ranked] == [False, False, False, True]
    tied = tied_with_best(ranked[0].run.interval, [entry.run.interval for entry in ranked[1:]])
    assert headline_text(tied) == "#1, tied with 2"


def test_overlapping_chain_gives_ranges_not_a_tie() -> None:
    # a overlaps b, b overlaps c, a does not overlap c.
    ranges = rank_ranges([(95, 105), (103, 113), (111, 121)])
    assert ranges == [(1, 2), (1, 3), (2, 3)]
    assert rank_texts(ranges) == ["1–2", "1–3", "2–3"]


def test_unknown_spread_ranks_as_before() -> None:
    ranked = rank_group([_run("a", 100, None), _run("b", 101, None), _run("c", 101, None)])
    assert [entry.rank for entry in ranked] == [1, 2, 2]
    # Points: equal figures can swap places; the faster one is certain.
    assert [entry.rank_range for entry in ranked] == [(1, 1), (2, 3), (2, 3)]
    assert [entry.distinct_from_best for entry in ranked] == [False, True, True]


def test_place_always_lies_within_the_range() -> None:
    runs = [_run(f"r{i}", 100 + 7 * i, [0.01, 0.05, None, 0.2][i % 4]) for i in range(40)]
    for position, entry in enumerate(rank_group(runs), start=1):
        assert entry.rank_range[0] <= entry.rank <= position <= entry.rank_range[1]


@pytest.mark.parametrize(
    ("spread", "records"),
    [(None, ["a", "b", "c"]), (0.05, ["a", "c"])],
)
def test_records_inside_the_noise_do_not_count(spread: float | None, records: list[str]) -> None:
    # b is 3 % faster than a (inside 5 % noise); c beats both beyond it.
    runs = [_run("a", 1000, spread, 0), _run("b", 970, spread, 1), _run("c", 800, spread, 2)]
    history = record_history(runs)
    assert [brk.run.name for brk in history] == records
    assert history[-1].previous is not None and history[-1].previous.name == records[-2]
