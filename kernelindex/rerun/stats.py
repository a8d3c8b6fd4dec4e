"""Timing statistics: pure functions over integer-nanosecond samples (no torch)."""

from __future__ import annotations

import functools
import math
import random
import struct
from collections.abc import Sequence
from typing import Any

import numpy


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
    values = list(samples)
    n = len(values)
    rng = random.Random(seed)
    # Resample ranks rather than values: the j-th smallest rank in a resample is the j-th smallest of its
    # values, ties included, so each resample's median is found by a partial sort of small integers, all
    # resamples at once in numpy (the importer recomputes every interval of every bundle).
    order = sorted(range(n), key=values.__getitem__)
    ordered = [values[i] for i in order]
    rank_of = numpy.empty(n, dtype=numpy.int64)
    rank_of[order] = numpy.arange(n)
    if n < 256:
        draws = numpy.frombuffer(_small_draws(rng, n, resamples * n), dtype=numpy.uint8)
    else:
        draws = numpy.array(randrange_draws(rng, n, resamples * n), dtype=numpy.int64)
    mid = n // 2
    middle = [mid] if n % 2 else [mid - 1, mid]
    picked = numpy.partition(rank_of[draws].reshape(resamples, n), middle, axis=1)[:, middle].tolist()
    # As ``median`` computes it, on the exact values: the middle one, or the mean of the two middle ones.
    medians = [float(ordered[m[0]]) if n % 2 else (ordered[m[0]] + ordered[m[1]]) / 2 for m in picked]
    tail = (1 - confidence) / 2 * 100
    return round(percentile(medians, tail)), round(percentile(medians, 100 - tail))


def randrange_draws(rng: random.Random, n: int, count: int) -> list[int]:
    """What ``[rng.randrange(n) for _ in range(count)]`` returns, many times faster (the importer
    recomputes every interval). CPython draws ``randrange(n)`` for n < 2**32 as the top
    ``k = n.bit_length()`` bits of one 32-bit Mersenne Twister output, drawing again while the value is
    >= n; ``getrandbits(32 * m)`` returns m such outputs, the first in the lowest bits. The tests check
    this against ``randrange`` itself."""
    if not 0 < n < 2**32:
        return [rng.randrange(n) for _ in range(count)]
    if n < 256:
        return list(_small_draws(rng, n, count))
    shift = 32 - n.bit_length()
    draws: list[int] = []
    while len(draws) < count:
        words = _words_for(count - len(draws), n)
        raw = struct.unpack(f"<{words}I", rng.getrandbits(32 * words).to_bytes(4 * words, "little"))
        draws.extend(v for word in raw if (v := word >> shift) < n)
    return draws[:count]


def _small_draws(rng: random.Random, n: int, count: int) -> bytes:
    """``randrange_draws`` for n < 256, one byte a draw: the top bits lie in each output's last byte,
    so whole blocks are mapped and filtered in C by ``bytes.translate``."""
    table, dropped = _top_bits_tables(n.bit_length(), n)
    draws = bytearray()
    while len(draws) < count:
        words = _words_for(count - len(draws), n)
        draws += rng.getrandbits(32 * words).to_bytes(4 * words, "little")[3::4].translate(table, dropped)
    return bytes(draws[:count])


def _words_for(missing: int, n: int) -> int:
    """Enough 32-bit outputs for ``missing`` draws, given that a share n / 2**bits of them is kept."""
    return missing * (1 << n.bit_length()) // n + 64


@functools.cache
def _top_bits_tables(bits: int, n: int) -> tuple[bytes, bytes]:
    """``bytes.translate`` arguments taking a byte to its top ``bits`` bits and dropping values >= n."""
    shift = 8 - bits
    return bytes(b >> shift for b in range(256)), bytes(b for b in range(256) if b >> shift >= n)


def trial_spread(trials: Sequence[Sequence[int]]) -> float:
    """How far the trials of a case disagree: largest trial median / smallest trial median - 1."""
    medians = [median(t) for t in trials]
    if not medians or min(medians) <= 0:
        raise ValueError("trial spread needs trials with positive samples")
    return max(medians) / min(medians) - 1


def passes_noise_gate(trials: Sequence[Sequence[int]], bound: float) -> bool:
    """True when the trial medians agree within `bound` (see `trial_spread`)."""
    return trial_spread(trials) <= bound
