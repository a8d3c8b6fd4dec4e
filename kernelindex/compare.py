"""Runs side by side (PRODUCT.md §6 ``/compare``): aligned fields, differences, and a verdict.

A pure function over plain values. A winner is named only when every run belongs to one
comparison group and every run is eligible (§5); otherwise the comparison says why no
run can be called fastest, in words a reader can check against the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex import figures
from kernelindex.figures import Share
from kernelindex.manifests.types import EvidenceLevel, RunStatus
from kernelindex.ranking import RunFacts, ineligibility_reasons
from kernelindex.uncertainty import Uncertainty, bounds, distinct, rank_text

MIN_RUNS = 2
MAX_RUNS = 8


class CompareError(ValueError):
    """The runs asked for cannot be compared as given (too few, too many, repeated)."""


@dataclass(frozen=True)
class ComparedRun:
    """What a comparison needs to know about one run and the four records it refers to."""

    name: str
    digest: str
    comparison_key: str
    status: RunStatus
    evidence: EvidenceLevel
    availability: str
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    avg_speedup: float | None
    fast_count: int | None
    fast_total: int | None
    observed_at: datetime
    rank: int | None
    workload_slug: str
    workload_title: str
    workload_digest: str
    project: str
    project_slug: str
    revision: str
    protocol_name: str
    protocol_title: str
    protocol_family: str
    harness_name: str
    harness_version: str
    protocol_digest: str
    environment_name: str
    environment_title: str
    environment_label: str  # the one name every page gives the environment (GPU · setup · stack)
    gpu_product: str
    gpu_slug: str
    stack: str
    environment_digest: str
    withdrawn: bool = False
    upstream_withdrawn: bool = False
    held_for_review: bool = False
    # The share of a known bound the run reaches, computed by the registry; None where no bound is known.
    share_of_bound: Share | None = None
    # The interval around ``latency_ns`` (None: unknown) and the places it could hold in its group.
    uncertainty: Uncertainty | None = None
    rank_range: tuple[int, int] | None = None

    def facts(self) -> RunFacts:
        return RunFacts(
            name=self.name,
            comparison_key=self.comparison_key,
            latency_ns=self.latency_ns,
            observed_at=self.observed_at,
            status=self.status,
            withdrawn=self.withdrawn,
            upstream_withdrawn=self.upstream_withdrawn,
            held_for_review=self.held_for_review,
        )


@dataclass(frozen=True)
class Field:
    """One aligned row: a value per run (in the order the runs were given)."""

    key: str
    label: str
    values: tuple[Any, ...]
    differs: bool


@dataclass(frozen=True)
class Comparison:
    runs: tuple[str, ...]
    fields: tuple[Field, ...]
    # One comparison group and every run eligible: the only case where "fastest" means anything.
    comparable: bool
    winner: str | None
    reasons: tuple[str, ...]
    verdict: str


def check_run_names(names: Sequence[str]) -> list[str]:
    """The run names as asked for, or ``CompareError`` saying what is wrong with the list."""
    names = [name.strip() for name in names]
    if any(not name for name in names):
        raise CompareError("A run name is empty: give each run as run=<name>, e.g. run=sol-submission-16893.")
    if len(names) < MIN_RUNS:
        raise CompareError(
            f"Compare needs {MIN_RUNS} to {MAX_RUNS} runs (run=A&run=B…); {_runs_given(len(names))} given."
        )
    if len(names) > MAX_RUNS:
        raise CompareError(f"Compare takes at most {MAX_RUNS} runs at once; {len(names)} were given.")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CompareError(f"Run {name!r} is listed more than once; list each run once.")
        seen.add(name)
    return names


def _runs_given(count: int) -> str:
    return "no run was" if count == 0 else "1 run was" if count == 1 else f"{count} runs were"


def _differs(values: Sequence[Any]) -> bool:
    return len(set(values)) > 1


def _ineligible_phrase(run: ComparedRun) -> list[str]:
    phrases = []
    if run.status != RunStatus.PASSED:
        phrases.append(f"run {run.name} did not pass correctness (status {run.status})")
    if run.withdrawn:
        phrases.append(f"run {run.name} was withdrawn by a maintainer")
    if run.upstream_withdrawn:
        phrases.append(f"run {run.name} was disqualified by the source")
    if run.held_for_review:
        phrases.append(f"run {run.name} is held for review (faster than the suite's speed-of-light bound)")
    return phrases


def why_not_comparable(runs: Sequence[ComparedRun]) -> list[str]:
    """Every reason these runs cannot be ranked against each other; empty when they can."""
    reasons: list[str] = []
    if _differs([run.workload_slug for run in runs]):
        reasons.append("different workloads")
    elif _differs([run.workload_digest for run in runs]):
        reasons.append("different versions of the workload definition")
    if _differs([run.gpu_product for run in runs]):
        reasons.append("different GPUs")
    same_harness = not _differs([(run.protocol_family, run.harness_name) for run in runs])
    if _differs([run.stack for run in runs]) or (same_harness and _differs([run.harness_version for run in runs])):
        reasons.append("different evaluation stacks")
    if not same_harness:
        reasons.append("different benchmark protocols")
    if not reasons and _differs([run.comparison_key for run in runs]):
        # Same names on every visible field, yet the manifests differ somewhere.
        if _differs([run.environment_digest for run in runs]):
            reasons.append("different execution environments")
        if _differs([run.protocol_digest for run in runs]):
            reasons.append("different protocol settings")
        if not reasons:
            reasons.append("different comparison groups")
    for run in runs:
        reasons.extend(_ineligible_phrase(run))
    return reasons


def _eligibility(run: ComparedRun) -> str:
    reasons = ineligibility_reasons(run.facts())
    return "eligible" if not reasons else "not eligible: " + "; ".join(reasons)


def _fields(runs: Sequence[ComparedRun], fastest_ns: int | None) -> list[Field]:
    rows: list[tuple[str, str, list[Any]]] = [
        ("latencyNs", "Latency", [run.latency_ns for run in runs]),
        ("primaryStatistic", "Statistic", [run.primary_statistic for run in runs]),
    ]
    if fastest_ns is not None:
        rows.append(("vsFastest", "vs fastest here", [run.latency_ns / fastest_ns for run in runs]))
    rows += [
        ("rank", "Rank in its group", [run.rank for run in runs]),
        ("rankRange", "Places it could hold", [_range(run) for run in runs]),
        ("uncertainty", "Interval", [_interval(run) for run in runs]),
        ("solScore", figures.SOL_SCORE.label, [run.sol_score for run in runs]),
        ("shareOfBound", figures.SHARE_OF_BOUND.label, [run.share_of_bound for run in runs]),
        ("avgSpeedup", figures.TIMES_REFERENCE.label, [run.avg_speedup for run in runs]),
        ("casesFaster", "Cases faster", [_cases(run) for run in runs]),
        ("workload", "Workload", [run.workload_slug for run in runs]),
        ("implementation", "Implementation", [run.project for run in runs]),
        ("revision", "Revision", [run.revision for run in runs]),
        ("gpu", "GPU", [run.gpu_product for run in runs]),
        ("stack", "Evaluation stack", [run.stack for run in runs]),
        ("environment", "Environment", [run.environment_label for run in runs]),
        ("protocol", "Protocol", [run.protocol_name for run in runs]),
        ("evidence", "Evidence", [run.evidence for run in runs]),
        ("availability", "Availability", [run.availability for run in runs]),
        ("status", "Correctness", [run.status for run in runs]),
        ("observedAt", "Observed", [run.observed_at for run in runs]),
        ("comparisonKey", "Comparison key", [run.comparison_key for run in runs]),
        ("eligibility", "Eligibility", [_eligibility(run) for run in runs]),
        ("digest", "Run digest", [run.digest for run in runs]),
    ]
    return [Field(key, label, tuple(values), _differs(values)) for key, label, values in rows]


def _range(run: ComparedRun) -> str | None:
    return None if run.rank_range is None or run.rank is None else rank_text(*run.rank_range)


def _interval(run: ComparedRun) -> str | None:
    """ "653000–798600 ns (source-noise)": the interval in the figure's unit, and its kind."""
    found = run.uncertainty
    return None if found is None else f"{found.low_ns}–{found.high_ns} ns ({found.kind})"


