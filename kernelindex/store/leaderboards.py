"""A workload's leaderboard: its comparison groups, their ranks, records and headline (PRODUCT.md §5–6).

``/workloads/{slug}``, its JSON twin, its citation and ``/api/v1/workloads/{ref}`` all read
``leaderboard``; the rules it applies are the pure functions of ``kernelindex.ranking``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Implementation, Run, Source, Workload
from kernelindex.manifests import WorkloadSuite
from kernelindex.ranking import (
    RankedRun,
    RecordBreak,
    RunFacts,
    fastest_reported,
    is_eligible,
    opening_group,
    rank_implementation_bests,
)
from kernelindex.store.common import history, rank_spans, source_ref
from kernelindex.store.completeness import workload_completeness
from kernelindex.store.cross_gpu import cross_gpu_view
from kernelindex.store.manifests import manifest_document, workload_manifest
from kernelindex.store.reruns import RerunBounds, newest_rerun_bounds
from kernelindex.store.revisions import workload_revisions
from kernelindex.store.runs import RunView, implementation_identity, implementations_by_id, run_views
from kernelindex.store.schemas import (
    ComparisonGroupItem,
    GroupBest,
    UncertaintyItem,
    WorkloadDetail,
    WorkloadManifest,
)
from kernelindex.store.standings import (
    Scope,
    group_counts,
    group_ranges,
    ranked_page,
    record_setters,
    revision_bests,
)
from kernelindex.store.workloads import workload_items

# What runs a workload's reference as written, in each source's terms, most preferred first:
# KernelBench's eager PyTorch, the reruns' eager PyTorch, Liger-Kernel's Hugging Face and then
# plain PyTorch providers. A speed-up is measured against the first of these a group holds.
BASELINES: tuple[Callable[[Implementation], bool], ...] = (
    lambda implementation: implementation.name == "pytorch-eager",
    lambda implementation: implementation.project == "KernelIndex PyTorch eager",
    lambda implementation: implementation.name == "liger-kernel-huggingface",
    lambda implementation: implementation.name == "liger-kernel-torch",
)


@dataclass(frozen=True)
class GroupStanding:
    """One comparison group of a workload: how many runs it holds and which holds its record."""

    key: str
    run_count: int
    eligible_count: int
    last_observed_at: datetime
    sample: RunView  # any run of the group: they share workload, protocol and environment
    record: RunView | None  # the run that holds the group's record now (its #1)
    # How many other ranked runs the #1 is not distinct from (``uncertainty.tied_with_best``): 0
    # where #1 is distinct from #2.
    tied_with_best: int = 0


@dataclass(frozen=True)
class Leaderboard:
    workload: Workload
    manifest: WorkloadSuite  # the workload's current manifest
    scope: Scope
    groups: list[GroupStanding]
    fastest: RunView | None  # the headline: ``ranking.fastest_reported``, the #1 of its group
    default_key: str | None  # the group it opens on: ``ranking.default_group``
    sources: list[Source]
    rerun_bounds: RerunBounds | None

    def group(self, key: str | None) -> GroupStanding | None:
        return next((group for group in self.groups if group.key == key), None)

    @property
    def run_count(self) -> int:
        return sum(group.run_count for group in self.groups)

    @property
    def eligible_count(self) -> int:
        return sum(group.eligible_count for group in self.groups)


def leaderboard(session: Session, workload: Workload, before: datetime | None = None) -> Leaderboard:
    """The leaderboard of ``workload`` now, or as it stood just before ``before``: every group's
    figures from the database, with only each group's record (or one of its runs) loaded in full."""
    scope = Scope(workload.id, before)
    counts = group_counts(session, scope)
    shown = [count.first for count in counts]
    views = {view.name: view for view in run_views(session, *scope.runs(), Run.name.in_(sorted(shown)))}
    # Each group's #1 and how many runs it is tied with: counted by the database, through its indexes.
    spans = rank_spans(session, [count.first for count in counts if count.eligible_runs], before)
    groups = [
        GroupStanding(
            key=count.size.key,
            run_count=count.size.runs,
            eligible_count=count.eligible_runs,
            last_observed_at=count.size.last_observed_at,
            sample=views[count.first],
            record=views[count.first] if count.eligible_runs else None,
            tied_with_best=spans[count.first].rank_range[1] - 1 if count.first in spans else 0,
        )
        for count in counts
    ]
    # Facts as the scope stood: a record holder withdrawn since then was eligible then.
    headline = fastest_reported(
        RunFacts(view.name, view.comparison_key, view.latency_ns, view.observed_at)
        for group in groups
        if (view := group.record)
    )
    measured_by = select(Run.source_id).where(Run.workload_id == workload.id).distinct()
    sources = session.scalars(
        select(Source).where((Source.id == workload.source_id) | Source.id.in_(measured_by)).order_by(Source.id)
    )
    return Leaderboard(
        workload=workload,
        manifest=workload_manifest(workload),
        scope=scope,
        groups=groups,
        fastest=views[headline.name] if headline else None,
        default_key=opening_group(headline, [count.size for count in counts]),
        sources=list(sources),
        rerun_bounds=newest_rerun_bounds(session, workload.id),
    )


