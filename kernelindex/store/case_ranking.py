"""A comparison group ranked at one case of its workload's sweep.

A run's suite figure is the geometric mean of the cases it measured, and runs of a sweep
source measure different cases; one case, ranked by the latency each run measured there,
compares like with like. ``case_ranking`` answers the workload page and its JSON twin; the
rule is ``kernelindex.ranking.rank_at_case``. The flags come from ``version_regression``,
computed at ingest (``kernelindex.store.regressions``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from kernelindex.db.regression_tables import RegressionNoise, VersionRegression
from kernelindex.db.tables import Run, Workload
from kernelindex.manifests.kinds import WorkloadCase
from kernelindex.ranking import RankedRun, rank_at_case, sorted_versions
from kernelindex.store.case_results import RunCases, cached_run_cases
from kernelindex.store.framework_filter import FrameworkSelection, checked_selection
from kernelindex.store.made_when_read import MadeWhenRead
from kernelindex.store.manifests import workload_manifest
from kernelindex.store.runs import implementation_identity, run_facts
from kernelindex.uncertainty import Uncertainty, noise_uncertainty, tied_with_best


class UnknownCase(ValueError):
    """A case the workload does not hold, or a case asked of a group with no per-case results."""


@dataclass(frozen=True)
class CaseLabel:
    index: int  # 0-based, as ``caseResults`` and ``?case=`` count
    case: WorkloadCase
    runs_measured: int  # eligible runs of the group that measured it

    @property
    def label(self) -> str:
        """The case's axis values: "num_tokens=4096" (written only for the cases a page shows: a
        long sweep has thousands)."""
        return case_label(self.case)


@dataclass(frozen=True)
class RegressionFlag:
    """This run's version is slower here than ``older_version`` of its framework (``older_run``)."""

    framework: str
    older_version: str
    older_run: str
    older_latency_ns: int
    slowdown: float


@dataclass(frozen=True)
class CaseEntry:
    run: str
    implementation_title: str
    project: str
    project_slug: str
    framework: str | None
    version: str | None
    kernel: str | None
    latency_ns: int | None  # None, with rank and vs_best, for a run that did not measure the case
    rank: int | None
    vs_best: float | None
    regressions: list[RegressionFlag]
    ranked: RankedRun | None = None  # its rank range, distinctness and interval at the case


@dataclass(frozen=True)
class CaseRanking:
    case: CaseLabel
    default_case: bool  # chosen by ``MeasuredCases.default``, not asked for
    cases: MeasuredCases
    statistic: str
    ranked: list[CaseEntry]  # the runs the selection admits, fastest first
    ranked_total: int  # every run ranked at the case, whatever the selection
    not_measured: list[CaseEntry]  # eligible runs the selection admits that did not measure the case
    selection: FrameworkSelection
    frameworks: dict[str, list[str]]  # framework → its versions here, oldest first
    # The slowdown a flag must exceed, and how it was found; None before regressions were computed.
    noise_bound: float | None
    noise_method: str | None
    # How many other ranked runs the case's #1 is not distinct from (None: nothing ranked).
    tied_with_best: int | None = None
    # Whether the source's noise bounds the figures that have no interval of their own.
    noise_bounds_figures: bool = False


@dataclass(frozen=True)
class _GroupRun:
    row: Run
    cases: RunCases


def case_label(case: WorkloadCase) -> str:
    return ", ".join(f"{name}={value}" for name, value in case.axes.items()) or "no axis values"


