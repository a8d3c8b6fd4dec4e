"""Comparison groups, eligibility, ranks and record history (PRODUCT.md §5), and the evidence
controlled reruns earn from each other.

Pure functions over plain values, so the rules can be read, and tested, without a
database. Runs are only ever compared inside one comparison group: one workload, one
protocol (family and harness version) and one environment (GPU and stack).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from kernelindex.manifests.types import EvidenceLevel, RunStatus
from kernelindex.uncertainty import Uncertainty, beats_beyond_noise, bounds, distinct, rank_ranges, rank_texts


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
    # The implementation across its revisions (``store.runs.implementation_identity``):
    # best-per-implementation tables group by it.
    implementation: str = ""
    withdrawn: bool = False
    upstream_withdrawn: bool = False
    held_for_review: bool = False
    # Held, looked at by a maintainer and rejected: it stays out for that reason.
    rejected_on_review: bool = False
    # The interval around ``latency_ns`` (``kernelindex.uncertainty``); None: unknown, a point.
    uncertainty: Uncertainty | None = None

    @property
    def interval(self) -> tuple[int, int]:
        return bounds(self.latency_ns, self.uncertainty)


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
    # The places the run could hold given the uncertainties (``uncertainty.rank_ranges``), and
    # whether it is slower than the #1 beyond both their intervals.
    rank_range: tuple[int, int] = (0, 0)
    distinct_from_best: bool = False
    rank_text: str = ""  # the range as people read it: "1", "=2", "1–3" (``uncertainty.rank_texts``)


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
    ranges = rank_ranges([run.interval for run in eligible])
    texts = rank_texts(ranges)
    ranked: list[RankedRun] = []
    for position, (run, span, text) in enumerate(zip(eligible, ranges, texts, strict=True), start=1):
        tied = ranked and ranked[-1].run.latency_ns == run.latency_ns
        rank = ranked[-1].rank if tied else position
        ranked.append(
            RankedRun(
                run=run,
                rank=rank,
                vs_best=run.latency_ns / best,
                rank_range=span,
                distinct_from_best=distinct(eligible[0].interval, run.interval),
                rank_text=text,
            )
        )
    return ranked


def fastest_reported(runs: Iterable[RunFacts]) -> RunFacts | None:
    """A workload's headline: its fastest eligible run over all its comparison groups.

    It answers "what is the best known number for this workload", so it spans GPUs and
    protocols on purpose; whoever shows it names the group it was measured in. Equal
    latencies go by name.
    """
    return min((run for run in runs if is_eligible(run)), key=lambda run: (run.latency_ns, run.name), default=None)


def most_measured_first(eligible_runs: int, runs: int, name: str) -> tuple[int, int, str]:
    """Sort key of a collection's busiest workloads (home): the most eligible runs, then the most
    runs (on the chosen GPU, or on every GPU), then by name in code-point order."""
    return (-eligible_runs, -runs, name)


def default_group(runs: Sequence[RunFacts]) -> str | None:
    """The comparison group a leaderboard opens on: the group of the headline it shows.

    With nothing eligible, the group with the most runs, then the most recently observed.
    """
    sizes: dict[str, GroupSize] = {}
    for run in runs:
        size = sizes.get(run.comparison_key, GroupSize(run.comparison_key, 0, run.observed_at))
        sizes[run.comparison_key] = GroupSize(size.key, size.runs + 1, max(size.last_observed_at, run.observed_at))
    return opening_group(fastest_reported(runs), list(sizes.values()))


@dataclass(frozen=True)
class GroupSize:
    """How many runs a comparison group holds, eligible or not, and when the newest was observed."""

    key: str
    runs: int
    last_observed_at: datetime


def opening_group(headline: RunFacts | None, groups: Sequence[GroupSize]) -> str | None:
    """``default_group`` from the workload's headline (``fastest_reported``) and the size of each
    of its groups, for a caller that counts runs without loading them."""
    if headline is not None:
        return headline.comparison_key
    if not groups:
        return None
    return max(groups, key=lambda group: (group.runs, group.last_observed_at, group.key)).key


def rank_implementations(ranked: Sequence[RankedRun]) -> list[tuple[RankedRun, int]]:
    """A ranked group read one implementation at a time: each implementation's fastest run, ranked
    among those (equal latencies share a rank, as in ``rank_group``), with its ranked runs' count.

    ``vs_best`` is unchanged: the group's best run is the best of its implementations too."""
    return rank_implementation_bests((entry.run, 1) for entry in ranked)


