"""A workload's leaderboard: its comparison groups, their ranks, records and headline (PRODUCT.md §5–6).

``/workloads/{slug}``, its JSON twin, its citation and ``/api/v1/workloads/{ref}`` all read
``leaderboard``; the rules it applies are the pure functions of ``kernelindex.ranking``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cached_property

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Run, Source, Workload
from kernelindex.manifests import WorkloadSuite
from kernelindex.ranking import (
    RankedRun,
    RecordBreak,
    current_record,
    default_group,
    fastest_reported,
    rank_group,
    record_history,
)
from kernelindex.store.common import history, source_ref
from kernelindex.store.completeness import workload_completeness
from kernelindex.store.cross_gpu import cross_gpu_view
from kernelindex.store.manifests import manifest_document, workload_manifest
from kernelindex.store.reruns import RerunBounds, newest_rerun_bounds
from kernelindex.store.revisions import workload_revisions
from kernelindex.store.runs import RunView, runs_of_workload
from kernelindex.store.schemas import ComparisonGroupItem, GroupBest, WorkloadDetail, WorkloadManifest
from kernelindex.store.workloads import workload_items


@dataclass(frozen=True)
class GroupStanding:
    """One comparison group of a workload: its runs (fastest first), ranks and record history."""

    key: str
    runs: list[RunView]
    ranked: list[RankedRun]
    history: list[RecordBreak]

    @property
    def sample(self) -> RunView:
        """Any run of the group: they share workload, protocol and environment."""
        return self.runs[0]

    @property
    def record(self) -> RunView | None:
        """The run that holds the group's record now (its #1)."""
        best = current_record(self.ranked)
        return self.view(best.run.name) if best else None

    def view(self, name: str) -> RunView:
        return next(view for view in self.runs if view.name == name)


@dataclass(frozen=True)
class Leaderboard:
    workload: Workload
    manifest: WorkloadSuite  # the workload's current manifest
    runs: list[RunView]
    groups: list[GroupStanding]
    fastest: RunView | None  # the headline: ``ranking.fastest_reported``
    default_key: str | None  # the group it opens on: ``ranking.default_group``
    sources: list[Source]
    rerun_bounds: RerunBounds | None

    def group(self, key: str | None) -> GroupStanding | None:
        return next((group for group in self.groups if group.key == key), None)

    @cached_property
    def rank_of(self) -> dict[str, RankedRun]:
        return {entry.run.name: entry for group in self.groups for entry in group.ranked}


def runs_as_of(views: Sequence[RunView], cutoff: datetime) -> list[RunView]:
    """The runs a leaderboard held just before ``cutoff``: those observed by then, with a
    maintainer's withdrawal made later not yet applied. Disqualification by the source and
    holds for review carry no date, so they apply as recorded now."""
    held = []
    for view in views:
        if view.observed_at >= cutoff:
            continue
        if view.withdrawn_at is not None and view.withdrawn_at >= cutoff:
            view = replace(view, withdrawn_at=None, withdrawn_reason=None)
        held.append(view)
    return held


def leaderboard(session: Session, workload: Workload, before: datetime | None = None) -> Leaderboard:
    """The leaderboard of ``workload`` now, or as it stood just before ``before``."""
    views = runs_of_workload(session, workload.id)
    if before is not None:
        views = runs_as_of(views, before)
    by_key: dict[str, list[RunView]] = {}
    for view in views:
        by_key.setdefault(view.comparison_key, []).append(view)
    groups = [
        GroupStanding(
            key=key,
            runs=members,
            ranked=rank_group(view.facts for view in members),
            history=record_history(view.facts for view in members),
        )
        for key, members in by_key.items()
    ]
    facts = [view.facts for view in views]
    headline = fastest_reported(facts)
    measured_by = select(Run.source_id).where(Run.workload_id == workload.id).distinct()
    sources = session.scalars(
        select(Source).where((Source.id == workload.source_id) | Source.id.in_(measured_by)).order_by(Source.id)
    )
    return Leaderboard(
        workload=workload,
        manifest=workload_manifest(workload),
        runs=views,
        groups=groups,
        fastest=next(view for view in views if view.name == headline.name) if headline else None,
        default_key=default_group(facts),
        sources=list(sources),
        rerun_bounds=newest_rerun_bounds(session, workload.id),
    )


def _group_best(view: RunView) -> GroupBest:
    return GroupBest(
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
            stack=group.sample.software,
            protocol=group.sample.protocol_name,
            protocol_title=group.sample.protocol_title,
            runs=len(group.runs),
            eligible_runs=len(group.ranked),
            best=_group_best(record) if (record := group.record) else None,
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