class MeasuredCases(MadeWhenRead[CaseLabel]):
    """Each case of a sweep with the count of the group's runs that measured it."""

    def __init__(self, cases: Sequence[WorkloadCase], measured: Counter[int]):
        super().__init__(len(cases))
        self._cases, self._measured = cases, measured

    def _make(self, index: int) -> CaseLabel:
        return CaseLabel(index, self._cases[index], self._measured[index])

    def default(self) -> CaseLabel:
        """The case a sweep opens on: the one most runs of the group measured, so the ranking
        leaves out as few runs as it can; of several such, the middle one in sweep order (a
        mid-sized shape, not an extreme of the sweep)."""
        counts = [self._measured[index] for index in range(len(self))]
        most = max(counts)
        candidates = [index for index, count in enumerate(counts) if count == most]
        return self[candidates[(len(candidates) - 1) // 2]]


def framework_choices(runs: Sequence[RunCases]) -> dict[str, list[str]]:
    versions: dict[str, set[str]] = {}
    for cases in runs:
        if cases.framework:
            versions.setdefault(cases.framework, set()).update([cases.version] if cases.version else [])
    return {name: sorted_versions(versions[name]) for name in sorted(versions, key=str.casefold)}


def case_ranking(
    session: Session,
    workload: Workload,
    comparison_key: str,
    group_runs: Sequence[Run],
    case: int | None,
    framework: str | None = None,
    version: str | None = None,
) -> CaseRanking | None:
    """Group ``comparison_key`` of ``workload``, whose ``group_runs`` (``group_case_runs``) may
    carry per-case results, ranked at ``case`` (0-based; ``MeasuredCases.default`` when ``None``),
    its rows narrowed to ``framework`` and ``version``; ``None`` when the workload has fewer than
    two cases or none of the runs carries per-case results.

    Raises ``UnknownCase`` for a case out of range (or asked where there is no sweep) and
    ``UnknownFramework`` for a framework or version the group's runs do not name."""
    suite_cases = workload_manifest(workload).spec.cases
    runs = [_GroupRun(row, cached_run_cases(row)) for row in group_runs]
    runs = [run for run in runs if run.cases.latencies]
    facts = {run.row.name: run_facts(run.row) for run in runs}
    if len(suite_cases) < 2 or not runs:
        if case is not None:
            raise UnknownCase("this comparison group publishes no per-case results, so no case can be chosen.")
        checked_selection({}, framework, version)  # a filter asked for here names nothing: refused
        return None
    if case is not None and not 0 <= case < len(suite_cases):
        raise UnknownCase(
            f"case must be a case index from 0 to {len(suite_cases) - 1} (0-based, as the cases table lists them); "
            f"got {case}."
        )
    frameworks = framework_choices([run.cases for run in runs])
    selection = checked_selection(frameworks, framework, version)
    # Counted run by run: a long sweep has thousands of cases and a group a few runs.
    measured = Counter(index for run in runs for index in run.cases.latencies)
    labels = MeasuredCases(suite_cases, measured)
    chosen = labels[case] if case is not None else labels.default()
    noise = session.get(RegressionNoise, workload.source_id)
    # Only an estimate from the cases the source measured twice bounds a figure (``store.spreads``).
    bound = noise.bound if noise and noise.estimated and noise.basis == "repeats" else None
    latencies = {run.row.name: run.cases.latencies[chosen.index] for run in runs if chosen.index in run.cases.latencies}
    spreads = {run.row.name: _case_spread(run.cases, chosen.index, bound) for run in runs if run.row.name in latencies}
    standing = rank_at_case([facts[run.row.name] for run in runs], latencies, spreads)
    by_name = {run.row.name: run for run in runs}
    flags = _flags(session, workload.id, comparison_key, chosen.index)
    best = standing.ranked[0] if standing.ranked else None
    admitted = {name for name, run in by_name.items() if selection.admits(run.cases.framework, run.cases.version)}
    return CaseRanking(
        case=chosen,
        default_case=case is None,
        cases=labels,
        statistic=runs[0].cases.statistic or "",
        ranked=[_entry(by_name[e.run.name], e, flags) for e in standing.ranked if e.run.name in admitted],
        ranked_total=len(standing.ranked),
        not_measured=[_entry(by_name[f.name], None, flags) for f in standing.not_measured if f.name in admitted],
        selection=selection,
        frameworks=frameworks,
        noise_bound=noise.bound if noise else None,
        noise_method=noise.method if noise else None,
        tied_with_best=(
            tied_with_best(best.run.interval, [entry.run.interval for entry in standing.ranked[1:]]) if best else None
        ),
        noise_bounds_figures=bound is not None,
    )


def _case_spread(cases: RunCases, index: int, noise: float | None) -> Uncertainty | None:
    """A run's interval at one case: its own, else ± the source's noise where that is known."""
    own = cases.spreads.get(index)
    if own is not None or noise is None:
        return own
    return noise_uncertainty(cases.latencies[index], noise)


def _entry(run: _GroupRun, ranked: RankedRun | None, flags: dict[int, list[RegressionFlag]]) -> CaseEntry:
    implementation = run.row.implementation
    return CaseEntry(
        run=run.row.name,
        implementation_title=implementation_identity(implementation),
        project=implementation.project,
        project_slug=implementation.project_slug,
        framework=run.cases.framework,
        version=run.cases.version,
        kernel=run.cases.kernel,
        latency_ns=ranked.run.latency_ns if ranked else None,
        rank=ranked.rank if ranked else None,
        vs_best=ranked.vs_best if ranked else None,
        regressions=flags.get(run.row.id, []),
        ranked=ranked,
    )


# Made once: an alias builds a proxy of each of the table's columns.
_OLDER = aliased(Run)


def _flags(session: Session, workload_id: int, comparison_key: str, case: int) -> dict[int, list[RegressionFlag]]:
    """The regressions at one case of one group, by the newer run's id."""
    older = _OLDER
    found = session.execute(
        select(VersionRegression, older.name)
        .join(older, older.id == VersionRegression.older_run_id)
        .where(
            VersionRegression.workload_id == workload_id,
            VersionRegression.case_index == case,
            VersionRegression.comparison_key == comparison_key,
        )
        .order_by(VersionRegression.id)
    )
    flags: dict[int, list[RegressionFlag]] = {}
    for regression, older_name in found:
        flags.setdefault(regression.newer_run_id, []).append(
            RegressionFlag(
                framework=regression.framework,
                older_version=regression.older_version,
                older_run=older_name,
                older_latency_ns=regression.older_latency_ns,
                slowdown=regression.slowdown,
            )
        )
    return flags