def _cases(run: ComparedRun) -> str | None:
    if run.fast_count is None or run.fast_total is None:
        return None
    return f"{run.fast_count}/{run.fast_total}"


def compare_runs(runs: Sequence[ComparedRun]) -> Comparison:
    """Align 2–8 runs field by field and say which is fastest, if that can be said at all.

    The runs keep the order given. Raises ``CompareError`` for fewer than 2 or more than 8
    runs or a run given twice.
    """
    names = check_run_names([run.name for run in runs])
    reasons = why_not_comparable(runs)
    comparable = not reasons
    winner = None
    if comparable:
        fastest = min(run.latency_ns for run in runs)
        leaders = [run for run in runs if run.latency_ns == fastest]
        others = sorted(run.latency_ns for run in runs if run.latency_ns != fastest)
        leader = leaders[0]
        # Runs the intervals cannot tell from the fastest: then there is no winner (/figures#rank-range).
        within = [
            run
            for run in runs
            if run is not leader
            and not distinct(bounds(leader.latency_ns, leader.uncertainty), bounds(run.latency_ns, run.uncertainty))
        ]
        if len(leaders) == 1 and within:
            verdict = (
                f"No winner beyond the noise: {leader.name} ({leader.project}) is fastest by its figure, but its "
                f"interval overlaps that of {', '.join(run.name for run in within)}. "
                "All runs share one comparison group and all are eligible."
            )
        elif len(leaders) == 1:
            winner = leaders[0].name
            # Three significant figures, as every ratio on the site ("1.20×", "12.3×").
            margin = f", {format(others[0] / fastest, '#.3g').rstrip('.')}× faster than the next" if others else ""
            verdict = (
                f"{winner} ({leaders[0].project}) is fastest{margin}. "
                "All runs share one comparison group and all are eligible."
            )
        else:
            verdict = (
                f"No single winner: {', '.join(run.name for run in leaders)} share the fastest latency. "
                "All runs share one comparison group and all are eligible."
            )
    else:
        verdict = (
            "No winner: " + "; ".join(reasons) + ". Runs are ranked only within one comparison group "
            "(one workload, protocol and environment), and only when eligible."
        )
    return Comparison(
        runs=tuple(names),
        fields=tuple(_fields(runs, min(run.latency_ns for run in runs) if comparable else None)),
        comparable=comparable,
        winner=winner,
        reasons=tuple(reasons),
        verdict=verdict,
    )