def rank_implementation_bests(bests: Iterable[tuple[RunFacts, int]]) -> list[tuple[RankedRun, int]]:
    """``rank_implementations`` from partial answers: eligible runs of one group, each standing for
    that many ranked runs of its implementation, of which it is the fastest (one per revision of
    an implementation, as a database can find them, or every ranked run, each standing for one)."""
    best: dict[str, RunFacts] = {}
    counts: dict[str, int] = {}
    for run, count in bests:
        held = best.get(run.implementation)
        if held is None or (run.latency_ns, run.name) < (held.latency_ns, held.name):
            best[run.implementation] = run
        counts[run.implementation] = counts.get(run.implementation, 0) + count
    ordered = _fastest_first(best.values())
    return [(entry, counts[entry.run.implementation]) for entry in rank_group(ordered)]


@dataclass(frozen=True)
class RecordBreak:
    run: RunFacts
    previous: RunFacts | None

    @property
    def improvement(self) -> float | None:
        """How many times faster than the record it broke (``None`` for the first record)."""
        return None if self.previous is None else self.previous.latency_ns / self.run.latency_ns


def record_history(runs: Iterable[RunFacts]) -> list[RecordBreak]:
    """Every time the #1 of one comparison group changed beyond the noise, oldest first.

    A run sets a record when, at the time it was observed, it is eligible and its interval lies
    entirely below the interval of every earlier eligible run of its group
    (``uncertainty.beats_beyond_noise``): it beats the best figure before it beyond the noise of
    both. Figures of unknown uncertainty are points, so between them strictly faster is enough.
    """
    runs = list(runs)
    if len({run.comparison_key for run in runs}) > 1:
        raise ValueError("record history is kept per comparison group")
    eligible = [run for run in runs if is_eligible(run)]
    history: list[RecordBreak] = []
    lowest: tuple[int, int] | None = None  # the earlier interval with the lowest low: the only one that can bar
    for run in sorted(eligible, key=lambda run: (run.observed_at, run.latency_ns, run.name)):
        if lowest is None or beats_beyond_noise(run.interval, [lowest]):
            history.append(RecordBreak(run=run, previous=history[-1].run if history else None))
        lowest = run.interval if lowest is None or run.interval[0] < lowest[0] else lowest
    return history


@dataclass(frozen=True)
class CaseRanking:
    """One case of a comparison group: the runs that measured it, ranked by their latency at it,
    and the eligible runs that did not measure it."""

    ranked: list[RankedRun]
    not_measured: list[RunFacts]


def rank_at_case(
    runs: Iterable[RunFacts],
    latencies: Mapping[str, int],
    spreads: Mapping[str, Uncertainty | None] | None = None,
) -> CaseRanking:
    """Rank one group's runs at one case: by ``latencies`` (run name → latency at the case), each
    with its interval there (``spreads``, run name → interval; unknown where absent), by the
    rules of ``rank_group``. An eligible run with no latency there is listed as not measured."""
    runs = list(runs)
    spreads = spreads or {}
    measured = [
        replace(run, latency_ns=latencies[run.name], uncertainty=spreads.get(run.name))
        for run in runs
        if run.name in latencies
    ]
    not_measured = sorted((run for run in runs if run.name not in latencies and is_eligible(run)), key=lambda r: r.name)
    return CaseRanking(ranked=rank_group(measured), not_measured=not_measured)


