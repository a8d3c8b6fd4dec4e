"""Timing statistics: pure functions over integer-nanosecond samples (no torch)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any


def median(values: Sequence[float]) -> float:
    """The median (mean of the two middle values for an even count). Raises on an empty sequence."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[mid])
    return (ordered[mid - 1] + ordered[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside 0..100")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(log v)); every value must be > 0."""
    if not values:
        raise ValueError("geometric mean of no values")
    if any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def summarize_case(trials: Sequence[Sequence[int]]) -> dict[str, Any]:
    """Per-case timing figures from the raw samples of every trial (integer nanoseconds).

    The primary figure `medianNs` is the median of all samples pooled; `trialMediansNs` are the per-trial
    medians; the spread is min, max, p10, p90, quartiles and IQR; `samplesNs` keeps every raw sample.
    All figures are integers (nanoseconds, rounded half to even).
    """
    pooled = [int(s) for trial in trials for s in trial]
    if not pooled:
        raise ValueError("no timing samples")
    if any(s <= 0 for s in pooled):
        raise ValueError("timing samples must be positive")
    q1, q3 = percentile(pooled, 25), percentile(pooled, 75)
    return {
        "medianNs": round(median(pooled)),
        "meanNs": round(math.fsum(pooled) / len(pooled)),
        "minNs": min(pooled),
        "maxNs": max(pooled),
        "p10Ns": round(percentile(pooled, 10)),
        "p90Ns": round(percentile(pooled, 90)),
        "q1Ns": round(q1),
        "q3Ns": round(q3),
        "iqrNs": round(q3 - q1),
        "trialMediansNs": [round(median([int(s) for s in t])) for t in trials],
        "sampleCount": len(pooled),
        "samplesNs": [[int(s) for s in t] for t in trials],
    }


def suite_latency_ns(case_medians_ns: Sequence[int]) -> int:
    """The suite figure: the geometric mean of the per-case medians, in integer nanoseconds."""
    return round(geometric_mean(case_medians_ns))


def bootstrap_median_interval(
    samples: Sequence[int], *, resamples: int, confidence: float, seed: int
) -> tuple[int, int]:
    """A percentile-bootstrap interval of the median: `resamples` draws of len(samples) values with
    replacement from `samples` by `random.Random(seed)`, the median of each, and the (1 - confidence) / 2
    and (1 + confidence) / 2 percentiles of those medians, rounded to integer nanoseconds. The same
    samples and seed always give the same interval."""
    if not samples:
        raise ValueError("bootstrap of no samples")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError("bootstrap needs resamples >= 1 and 0 < confidence < 1")
    rng = random.Random(seed)
    values = list(samples)
    n = len(values)
    medians = [median([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples)]
    tail = (1 - confidence) / 2 * 100
    return round(percentile(medians, tail)), round(percentile(medians, 100 - tail))


def trial_spread(trials: Sequence[Sequence[int]]) -> float:
    """How far the trials of a case disagree: largest trial median / smallest trial median - 1."""
    medians = [median(t) for t in trials]
    if not medians or min(medians) <= 0:
        raise ValueError("trial spread needs trials with positive samples")
    return max(medians) / min(medians) - 1


def passes_noise_gate(trials: Sequence[Sequence[int]], bound: float) -> bool:
    """True when the trial medians agree within `bound` (see `trial_spread`)."""
    return trial_spread(trials) <= bound
