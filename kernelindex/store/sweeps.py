"""A comparison group's sweep: per-case latencies against the workload's swept axis, one series
per implementation, from the ``caseResults`` its runs carry (Liger-Kernel publishes a figure per
case; most sources publish one suite figure, and their runs have no sweep).

Each implementation is drawn by its fastest eligible run in the group (the run the
leaderboard's implementations table names), with the spread the source measured and the peak
memory it published beside the latency. Nothing here is ranked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session, defer, joinedload

from kernelindex.db.tables import Run, Workload
from kernelindex.manifests.kinds import WorkloadCase
from kernelindex.manifests.types import NativeValue
from kernelindex.store.by_spec import BySpec
from kernelindex.store.framework_filter import FrameworkSelection
from kernelindex.store.made_when_read import MadeWhenRead
from kernelindex.store.manifests import Stored, StoredText, run_manifest, workload_manifest
from kernelindex.store.reads import eligible
from kernelindex.store.runs import implementation_identity, run_metrics
from kernelindex.uncertainty import noise_uncertainty

# The per-case statistic drawn as the line, then the pair drawn as the spread around it, in the
# order they are looked for: the first a run's case results all carry is used.
CENTRES = ("median", "mean")
SPREADS = (("p20", "p80"), ("min", "max"))
PEAK_MEMORY = "peak_memory_mb"


@dataclass(frozen=True)
class SweepPoint:
    latency_ns: int
    low_ns: int | None
    high_ns: int | None
    peak_memory_mb: float | None


@dataclass(frozen=True)
class SweepSeries:
    implementation: str  # the implementation's manifest name
    implementation_title: str
    run: str
    statistic: str  # the per-case statistic of the line, e.g. "median"
    spread: tuple[str, str] | None  # the pair drawn around it, e.g. ("p20", "p80")
    cases_measured: int
    has_memory: bool  # some case of the run records its peak memory
    # One per case of the workload: None where the run has no result.
    points: Sequence[SweepPoint | None]


@dataclass(frozen=True)
class Sweep:
    axis: str  # what the cases vary: one axis's name, or "case" when several vary together
    axis_description: str | None
    values: Sequence[NativeValue]  # the axis value of each case (its label when several axes vary)
    numeric: bool  # every value a number: drawn on a numeric axis, else as categories
    case_count: int
    series: list[SweepSeries]


def may_carry_case_results() -> ColumnElement[bool]:
    """A SELECT filter on ``Run`` that keeps every run with per-case results: a manifest without
    the ``caseResults`` key has none, and the database drops those without reading them here."""
    return Run.manifest_json.contains('"caseResults"', autoescape=True)


def group_case_runs(session: Session, workload: Workload, comparison_key: str) -> list[Run]:
    """The eligible runs of group ``comparison_key`` of ``workload`` that may carry per-case
    results, fastest first, each with its implementation: what the group's per-case ranking and
    its sweep are made of, read once for both. None where the workload has fewer than two cases."""
    if len(workload_manifest(workload).spec.cases) < 2:
        return []
    return list(
        session.scalars(
            select(Run)
            # Their manifests are read through caches kept by digest (``cached_run_cases``,
            # ``_run_points``): the text, 76 kB for each run of the largest sweep, only on a miss.
            .options(joinedload(Run.implementation), defer(Run.manifest_json))
            .where(Run.workload_id == workload.id, Run.comparison_key == comparison_key, eligible())
            .where(may_carry_case_results())
            .order_by(Run.latency_ns, Run.name)
        )
    )


def group_sweep(
    workload: Workload,
    runs: Sequence[Run],
    selection: FrameworkSelection | None = None,
    noise: float | None = None,
) -> Sweep | None:
    """The sweep of one comparison group of ``workload`` from its ``runs`` (``group_case_runs``),
    of those ``selection`` admits by the framework and version they name (all when it is
    ``None``); ``None`` unless the workload has two or more cases and one of the runs carries
    per-case results. ``noise`` (a fraction: the source's noise, where it bounds its figures)
    gives a band of ± noise to a run that measured no spread of its own."""
    suite = workload_manifest(workload).spec
    cases = suite.cases
    if len(cases) < 2:
        return None
    series: dict[str, SweepSeries] = {}
    for run in runs:  # fastest first: the first run of an implementation is its best
        implementation = run.implementation
        if implementation.name in series:
            continue
        if selection is not None and selection.chosen and not _admitted(selection, run):
            continue
        drawn = _run_points(run, len(cases))
        if drawn is None:
            continue
        if drawn.spread is None and noise is not None:
            drawn = _with_noise(drawn, noise)
        series[implementation.name] = SweepSeries(
            implementation=implementation.name,
            implementation_title=implementation_identity(implementation),
            run=run.name,
            statistic=drawn.statistic,
            spread=drawn.spread,
            cases_measured=drawn.cases_measured,
            has_memory=drawn.has_memory,
            points=drawn.points,
        )
    if not series:
        return None
    axis, values = _swept_axis_of(workload.digest, workload.manifest_json)
    description = suite.definition.axes[axis].description if axis in suite.definition.axes else None
    return Sweep(
        axis=axis,
        axis_description=description,
        values=values,
        numeric=not isinstance(values, CaseLabels) and all(_is_number(value) for value in values),
        case_count=len(cases),
        series=sorted(series.values(), key=lambda s: (s.implementation_title.casefold(), s.implementation)),
    )


def _admitted(selection: FrameworkSelection, run: Run) -> bool:
    metrics = run_metrics(run)
    framework, version = metrics.get("framework"), metrics.get("version")
    return selection.admits(
        framework if isinstance(framework, str) else None, version if isinstance(version, str) else None
    )


@dataclass(frozen=True)
class _RunPoints:
    """What a run draws on a sweep: ``SweepSeries`` without the run's names."""

    statistic: str
    spread: tuple[str, str] | None
    cases_measured: int
    has_memory: bool
    points: Sequence[SweepPoint | None]


def _points_of(run: Stored, case_count: int) -> _RunPoints | None:
    """A stored run's points on a sweep of ``case_count`` cases (``None`` without case results)."""
    results = run_manifest(run).spec.case_results
    if not results:
        return None
    centre = next(
        (stat for stat in CENTRES if all(stat in result["latencyNs"] for result in results)),
        next(iter(results[0]["latencyNs"])),
    )
    spread = next(
        (pair for pair in SPREADS if all(set(pair) <= result["latencyNs"].keys() for result in results)),
        None,
    )
    points: list[SweepPoint | None] = [None] * case_count
    measured = 0
    has_memory = False
    for result in results:
        if result["caseIndex"] >= case_count or centre not in result["latencyNs"]:
            continue  # a case the workload does not hold has no place on the axis
        measured += points[result["caseIndex"]] is None
        memory = (result.get("metrics") or {}).get(PEAK_MEMORY)
        peak_memory_mb = float(memory) if isinstance(memory, int | float) and not isinstance(memory, bool) else None
        has_memory |= peak_memory_mb is not None
        points[result["caseIndex"]] = SweepPoint(
            latency_ns=result["latencyNs"][centre],
            low_ns=result["latencyNs"][spread[0]] if spread else None,
            high_ns=result["latencyNs"][spread[1]] if spread else None,
            peak_memory_mb=peak_memory_mb,
        )
    return _RunPoints(centre, spread, measured, has_memory, tuple(points))


# A band of ± the source's noise: ``SweepSeries.spread`` names it (NOISE_SPREAD, "10.0 %").
NOISE_SPREAD = "source-noise"


def _with_noise(drawn: _RunPoints, noise: float) -> _RunPoints:
    """``drawn`` with each point's band at ± ``noise`` (``uncertainty.noise_uncertainty``)."""
    points: list[SweepPoint | None] = []
    for point in drawn.points:
        if point is None:
            points.append(None)
            continue
        band = noise_uncertainty(point.latency_ns, noise)
        points.append(replace(point, low_ns=band.low_ns, high_ns=band.high_ns))
    return replace(drawn, spread=(NOISE_SPREAD, f"{noise * 100:.1f} %"), points=tuple(points))


# Kept: the largest sweep has 3,440 cases, and a run's points change only with its manifest's spec.
# Shared between requests, so read them, never change them.
_run_points: BySpec[_RunPoints | None] = BySpec(_points_of, size=128)


@lru_cache(maxsize=256)
def _swept_axis_of(digest: str, manifest_json: str) -> tuple[str, Sequence[NativeValue]]:
    """``_swept_axis`` of a stored workload's cases, kept: it compares every case's values (3,440
    cases for the largest sweep), and a workload's cases change only with its manifest."""
    axis, values = _swept_axis(workload_manifest(StoredText(digest, manifest_json)).spec.cases)
    return axis, values if isinstance(values, CaseLabels) else tuple(values)  # shared: never to be changed


def _swept_axis(cases: Sequence[WorkloadCase]) -> tuple[str, Sequence[NativeValue]]:
    """The axis whose value changes from case to case, with each case's value; when several
    change together, "case" with a label per case naming them all."""
    names = list(dict.fromkeys(name for case in cases for name in case.axes))
    varying = [name for name in names if len({_value_key(case.axes.get(name)) for case in cases}) > 1]
    if len(varying) == 1:
        axis = varying[0]
        return axis, [case.axes.get(axis, "–") for case in cases]
    return "case", CaseLabels(cases, varying or names)


class CaseLabels(MadeWhenRead[NativeValue]):
    """Each case's label naming the axes ``shown``, written when read: a page shows a window of a
    sweep of thousands of cases."""

    def __init__(self, cases: Sequence[WorkloadCase], shown: list[str]):
        super().__init__(len(cases))
        self._cases, self._shown = cases, shown

    def _make(self, index: int) -> NativeValue:
        case = self._cases[index]
        return ", ".join(f"{name}={case.axes.get(name, '–')}" for name in self._shown) or str(index + 1)


def _value_key(value: object) -> object:
    """A value as a set member that tells 1, 1.0 and true apart, as their JSON does: a scalar by
    its type and value (a sweep of thousands of cases compares them all), anything else by its JSON."""
    if value is None or isinstance(value, str | int | float):
        return (type(value), value)
    return json.dumps(value, sort_keys=True)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
