"""Comparison groups, eligibility, ranks and record history (PRODUCT.md §5).

Pure functions over plain values, so the rules can be read, and tested, without a
database. Runs are only ever compared inside one comparison group: one workload, one
protocol (family and harness version) and one environment (GPU and stack).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from itertools import groupby

from kernelindex.manifests.types import RunStatus


def geometric_mean(values: Sequence[float]) -> float:
    """Geometric mean of positive values; the SOL-ExecBench suite aggregate."""
    if not values or any(not math.isfinite(value) or value <= 0 for value in values):
        raise ValueError("a geometric mean needs one or more positive, finite values")
    return math.exp(math.fsum(math.log(value) for value in values) / len(values))


def is_faster_than_bound(latency_ns: int, bound_ms: float | None) -> bool:
    """True if a suite latency beats the suite's speed-of-light bound: physically suspect.

    Compared exactly in decimal: ``0.000246 * 1e6`` is ``246.00000000000003`` in floating
    point, which would make a run exactly at the bound look faster than it.
    """
    return bound_ms is not None and latency_ns < Decimal(repr(bound_ms)) * 1_000_000


@dataclass(frozen=True)
class RunFacts:
    """What ranking needs to know about one run."""

    name: str
    comparison_key: str
    latency_ns: int
    observed_at: datetime
    status: RunStatus = RunStatus.PASSED
    # The implementation's project: best-per-implementation tables group by it.
    implementation: str = ""
    withdrawn: bool = False
    upstream_withdrawn: bool = False
    held_for_review: bool = False
    # Held, looked at by a maintainer and rejected: it stays out for that reason.
    rejected_on_review: bool = False


INELIGIBLE_REASONS = {
    "status": "did not pass correctness (status {status})",
    "withdrawn": "withdrawn by a maintainer",
    "upstream_withdrawn": "disqualified by the source",
    "held_for_review": "held for review: faster than the suite's speed-of-light bound",
    "rejected_on_review": "rejected on review by a maintainer: faster than the suite's speed-of-light bound",
}


def ineligibility_reasons(run: RunFacts) -> list[str]:
    """Why a run may not be ranked; empty when it is eligible."""
    reasons = []
    if run.status != RunStatus.PASSED:
        reasons.append(INELIGIBLE_REASONS["status"].format(status=run.status))
    if run.withdrawn:
        reasons.append(INELIGIBLE_REASONS["withdrawn"])
    if run.upstream_withdrawn:
        reasons.append(INELIGIBLE_REASONS["upstream_withdrawn"])
    if run.rejected_on_review:
        reasons.append(INELIGIBLE_REASONS["rejected_on_review"])
    elif run.held_for_review:
        reasons.append(INELIGIBLE_REASONS["held_for_review"])
    return reasons


def is_eligible(run: RunFacts) -> bool:
    return not ineligibility_reasons(run)


@dataclass(frozen=True)
class RankedRun:
    run: RunFacts
    rank: int
    vs_best: float  # latency ÷ the group's best latency; 1.0 for #1


def _fastest_first(runs: Iterable[RunFacts]) -> list[RunFacts]:
    # The name breaks ties so that equal latencies always list in the same order.
    return sorted(runs, key=lambda run: (run.latency_ns, run.name))


def rank_group(runs: Iterable[RunFacts]) -> list[RankedRun]:
    """Rank the eligible runs of one comparison group, fastest first.

    Equal latencies share a rank and the next rank skips (1, 1, 3), so a rank always
    says how many runs are strictly faster. Raises ``ValueError`` if the runs span
    several comparison groups, because such ranks would compare the incomparable.
    """
    runs = list(runs)
    if len({run.comparison_key for run in runs}) > 1:
        raise ValueError("runs from several comparison groups cannot be ranked together")
    eligible = _fastest_first(run for run in runs if is_eligible(run))
    if not eligible:
        return []
    best = eligible[0].latency_ns
    ranked: list[RankedRun] = []
    for position, run in enumerate(eligible, start=1):
        tied = ranked and ranked[-1].run.latency_ns == run.latency_ns
        rank = ranked[-1].rank if tied else position
        ranked.append(RankedRun(run=run, rank=rank, vs_best=run.latency_ns / best))
    return ranked


def current_record(ranked: Sequence[RankedRun]) -> RankedRun | None:
    """The #1 of a group ranked by ``rank_group``: the record it holds now."""
    return ranked[0] if ranked else None


def fastest_reported(runs: Iterable[RunFacts]) -> RunFacts | None:
    """A workload's headline: its fastest eligible run over all its comparison groups.

    It answers "what is the best known number for this workload", so it spans GPUs and
    protocols on purpose; whoever shows it names the group it was measured in. Equal
    latencies go by name.
    """
    return min((run for run in runs if is_eligible(run)), key=lambda run: (run.latency_ns, run.name), default=None)


def default_group(runs: Sequence[RunFacts]) -> str | None:
    """The comparison group a leaderboard opens on: the group of the headline it shows.

    With nothing eligible, the group with the most runs, then the most recently observed.
    """
    headline = fastest_reported(runs)
    if headline is not None:
        return headline.comparison_key
    if not runs:
        return None
    by_key: dict[str, list[RunFacts]] = {}
    for run in runs:
        by_key.setdefault(run.comparison_key, []).append(run)
    return max(by_key, key=lambda key: (len(by_key[key]), max(run.observed_at for run in by_key[key]), key))


@dataclass(frozen=True)
class ImplementationBest:
    """An implementation's fastest ranked run in one group, and how many of its runs are ranked there."""

    best: RankedRun
    ranked_runs: int


def best_per_implementation(ranked: Sequence[RankedRun]) -> list[ImplementationBest]:
    """One line per implementation of a ranked group, fastest first (``RunFacts.implementation``)."""
    best: dict[str, RankedRun] = {}
    counts: dict[str, int] = {}
    for entry in ranked:  # fastest first, so the first seen per implementation is its best
        best.setdefault(entry.run.implementation, entry)
        counts[entry.run.implementation] = counts.get(entry.run.implementation, 0) + 1
    return [ImplementationBest(best=entry, ranked_runs=counts[name]) for name, entry in best.items()]


def rank_by_group(runs: Iterable[RunFacts]) -> dict[str, list[RankedRun]]:
    """Rank every comparison group separately; keys are comparison keys."""
    by_key = sorted(runs, key=lambda run: run.comparison_key)
    return {key: rank_group(group) for key, group in groupby(by_key, key=lambda run: run.comparison_key)}


@dataclass(frozen=True)
class RecordBreak:
    run: RunFacts
    previous: RunFacts | None

    @property
    def improvement(self) -> float | None:
        """How many times faster than the record it broke (``None`` for the first record)."""
        return None if self.previous is None else self.previous.latency_ns / self.run.latency_ns


def record_history(runs: Iterable[RunFacts]) -> list[RecordBreak]:
    """Every time the #1 of one comparison group changed, oldest first.

    A run sets a record when, at the time it was observed, it is eligible and strictly
    faster than every earlier eligible run of its group.
    """
    runs = list(runs)
    if len({run.comparison_key for run in runs}) > 1:
        raise ValueError("record history is kept per comparison group")
    eligible = [run for run in runs if is_eligible(run)]
    history: list[RecordBreak] = []
    for run in sorted(eligible, key=lambda run: (run.observed_at, run.latency_ns, run.name)):
        current = history[-1].run if history else None
        if current is None or run.latency_ns < current.latency_ns:
            history.append(RecordBreak(run=run, previous=current))
    return history