# A release, then an optional pre-release (a, b, rc, dev) or post-release part, as framework
# versions are written: "0.5.6.post2", "1.3.0rc20", "v0.24.0", "0.20.1.dev3+g20dc1ca".
_VERSION = re.compile(
    r"v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[.-]?(?P<pre>a|alpha|b|beta|rc|c|pre|preview|dev)\.?(?P<pre_n>\d*))?"
    r"(?:[.-]?(?:post|p)\.?(?P<post>\d+))?"
    r"(?:\+[0-9a-z.]+)?",
    re.IGNORECASE,
)
# Pre-releases come before their release, and a post-release after it.
_PRE_ORDER = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "c": 3, "rc": 3, "pre": 3, "preview": 3}
_RELEASED = 4

VersionKey = tuple[tuple[int, ...], int, int, int]


@lru_cache(maxsize=1024)
def version_key(version: str) -> VersionKey | None:
    """A key that orders framework versions oldest first: release numbers compared as numbers
    ("0.5.6.post2" < "0.5.10" < "0.5.16"), pre-releases before their release ("1.3.0rc10" <
    "1.3.0rc20" < "1.3.0"), post-releases after it. ``None`` for a version not written so (a
    branch name, a date): such a version is neither older nor newer than another."""
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        return None
    release = tuple(int(part) for part in match["release"].split("."))
    while len(release) > 1 and release[-1] == 0:  # "1.3" and "1.3.0" are one release
        release = release[:-1]
    pre = _PRE_ORDER[match["pre"].lower()] if match["pre"] else _RELEASED
    return release, pre, int(match["pre_n"] or 0), int(match["post"] or 0)


def sorted_versions(versions: Iterable[str]) -> list[str]:
    """Versions oldest first by ``version_key``; those it cannot order follow, alphabetically."""
    return sorted(set(versions), key=lambda v: (0, version_key(v), v) if version_key(v) else (1, (), v))


@dataclass(frozen=True)
class VersionPoint:
    """One framework version's run at one case: what a regression is found between."""

    run: str
    version: str
    latency_ns: int


@dataclass(frozen=True)
class Regression:
    newer: VersionPoint
    older: VersionPoint

    @property
    def slowdown(self) -> float:
        """How much slower the newer version is: 0.12 for 12 %."""
        return self.newer.latency_ns / self.older.latency_ns - 1


def version_regressions(points: Iterable[VersionPoint], noise: float) -> list[Regression]:
    """Where a newer version is slower than an older one by more than ``noise`` (a fraction).

    ``points`` are one framework's runs of one kernel at one case in one comparison group. Each
    version is compared with the fastest strictly older version, so a version is flagged once,
    against the best its framework had done before. Versions ``version_key`` cannot order are
    left out: which of them is newer is unknown."""
    # In decimal, like ``is_faster_than_bound``: 105 / 100 - 1 is 0.05000000000000004 in floating
    # point, which would flag a run exactly at the bound.
    factor = noise_factor(noise)
    return [
        Regression(newer=point, older=older)
        for point, older in _against_best_older(points)
        if point.latency_ns > older.latency_ns * factor
    ]


def noise_factor(noise: float) -> Decimal:
    """1 + ``noise``, exactly as written: the ratio a slowdown must exceed to be a regression."""
    return 1 + Decimal(repr(noise))


def worst_version_slowdown(points: Iterable[VersionPoint]) -> Fraction | None:
    """The largest ratio of a version's latency to the fastest strictly older version's, exactly
    (``None`` where no version has an older one): ``version_regressions(points, noise)`` finds
    something exactly when it exceeds ``noise_factor(noise)``, whatever the noise."""
    return max(
        (Fraction(point.latency_ns, older.latency_ns) for point, older in _against_best_older(points)), default=None
    )


def _against_best_older(points: Iterable[VersionPoint]) -> Iterator[tuple[VersionPoint, VersionPoint]]:
    """Each point of an orderable version with the fastest point of any strictly older version."""
    ordered = sorted(
        ((key, point) for point in points if (key := version_key(point.version)) is not None),
        key=lambda item: (item[0], item[1].run),
    )
    best_older: VersionPoint | None = None
    pending: VersionPoint | None = None  # the fastest of the version being passed, until it is older
    previous_key: VersionKey | None = None
    for key, point in ordered:
        if key != previous_key:
            best_older = _faster(best_older, pending)
            pending, previous_key = None, key
        if best_older is not None:
            yield point, best_older
        pending = _faster(pending, point)