@dataclass(frozen=True)
class RevisionLine:
    """One implementation revision in one group: its fastest eligible run and how many of its runs are
    eligible there; ``best.implementation`` is the implementation across its revisions."""

    implementation_id: int
    project: str
    best: RunFacts
    sol_score: float | None  # of ``best``
    ranked_runs: int


@dataclass(frozen=True)
class GroupDetail:
    """What a leaderboard page shows of its selected group beyond the ranked runs: each
    implementation's best, the runs not ranked, the record history and the baseline."""

    standing: GroupStanding
    revisions: list[RevisionLine]  # fastest first
    # Each implementation's fastest run ranked among implementations, with its ranked runs' count.
    implementations: list[tuple[RankedRun, int]]
    ineligible: list[RunView]  # fastest first
    history: list[RecordBreak]
    baseline: RunView | None  # the fastest ranked run of the group's baseline implementation (``BASELINES``)
    # Loaded runs by name: the ineligible, the record setters and the baseline; an implementation's
    # best once ``load_views`` has read it (a group may have hundreds: a page reads those it shows).
    views: dict[str, RunView]

    def view(self, name: str) -> RunView:
        return self.views[name]

    def line(self, name: str) -> RevisionLine:
        """The revision whose best run is ``name`` (each of ``implementations`` is one)."""
        return self._lines[name]

    @cached_property
    def _lines(self) -> dict[str, RevisionLine]:
        return {line.best.name: line for line in self.revisions}


def load_views(session: Session, board: Leaderboard, detail: GroupDetail, names: Iterable[str]) -> None:
    """Read the runs of ``names`` that ``detail`` has not loaded yet, in one statement."""
    missing = sorted(set(names) - detail.views.keys())
    if missing:
        found = run_views(session, *board.scope.runs(), Run.name.in_(missing))
        detail.views.update((view.name, view) for view in found)


def group_detail(session: Session, board: Leaderboard, standing: GroupStanding, lines_read: int) -> GroupDetail:
    """Load what the page of ``standing`` shows besides its ranked runs, with the best runs of its
    ``lines_read`` fastest implementations (``load_views`` reads others)."""
    scope = board.scope
    bests = revision_bests(session, scope, standing.key)
    implementations = implementations_by_id(session, {best.implementation_id for best in bests})
    revisions = [
        RevisionLine(
            implementation_id=best.implementation_id,
            project=implementations[best.implementation_id].project,
            best=RunFacts(
                name=best.name,
                comparison_key=best.comparison_key,
                latency_ns=best.latency_ns,
                observed_at=best.observed_at,
                implementation=implementation_identity(implementations[best.implementation_id]),
                uncertainty=best.uncertainty,
            ),
            sol_score=best.sol_score,
            ranked_runs=best.ranked_runs,
        )
        for best in bests
    ]
    # The baseline is the fastest ranked run of the first baseline implementation the group holds.
    baseline = next(
        (
            line.best.name
            for is_baseline in BASELINES
            for line in revisions
            if is_baseline(implementations[line.implementation_id])
        ),
        None,
    )
    setters = record_setters(session, scope, standing.key)
    lines = rank_implementation_bests((line.best, line.ranked_runs) for line in revisions)
    names = {entry.run.name for entry, _ in lines[:lines_read]} | {setter.name for setter in setters} | {baseline}
    names.discard(None)
    shown = run_views(
        session, *scope.runs(), Run.comparison_key == standing.key, ~scope.eligible() | Run.name.in_(sorted(names))
    )
    views = {view.name: view for view in shown}
    ineligible = [view for view in shown if not is_eligible(view.facts)]
    history: list[RecordBreak] = []
    for setter in setters:
        facts = RunFacts(setter.name, standing.key, setter.latency_ns, setter.observed_at)
        history.append(RecordBreak(run=facts, previous=history[-1].run if history else None))
    return GroupDetail(
        standing=standing,
        revisions=revisions,
        implementations=lines,
        ineligible=ineligible,
        history=history,
        baseline=views[baseline] if baseline else None,
        views=views,
    )


