"""Version regressions, computed once per ingest instead of on every request.

``refresh_regressions`` reads a source's eligible runs workload by workload, streaming, and
writes ``version_regression``: where a framework's kernel in a newer version is slower at a
case, on one GPU, than in the fastest older version by more than the source's noise
(``kernelindex.ranking.version_regressions``). The noise is estimated from pairs that should
agree: two frameworks whose runs name the same ``kernel_source`` (one library function, such
as ``torch.nn.functional.linear``) on the same GPU, workload and case
(``kernelindex.ranking.noise_estimate``); it is stored in ``regression_noise`` with how it
was found, for the pages to say.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from itertools import combinations

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.regression_tables import RegressionNoise, VersionRegression
from kernelindex.db.tables import Environment, Run, Source
from kernelindex.ranking import (
    FALLBACK_NOISE,
    MIN_NOISE_PAIRS,
    NOISE_PERCENTILE,
    NoiseEstimate,
    VersionPoint,
    noise_estimate,
    noise_factor,
    version_regressions,
    worst_version_slowdown,
)
from kernelindex.store.case_results import RunCases, run_cases
from kernelindex.store.reads import eligible

STREAM_BATCH = 500
IN_CLAUSE = 500  # workload ids per IN (…): well under every backend's parameter limit


@dataclass(frozen=True)
class CaseRun:
    """An eligible run with its per-case latencies, as the refresh compares them."""

    id: int
    workload_id: int
    comparison_key: str
    gpu_slug: str
    cases: RunCases


@dataclass(frozen=True)
class RefreshSummary:
    workloads: int  # the workloads read: all of the source's, or those asked for
    regressions: int
    noise: NoiseEstimate


def noise_method(noise: NoiseEstimate, basis: str) -> str:
    """How the noise bound was found, in a sentence for the pages. ``basis``: "repeats" (cases the
    source measured twice) or "frameworks" (two frameworks running one library function)."""
    count = "no" if noise.pairs == 0 else str(noise.pairs)
    plural = "" if noise.pairs == 1 else "s"
    if basis == "repeats":
        pairs = (
            f"{count} case{plural} the source measured twice (the same kernel of one framework version on the same "
            "GPU, workload and case)"
        )
    else:
        pairs = (
            f"{count} pair{plural} of measurements in which two frameworks ran the same kernel_source (one library "
            "function) on the same GPU, workload and case"
        )
    if noise.estimated:
        return f"The {NOISE_PERCENTILE}th percentile of |ratio − 1| over {pairs}."
    return (
        f"A fixed bound of {FALLBACK_NOISE:.0%}: the source holds {pairs}, fewer than the "
        f"{MIN_NOISE_PAIRS} an estimate needs."
    )


def refresh_regressions(session: Session, source_id: int, workload_ids: Sequence[int] | None = None) -> RefreshSummary:
    """Recompute the version regressions of source ``source_id``: of all its workloads, or only of
    ``workload_ids`` (after an ingest that changed some). Writes in ``session``; the caller commits.

    The noise bound is a figure of the whole source: a refresh of every workload estimates it
    again and stores it; a refresh of some workloads uses the stored bound (estimating it from
    those workloads only when none is stored yet)."""
    stored = session.get(RegressionNoise, source_id)
    to_compare, read = workload_ids, 0
    if workload_ids is None or stored is None:
        # A case measured twice is the same measurement repeated: its spread is the noise itself.
        # Two frameworks naming one function can still measure different work (the linear-attention
        # tables do: medians 20x apart), so they count only where the source repeats nothing.
        repeats: list[float] = []
        across: list[float] = []
        # Each workload's worst slowdown, which does not depend on the noise: the second pass reads
        # only the workloads whose worst exceeds the bound found here (on the whole AIConfigurator
        # package, 3,209 of 17,042), not every run again.
        worst: dict[int, Fraction] = {}
        for runs in _runs_by_workload(session, source_id, workload_ids):
            read += 1
            repeats += _repeat_deviations(runs)
            across += _deviations(runs)
            slowdowns = [s for *_, points in _version_lines(runs) if (s := worst_version_slowdown(points)) is not None]
            if slowdowns:
                worst[runs[0].workload_id] = max(slowdowns)
        basis = "repeats" if len(repeats) >= MIN_NOISE_PAIRS else "frameworks"
        noise = noise_estimate(repeats if basis == "repeats" else across)
        fields = {
            "bound": noise.bound,
            "pairs": noise.pairs,
            "estimated": noise.estimated,
            "method": noise_method(noise, basis),
            "computed_at": datetime.now(UTC),
        }
        if stored is None:
            session.add(RegressionNoise(source_id=source_id, **fields))
        else:
            for name, value in fields.items():
                setattr(stored, name, value)
        factor = noise_factor(noise.bound)
        to_compare = sorted(workload for workload, slowdown in worst.items() if slowdown > factor)
    else:
        noise = NoiseEstimate(bound=stored.bound, pairs=stored.pairs, estimated=stored.estimated)

    scope = delete(VersionRegression).where(VersionRegression.source_id == source_id)
    if workload_ids is None:
        session.execute(scope)
    else:
        for chunk in _chunks(workload_ids):
            session.execute(scope.where(VersionRegression.workload_id.in_(chunk)))
    found = 0
    for runs in _runs_by_workload(session, source_id, to_compare):
        if to_compare is workload_ids:  # no first pass read them
            read += 1
        rows = [row | {"source_id": source_id} for row in _regression_rows(runs, noise.bound)]
        if rows:
            session.execute(insert(VersionRegression), rows)
            found += len(rows)
    session.flush()
    return RefreshSummary(workloads=read, regressions=found, noise=noise)


def refresh_source_regressions(sessions: sessionmaker[Session], slug: str) -> RefreshSummary:
    """``refresh_regressions`` over every workload of the source ``slug``, in its own committed
    transaction (for a script, a test or a maintainer's shell)."""
    with sessions() as session:
        source_id = session.scalar(select(Source.id).where(Source.slug == slug))
        if source_id is None:
            raise LookupError(f"no source has the slug {slug!r}")
        summary = refresh_regressions(session, source_id)
        session.commit()
        return summary


def _chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), IN_CLAUSE):
        yield ids[start : start + IN_CLAUSE]