def _faster(one: VersionPoint | None, other: VersionPoint | None) -> VersionPoint | None:
    if one is None or other is None:
        return one or other
    return min(one, other, key=lambda point: (point.latency_ns, point.run))


@dataclass(frozen=True)
class NoiseEstimate:
    """The slowdown within which two figures are taken as equal: ``bound`` (a fraction), from
    ``pairs`` paired measurements, or the fixed ``FALLBACK_NOISE`` when there were too few."""

    bound: float
    pairs: int
    estimated: bool


NOISE_PERCENTILE = 95
MIN_NOISE_PAIRS = 30
FALLBACK_NOISE = 0.05


def noise_estimate(deviations: Sequence[float]) -> NoiseEstimate:
    """The ``NOISE_PERCENTILE``th percentile of |ratio − 1| over pairs that should agree (two
    frameworks calling one library function on one GPU and case), nearest rank; the fixed
    ``FALLBACK_NOISE`` with fewer than ``MIN_NOISE_PAIRS`` pairs."""
    if len(deviations) < MIN_NOISE_PAIRS:
        return NoiseEstimate(bound=FALLBACK_NOISE, pairs=len(deviations), estimated=False)
    ordered = sorted(abs(value) for value in deviations)
    rank = math.ceil(NOISE_PERCENTILE / 100 * len(ordered))
    return NoiseEstimate(bound=ordered[rank - 1], pairs=len(ordered), estimated=True)


# --- Evidence of controlled reruns ----------------------------------------------------

# Two reruns' suite figures agree within this fraction of the smaller one.
SUITE_AGREEMENT_BOUND = 0.05
# Two cases' medians agree within this fraction of the smaller one, whatever their intervals say: an
# interval of the median measures one lease's sampling noise, and on a stable kernel it is far narrower
# than the drift between two leases (clocks, temperature, another GPU of the same model).
CASE_AGREEMENT_BOUND = 0.10


@dataclass(frozen=True)
class CaseFigure:
    """One case of a rerun: its median and, where the bundle gives one, the median's interval."""

    median_ns: int
    interval_ns: tuple[int, int] | None = None


@dataclass(frozen=True)
class RerunFacts:
    """What evidence is derived from: who ran a rerun, where, in which lease, and what it measured.

    ``operator`` is the identity a maintainer approved for the signing key; None where the key
    registry states none. ``counts`` is False for a run that failed or was withdrawn.
    """

    run_id: int
    operator: str | None
    key_id: str
    machine_id: str
    session_id: str
    latency_ns: int
    cases: tuple[CaseFigure, ...]
    counts: bool = True


def case_figures_agree(a: CaseFigure, b: CaseFigure) -> bool:
    """Intervals overlap where both cases have one, or medians within ``CASE_AGREEMENT_BOUND``."""
    if (
        a.interval_ns is not None
        and b.interval_ns is not None
        and a.interval_ns[0] <= b.interval_ns[1]
        and b.interval_ns[0] <= a.interval_ns[1]
    ):
        return True
    return abs(a.median_ns - b.median_ns) <= CASE_AGREEMENT_BOUND * min(a.median_ns, b.median_ns)


def reruns_agree(a: RerunFacts, b: RerunFacts) -> bool:
    """Suite figures within ``SUITE_AGREEMENT_BOUND`` and every case agreeing, case by case."""
    suite = abs(a.latency_ns - b.latency_ns) <= SUITE_AGREEMENT_BOUND * min(a.latency_ns, b.latency_ns)
    return (
        suite
        and len(a.cases) == len(b.cases) > 0
        and all(case_figures_agree(x, y) for x, y in zip(a.cases, b.cases, strict=True))
    )


