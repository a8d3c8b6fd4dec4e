"""How uncertain each ranked figure is, and the ranks that uncertainty allows (PRODUCT.md §5).

Pure functions over plain values, importing nothing of the app. A figure's uncertainty is an
interval [low, high] in the figure's unit (ns), from the best evidence there is, named by its
kind:

- ``samples``: the run's own samples, the bootstrap 95 % interval of a case's median that a
  controlled rerun computes (``median_ci_low`` / ``median_ci_high``);
- ``reported-std``: the source's reported standard deviation over its trials, as the mean
  ± ``STD_ERRORS`` standard errors (std / √trials) — KernelBench;
- ``reported-percentiles``: the source's reported 20th and 80th percentiles — Liger-Kernel;
- ``source-noise``: the figure ± the source's noise, estimated from the cases it measured twice
  (the 95th percentile of |ratio − 1|, ``kernelindex.ranking.noise_estimate``);

or none at all ("unknown"): the figure then stands as a point, ranked as before and marked so.

Two figures are *distinct* when their intervals do not overlap. A row's rank range in its group:
``lo`` = 1 + the rows whose interval lies entirely below (faster than) its own, ``hi`` = the rows
whose interval does not lie entirely above (slower than) its own, itself included. An interval
always contains its figure, so the row's place by figure lies in [lo, hi].
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SAMPLES = "samples"
REPORTED_STD = "reported-std"
REPORTED_PERCENTILES = "reported-percentiles"
SOURCE_NOISE = "source-noise"
UNKNOWN = "unknown"
KINDS = (SAMPLES, REPORTED_STD, REPORTED_PERCENTILES, SOURCE_NOISE)

# How many standard errors of the mean either side of a reported mean: about a 95 % interval.
STD_ERRORS = 2.0

# What each kind rests on, in words for the pages and docs/FIGURES.md.
KIND_WORDS = {
    SAMPLES: "the run's own samples (bootstrap 95 % interval of the median)",
    REPORTED_STD: f"the source's reported standard deviation (mean ± {STD_ERRORS:g} standard errors over its trials)",
    REPORTED_PERCENTILES: "the source's reported 20th–80th percentiles",
    SOURCE_NOISE: "the source's noise, estimated from the cases it measured twice",
    UNKNOWN: "unknown: nothing the source publishes bounds this figure; ranked as a point",
}


# What each kind is called beside an interval on a page.
KIND_LABELS = {
    SAMPLES: "bootstrap 95 % interval",
    REPORTED_STD: f"mean ± {STD_ERRORS:g} standard errors",
    REPORTED_PERCENTILES: "20th–80th percentiles",
    SOURCE_NOISE: "± the source's noise",
}


@dataclass(frozen=True)
class Uncertainty:
    """An interval around one figure, in ns, and what it rests on (one of ``KINDS``)."""

    kind: str
    low_ns: int
    high_ns: int

    def around(self, figure_ns: int) -> Uncertainty:
        """The interval widened, if need be, to contain ``figure_ns`` (a median outside its
        reported percentiles is a source's rounding, not a narrower spread)."""
        return Uncertainty(self.kind, min(self.low_ns, figure_ns), max(self.high_ns, figure_ns))


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def figure_uncertainty(
    latency_ns: Mapping[str, object], statistic: str, metrics: Mapping[str, object] | None = None
) -> Uncertainty | None:
    """The uncertainty a figure's own record gives it: ``latency_ns`` is the record's statistics
    (a run's ``timing.latencyNs`` or a case's ``latencyNs``), ``statistic`` the one ranked, and
    ``metrics`` the run's source-native metrics. ``None`` where the record bounds nothing."""
    figure = _positive(latency_ns.get(statistic))
    if figure is None:
        return None
    centre = round(figure)
    low, high = _positive(latency_ns.get("median_ci_low")), _positive(latency_ns.get("median_ci_high"))
    if statistic == "median" and low is not None and high is not None and low <= high:
        return Uncertainty(SAMPLES, math.floor(low), math.ceil(high)).around(centre)
    low, high = _positive(latency_ns.get("p20")), _positive(latency_ns.get("p80"))
    if low is not None and high is not None and low <= high:
        return Uncertainty(REPORTED_PERCENTILES, math.floor(low), math.ceil(high)).around(centre)
    std_ms = _positive((metrics or {}).get("std_ms"))
    trials = (metrics or {}).get("num_trials")
    if statistic == "mean" and std_ms is not None and isinstance(trials, int) and not isinstance(trials, bool):
        half = STD_ERRORS * std_ms * 1_000_000 / math.sqrt(max(trials, 1))
        return Uncertainty(REPORTED_STD, max(0, math.floor(figure - half)), math.ceil(figure + half))
    return None


def suite_uncertainty(cases: Sequence[Uncertainty | None], figure_ns: int) -> Uncertainty | None:
    """A suite figure (the geometric mean of its cases) bounded by the geometric means of its
    cases' lows and highs, where every case has an interval of one kind; else ``None``."""
    if not cases or any(case is None for case in cases):
        return None
    known = [case for case in cases if case is not None]
    if len({case.kind for case in known}) != 1 or any(case.low_ns <= 0 for case in known):
        return None
    low = math.exp(math.fsum(math.log(case.low_ns) for case in known) / len(known))
    high = math.exp(math.fsum(math.log(case.high_ns) for case in known) / len(known))
    return Uncertainty(known[0].kind, math.floor(low), math.ceil(high)).around(figure_ns)


def noise_uncertainty(figure_ns: int, bound: float) -> Uncertainty:
    """``figure_ns`` ± ``bound`` (a fraction) of it, rounded outward to whole ns."""
    return Uncertainty(SOURCE_NOISE, max(0, math.floor(figure_ns * (1 - bound))), math.ceil(figure_ns * (1 + bound)))


def bounds(figure_ns: int, uncertainty: Uncertainty | None) -> tuple[int, int]:
    """The interval a figure is compared by: a point where its uncertainty is unknown."""
    return (figure_ns, figure_ns) if uncertainty is None else (uncertainty.low_ns, uncertainty.high_ns)


def distinct(faster: tuple[int, int], slower: tuple[int, int]) -> bool:
    """Whether ``slower``'s interval lies entirely above ``faster``'s: beyond both noises."""
    return slower[0] > faster[1]


def rank_ranges(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each row's rank range [lo, hi] among ``intervals`` (one group's rows, as (low, high) in ns).

    lo = 1 + the rows entirely faster (their high below its low); hi = the rows not entirely
    slower (their low at or below its high), itself included. O(n log n): a group may hold
    thousands of rows."""
    lows = sorted(low for low, _ in intervals)
    highs = sorted(high for _, high in intervals)
    return [(1 + bisect_left(highs, low), bisect_right(lows, high)) for low, high in intervals]


def rank_text(lo: int, hi: int, sharing: int | None = None) -> str:
    """A rank range as people read it: "2" where the place is certain, "=2" where ``sharing`` rows
    (those with this very range) can only swap places among themselves, "1–3" otherwise."""
    if lo == hi:
        return str(lo)
    if sharing == hi - lo + 1:
        return f"={lo}"
    return f"{lo}–{hi}"


def rank_texts(ranges: Sequence[tuple[int, int]]) -> list[str]:
    """``rank_text`` of every row of one group, knowing which rows share a range."""
    counts = Counter(ranges)
    return [rank_text(lo, hi, counts[(lo, hi)]) for lo, hi in ranges]


def tied_with_best(best: tuple[int, int], others: Sequence[tuple[int, int]]) -> int:
    """How many of ``others`` the #1 (interval ``best``) is not distinct from."""
    return sum(1 for other in others if not distinct(best, other))


def headline_text(tied: int) -> str:
    """ "#1" or "#1, tied with 2"."""
    return "#1" if tied == 0 else f"#1, tied with {tied}"


def beats_beyond_noise(new: tuple[int, int], earlier: Sequence[tuple[int, int]]) -> bool:
    """A record: the new figure's interval lies entirely below every earlier one's (with unknown
    uncertainty on both sides, simply faster, as records were counted before)."""
    return all(distinct(new, old) for old in earlier)