def _runs_by_workload(session: Session, source_id: int, workload_ids: Sequence[int] | None) -> Iterator[list[CaseRun]]:
    """The source's eligible runs that carry per-case results, one workload's at a time."""
    chunks: Iterable[Sequence[int] | None] = [None] if workload_ids is None else _chunks(sorted(set(workload_ids)))
    for chunk in chunks:
        query = (
            select(Run.id, Run.workload_id, Run.comparison_key, Run.manifest_json, Environment.gpu_slug)
            .join(Environment, Environment.id == Run.environment_id)
            .where(Run.source_id == source_id, eligible())
            .order_by(Run.workload_id, Run.id)
            .execution_options(yield_per=STREAM_BATCH)
        )
        if chunk is not None:
            query = query.where(Run.workload_id.in_(chunk))
        current: list[CaseRun] = []
        for row in session.execute(query):
            if current and current[0].workload_id != row.workload_id:
                yield current
                current = []
            cases = run_cases(row.manifest_json)
            if cases.latencies:
                current.append(CaseRun(row.id, row.workload_id, row.comparison_key, row.gpu_slug, cases))
        if current:
            yield current


def _repeat_deviations(runs: list[CaseRun]) -> Iterator[float]:
    """|ratio − 1| (slower over faster) of every case a run measured twice."""
    for run in runs:
        for case, repeated in run.cases.repeats.items():
            first = run.cases.latencies.get(case)
            if first:
                yield max(first, repeated) / min(first, repeated) - 1


def _deviations(runs: list[CaseRun]) -> Iterator[float]:
    """|ratio − 1| (slower over faster) at every case shared by two runs of different frameworks
    that name the same kernel in one comparison group."""
    by_kernel: dict[tuple[str, str], list[CaseRun]] = defaultdict(list)
    for run in runs:
        if run.cases.framework and run.cases.kernel:
            by_kernel[(run.comparison_key, run.cases.kernel)].append(run)
    for group in by_kernel.values():
        for one, other in combinations(group, 2):
            if one.cases.framework == other.cases.framework:
                continue
            for case in one.cases.latencies.keys() & other.cases.latencies.keys():
                a, b = one.cases.latencies[case], other.cases.latencies[case]
                yield max(a, b) / min(a, b) - 1


def _version_lines(runs: list[CaseRun]) -> Iterator[tuple[str, str, str, dict[int, CaseRun], int, list[VersionPoint]]]:
    """(comparison key, framework, kernel, its runs by id, case, points) for each case of each line
    (one framework's kernel in one comparison group) that was measured in two versions or more."""
    by_line: dict[tuple[str, str, str], list[CaseRun]] = defaultdict(list)
    for run in runs:
        if run.cases.framework and run.cases.kernel and run.cases.version:
            by_line[(run.comparison_key, run.cases.framework, run.cases.kernel)].append(run)
    for (comparison_key, framework, kernel), line in by_line.items():
        if len({run.cases.version for run in line}) < 2:
            continue
        by_id = {run.id: run for run in line}
        for case in sorted({case for run in line for case in run.cases.latencies}):
            points = [
                VersionPoint(run=str(run.id), version=run.cases.version or "", latency_ns=run.cases.latencies[case])
                for run in line
                if case in run.cases.latencies
            ]
            yield comparison_key, framework, kernel, by_id, case, points


def _regression_rows(runs: list[CaseRun], noise: float) -> Iterator[dict[str, object]]:
    for comparison_key, framework, kernel, by_id, case, points in _version_lines(runs):
        for found in version_regressions(points, noise):
            newer, older = by_id[int(found.newer.run)], by_id[int(found.older.run)]
            yield {
                "workload_id": newer.workload_id,
                "comparison_key": comparison_key,
                "gpu_slug": newer.gpu_slug,
                "framework": framework,
                "kernel": kernel[:300],
                "case_index": case,
                "newer_run_id": newer.id,
                "newer_version": found.newer.version[:300],
                "newer_latency_ns": found.newer.latency_ns,
                "older_run_id": older.id,
                "older_version": found.older.version[:300],
                "older_latency_ns": found.older.latency_ns,
                "slowdown": found.slowdown,
            }
