"""Version regressions, computed once per ingest instead of on every request.

``refresh_regressions`` reads a source's eligible runs workload by workload, streaming, and
writes ``version_regression``: where a framework's kernel in a newer version is slower at a
case, on one GPU, than in the fastest older version by more than the source's noise
(``kernelindex.ranking.version_regressions``). The noise is estimated from pairs that should
agree: two frameworks whose runs name the same ``kernel_source`` (one library function, such
as ``torch.nn.functional.linear``) on the same GPU, workload and case
(``kernelindex.ranking.noise_estimate``); it is stored in ``regression_noise`` with how it
was found, for the pages to say.

Reading the runs is the store's work; comparing them is pure CPU work (parsing each manifest,
ordering versions), so above ``PARALLEL_FROM`` runs it is spread over worker processes while
this one reads on: on the whole AIConfigurator package the refresh would otherwise keep one
core busy for a minute after the last batch is written.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from itertools import combinations
from typing import TypeVar

from sqlalchemy import delete, func, insert, select
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
from kernelindex.store.spreads import apply_source_noise

STREAM_BATCH = 500
IN_CLAUSE = 500  # workload ids per IN (…): well under every backend's parameter limit
# From this many eligible runs on, they are compared in worker processes (below it, starting the
# workers costs more than they save), by at most MAX_WORKERS, WORKLOADS_PER_TASK workloads a task.
PARALLEL_FROM = 20_000
MAX_WORKERS = 4
WORKLOADS_PER_TASK = 64

# A run as read for the refresh: id, workload id, comparison key, manifest JSON, GPU slug.
RawRun = tuple[int, int, str, str, str]
T = TypeVar("T")


@dataclass(frozen=True)
class CaseRun:
    """An eligible run with its per-case latencies, as the refresh compares them."""

    id: int
    workload_id: int
    comparison_key: str
    gpu_slug: str
    cases: RunCases


@dataclass(frozen=True)
class WorkloadFigures:
    """What the first pass finds in one workload, none of it depending on the noise bound."""

    workload_id: int
    repeats: list[float]  # |ratio − 1| of the cases the source measured twice
    across: list[float]  # |ratio − 1| between frameworks naming one kernel
    worst: Fraction | None  # the worst slowdown of a version against the best older one


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
        for figures in _compared(session, source_id, workload_ids, _first_pass):
            read += 1
            repeats += figures.repeats
            across += figures.across
            if figures.worst is not None:
                worst[figures.workload_id] = figures.worst
        basis = "repeats" if len(repeats) >= MIN_NOISE_PAIRS else "frameworks"
        noise = noise_estimate(repeats if basis == "repeats" else across)
        fields = {
            "bound": noise.bound,
            "pairs": noise.pairs,
            "estimated": noise.estimated,
            "method": noise_method(noise, basis),
            "basis": basis,
            "computed_at": datetime.now(UTC),
        }
        if stored is None:
            session.add(RegressionNoise(source_id=source_id, **fields))
        else:
            for name, value in fields.items():
                setattr(stored, name, value)
        factor = noise_factor(noise.bound)
        to_compare = sorted(workload for workload, slowdown in worst.items() if slowdown > factor)
        # Only cases measured twice measure a figure's own noise: it bounds the source's figures.
        apply_source_noise(session, source_id, noise.bound if noise.estimated and basis == "repeats" else None)
    else:
        noise = NoiseEstimate(bound=stored.bound, pairs=stored.pairs, estimated=stored.estimated)
        if stored.estimated and stored.basis == "repeats":
            apply_source_noise(session, source_id, stored.bound, only_new=True)

    scope = delete(VersionRegression).where(VersionRegression.source_id == source_id)
    if workload_ids is None:
        session.execute(scope)
    else:
        for chunk in _chunks(workload_ids):
            session.execute(scope.where(VersionRegression.workload_id.in_(chunk)))
    found = 0
    for rows in _compared(session, source_id, to_compare, _second_pass, noise.bound):
        if to_compare is workload_ids:  # no first pass read them
            read += 1
        if rows:
            session.execute(insert(VersionRegression), [row | {"source_id": source_id} for row in rows])
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


def _first_pass(raw: list[RawRun]) -> WorkloadFigures:
    runs = _case_runs(raw)
    slowdowns = [s for *_, points in _version_lines(runs) if (s := worst_version_slowdown(points)) is not None]
    return WorkloadFigures(
        workload_id=raw[0][1],
        repeats=list(_repeat_deviations(runs)),
        across=list(_deviations(runs)),
        worst=max(slowdowns, default=None),
    )


def _second_pass(raw: list[RawRun], noise: float) -> list[dict[str, object]]:
    return list(_regression_rows(_case_runs(raw), noise))


def _compared(
    session: Session,
    source_id: int,
    workload_ids: Sequence[int] | None,
    compare: Callable[..., T],
    *args: object,
) -> Iterator[T]:
    """``compare(runs, *args)`` of each workload's eligible runs, in workload order: here, or in
    worker processes when the runs are many (``compare`` and ``args`` must then be picklable)."""
    groups = _raw_by_workload(session, source_id, workload_ids)
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if workers < 2 or _eligible_count(session, source_id, workload_ids) < PARALLEL_FROM:
        for raw in groups:
            yield compare(raw, *args)
        return
    tasks = _batched(groups, WORKLOADS_PER_TASK)
    pending: deque[tuple[list[list[RawRun]], Future[list[T]]]] = deque()
    try:
        # spawn: nothing of this process (its open store, its threads) is copied into the workers.
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for task in tasks:
                pending.append((task, pool.submit(_each, compare, task, args)))
                # Two tasks a worker in flight: all stay busy, and memory stays bounded.
                while len(pending) > 2 * workers or (pending and pending[0][1].done()):
                    yield from _first_done(pending)
            while pending:
                yield from _first_done(pending)
    except (BrokenProcessPool, OSError):
        # Workers that cannot start or died: what they had not returned is compared here.
        for task, _ in pending:
            yield from _each(compare, task, args)
        for task in tasks:
            yield from _each(compare, task, args)


def _first_done(pending: deque[tuple[list[list[RawRun]], Future[list[T]]]]) -> list[T]:
    """The oldest task's results, taken off ``pending`` only once they are in (a task whose worker
    died stays there, to be compared again)."""
    results = pending[0][1].result()
    pending.popleft()
    return results


def _each(compare: Callable[..., T], task: list[list[RawRun]], args: tuple[object, ...]) -> list[T]:
    return [compare(raw, *args) for raw in task]


def _batched(items: Iterator[list[RawRun]], size: int) -> Iterator[list[list[RawRun]]]:
    batch: list[list[RawRun]] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _eligible_count(session: Session, source_id: int, workload_ids: Sequence[int] | None) -> int:
    if workload_ids is None:
        query = select(func.count()).select_from(Run).where(Run.source_id == source_id, eligible())
        return session.scalar(query) or 0
    # A partial refresh is of the workloads one ingest changed: few enough to count here.
    return sum(
        session.scalar(
            select(func.count())
            .select_from(Run)
            .where(Run.source_id == source_id, eligible(), Run.workload_id.in_(chunk))
        )
        or 0
        for chunk in _chunks(sorted(set(workload_ids)))
    )


def _raw_by_workload(session: Session, source_id: int, workload_ids: Sequence[int] | None) -> Iterator[list[RawRun]]:
    """The source's eligible runs, one workload's at a time, as read (parsed by ``_case_runs``)."""
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
        current: list[RawRun] = []
        for row in session.execute(query):
            if current and current[0][1] != row.workload_id:
                yield current
                current = []
            current.append((row.id, row.workload_id, row.comparison_key, row.manifest_json, row.gpu_slug))
        if current:
            yield current


def _case_runs(raw: list[RawRun]) -> list[CaseRun]:
    """The runs that carry per-case results, with them."""
    runs = []
    for run_id, workload_id, comparison_key, manifest_json, gpu_slug in raw:
        cases = run_cases(manifest_json)
        if cases.latencies:
            runs.append(CaseRun(run_id, workload_id, comparison_key, gpu_slug, cases))
    return runs


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