def independent(a: RerunFacts, b: RerunFacts) -> bool:
    """Another approved operator (both stated), another key and another GPU: nothing shared but the protocol."""
    return (
        a.operator is not None
        and b.operator is not None
        and a.operator != b.operator
        and a.key_id != b.key_id
        and a.machine_id != b.machine_id
    )


@dataclass(frozen=True)
class Agreements:
    """The reruns (run ids) that agree with one: on another physical GPU (a reproduction), or on the same
    GPU measured again (a repetition, which reproduces nothing about the GPU), and whether any of the
    former is independent (another approved operator)."""

    reproduced_by: tuple[int, ...]
    repeated_by: tuple[int, ...]
    independent: bool


def rerun_agreements(run: RerunFacts, others: Iterable[RerunFacts]) -> Agreements:
    """Every other counting rerun of the same implementation and group that agrees with ``run``, split by
    whether it ran on another GPU (``machine_id``: the GPU's UUID where the bundle names it)."""
    reproduced: list[int] = []
    repeated: list[int] = []
    replicated = False
    if run.counts:
        for other in others:
            if other.run_id == run.run_id or not other.counts:
                continue
            if (other.session_id, other.key_id, other.machine_id) == (run.session_id, run.key_id, run.machine_id):
                continue  # the same lease on the same GPU under the same key: not a second run
            if not reruns_agree(run, other):
                continue
            if other.machine_id == run.machine_id:
                repeated.append(other.run_id)
                continue
            reproduced.append(other.run_id)
            replicated = replicated or independent(run, other)
    return Agreements(tuple(sorted(reproduced)), tuple(sorted(repeated)), replicated)


def rerun_evidence(run: RerunFacts, others: Iterable[RerunFacts]) -> EvidenceLevel:
    """``replicated`` when an independent rerun of the same implementation and group agrees on another
    GPU, ``reproduced`` when only another lease or key of the same (or an unstated) operator does on
    another GPU, ``verified`` otherwise: the same GPU measured again only repeats the measurement."""
    agreements = rerun_agreements(run, others)
    if agreements.independent:
        return EvidenceLevel.REPLICATED
    return EvidenceLevel.REPRODUCED if agreements.reproduced_by else EvidenceLevel.VERIFIED


# --- Confirming a reported figure by reruns under the source's own settings --------------------

CONFIRMED, CONTRADICTED, UNCHECKED = "confirmed", "contradicted", "unchecked"
# What torch.backends.cudnn.allow_tf32 changes, the one setting in which strict v2 differs from a
# KernelBench timing: cuDNN convolutions (and transposed ones) and cuDNN's recurrent networks.
_TF32_SENSITIVE = re.compile(r"conv|\b(?:lstm|gru|rnn)\b", re.IGNORECASE)


def settings_neutral(program: str) -> bool:
    """Whether strict v2 computes a KernelBench program with the arithmetic KernelBench's settings give
    it: the program mentions nothing that ``torch.backends.cudnn.allow_tf32`` changes (no convolution, no
    cuDNN RNN). Read from the program's text, so a mere mention (a comment) makes it not neutral: a strict
    figure then never stands in for a faithful one."""
    return _TF32_SENSITIVE.search(program) is None


def confirmation_bound(spreads: Sequence[float], fallback: float) -> float:
    """How far a reported figure may lie from the reruns' and still be confirmed: twice the largest
    run-to-run spread measured (``spreads``: largest / smallest − 1 between reruns of one program,
    mode and GPU model in separate sessions); ``fallback`` where nothing was measured twice."""
    return 2 * max(spreads) if spreads else fallback


def confirmation_state(reported_ns: int, rerun_ns: float, bound: float) -> tuple[str, float]:
    """(state, ratio): the ratio is reported / rerun; confirmed when the larger figure is within
    ``bound`` of the smaller, contradicted otherwise."""
    if reported_ns <= 0 or rerun_ns <= 0:
        raise ValueError("figures to compare must be positive")
    ratio = reported_ns / rerun_ns
    return (CONFIRMED if max(ratio, 1 / ratio) - 1 <= bound else CONTRADICTED), ratio