@dataclass(frozen=True)
class RankedRows:
    """A page of a group's ranked table, how many rows the whole table has and its middle latency."""

    rows: list[tuple[RunView, RankedRun]]
    total: int
    median_latency_ns: float | None


def ranked_rows(
    session: Session,
    board: Leaderboard,
    standing: GroupStanding,
    implementation_ids: Collection[int] | None,
    sort: str,
    offset: int,
    limit: int,
    implementation_position: Mapping[int, int] | None = None,
) -> RankedRows:
    """Every ranked run of a group as a table (``standings.ranked_page``): one page of it loaded."""
    found = ranked_page(
        session, board.scope, standing.key, implementation_ids, sort, offset, limit, implementation_position
    )
    names = [name for name, _ in found.entries]
    views = {view.name: view for view in run_views(session, *board.scope.runs(), Run.name.in_(names))}
    # Ranges need every ranked run's interval, not only the page's: one narrow read of the group.
    ranges = group_ranges(session, board.scope, standing.key)
    best = standing.record.latency_ns if standing.record else 1
    rows = [
        (
            views[name],
            RankedRun(
                run=views[name].facts,
                rank=rank,
                vs_best=views[name].latency_ns / best,
                rank_range=ranges[name].rank_range,
                distinct_from_best=ranges[name].distinct_from_best,
                rank_text=ranges[name].rank_text,
            ),
        )
        for name, rank in found.entries
    ]
    return RankedRows(rows=rows, total=found.total, median_latency_ns=found.median_latency_ns)


def _group_best(view: RunView, tied: int) -> GroupBest:
    found = view.uncertainty
    return GroupBest(
        rank_range=[1, 1 + tied],
        tied_with=tied,
        uncertainty=None if found is None else UncertaintyItem(kind=found.kind, low=found.low_ns, high=found.high_ns),
        run=view.name,
        latency_ns=view.latency_ns,
        primary_statistic=view.primary_statistic,
        sol_score=view.sol_score,
        implementation=view.project_slug,
        project=view.project,
        observed_at=view.observed_at,
    )


def workload_detail(session: Session, workload: Workload) -> WorkloadDetail:
    """``/api/v1/workloads/{ref}``: the workload's figures and its leaderboard's groups, fastest first."""
    board = leaderboard(session, workload)
    item = workload_items(session, [workload])[0]
    groups = [
        ComparisonGroupItem(
            comparison_key=group.key,
            gpu=group.sample.gpu_slug,
            gpu_product=group.sample.gpu_product,
            environment=group.sample.environment_name,
            environment_title=group.sample.environment_title,
            environment_label=group.sample.environment_label,
            stack=group.sample.software,
            protocol=group.sample.protocol_name,
            protocol_title=group.sample.protocol_title,
            runs=group.run_count,
            eligible_runs=group.eligible_count,
            best=_group_best(record, group.tied_with_best) if (record := group.record) else None,
            runs_url=urls.api_runs(workload=workload.name, comparison_key=group.key),
        )
        for group in board.groups
    ]
    groups.sort(key=lambda g: (g.best is None, g.best.latency_ns if g.best else 0, g.environment, g.protocol))
    return WorkloadDetail(
        **item.model_dump(),
        description=workload.description,
        sol_aggregate_ms=workload.sol_aggregate_ms,
        source=source_ref(workload.source),
        external_id=workload.external_id,
        missing_since=workload.missing_since,
        groups=groups,
        default_group=board.default_key,
        manifest=WorkloadManifest(digest=workload.digest, manifest=manifest_document(workload)),
        history=history(session, "WorkloadSuite", workload.name),
        cross_gpu=cross_gpu_view(session, workload),
        revisions=workload_revisions(session, workload),
        completeness=workload_completeness(session, workload),
    )


def workload_by_slug(session: Session, slug: str) -> Workload | None:
    return session.scalar(select(Workload).where(Workload.name == slug))
