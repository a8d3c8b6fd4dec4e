"""Runs for the API: the filtered, sorted listing, one run in full, and runs to compare."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session, joinedload

from kernelindex import urls
from kernelindex.compare import ComparedRun
from kernelindex.db.tables import Environment, Implementation, Workload
from kernelindex.db.tables import Run as Run  # the run row that find_run returns, for its callers' annotations
from kernelindex.figures import Share
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.ranking import ineligibility_reasons, is_eligible
from kernelindex.store.common import (
    RankSpan,
    history,
    name_by_ref,
    rank_expression,
    rank_span_fields,
    rank_spans,
    source_ref,
)
from kernelindex.store.keyset import Expr, Position, SortKey, keyset_page
from kernelindex.store.manifests import manifest_document
from kernelindex.store.reads import eligible
from kernelindex.store.runs import (
    availability_text,
    bound_share,
    environment_label,
    run_facts,
    run_metrics,
    stack_text,
    with_references,
)
from kernelindex.store.schemas import (
    Availability,
    EnvironmentManifest,
    ImplementationManifest,
    ProtocolManifest,
    Review,
    RunDetail,
    RunItem,
    RunManifest,
    RunManifests,
    ShareOfBoundItem,
    Withdrawal,
    WorkloadManifest,
)

RUN_SORTS: dict[str, tuple[SortKey, ...]] = {
    "latency": (SortKey("latency", int), SortKey("name", str)),
    "-latency": (SortKey("latency", int, descending=True), SortKey("name", str)),
    "observed": (SortKey("observed", datetime), SortKey("name", str)),
    "-observed": (SortKey("observed", datetime, descending=True), SortKey("name", str)),
}


@dataclass(frozen=True)
class RunFilters:
    workload: str | None = None
    gpu: str | None = None
    implementation: str | None = None
    evidence: EvidenceLevel | None = None
    eligible: bool | None = None
    comparison_key: str | None = None


def _run_conditions(filters: RunFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.workload:
        conditions.append(Run.workload_id.in_(select(Workload.id).where(Workload.name == filters.workload)))
    if filters.gpu:
        conditions.append(
            Run.environment_id.in_(select(Environment.id).where(Environment.gpu_slug == filters.gpu.lower()))
        )
    if filters.implementation:
        conditions.append(
            Run.implementation_id.in_(
                select(Implementation.id).where(Implementation.project_slug == filters.implementation.lower())
            )
        )
    if filters.evidence:
        conditions.append(Run.evidence == filters.evidence)
    if filters.eligible is not None:
        conditions.append(eligible() if filters.eligible else ~eligible())
    if filters.comparison_key:
        conditions.append(Run.comparison_key == filters.comparison_key)
    return conditions


def list_runs(
    session: Session, filters: RunFilters, sort: str, after: Position | None, limit: int
) -> tuple[list[RunItem], Position | None]:
    stmt = with_references(select(Run)).where(*_run_conditions(filters))
    exprs: dict[str, Expr] = {"name": Run.name, "latency": Run.latency_ns, "observed": Run.observed_at}
    rows, position = keyset_page(session, stmt, RUN_SORTS[sort], exprs, after, limit)
    return [_run_item(row[0]) for row in rows], position


def run_fields(run: Run) -> dict[str, Any]:
    return {
        "name": run.name,
        "digest": run.digest,
        "status": run.status,
        "evidence": run.evidence,
        "eligible": is_eligible(run_facts(run)),
        "latency_ns": run.latency_ns,
        "primary_statistic": run.primary_statistic,
        "sol_score": run.sol_score,
        "share_of_bound": share_item(bound_share(run)),
        "observed_at": run.observed_at,
        "comparison_key": run.comparison_key,
        "workload": run.workload.name,
        "implementation": run.implementation.project_slug,
        "project": run.implementation.project,
        "revision": run.implementation.revision,
        "gpu": run.environment.gpu_slug,
        "environment": run.environment.name,
        "protocol": run.protocol.name,
        "url": urls.run(run.name),
        "api_url": urls.api_run(run.name),
    }


def share_item(share: Share | None) -> ShareOfBoundItem | None:
    """A share of a bound as the API gives it; None where no bound is known."""
    if share is None:
        return None
    return ShareOfBoundItem(percent=round(share.percent, 4), bound=share.bound.key, label=share.label)


def _run_item(run: Run) -> RunItem:
    return RunItem(**run_fields(run))


def find_run(session: Session, ref: str) -> Run | None:
    """By name, current digest or any earlier digest."""
    name = name_by_ref(session, Run, "BenchmarkRun", ref)
    if name is None:
        return None
    return session.scalar(
        with_references(select(Run).where(Run.name == name)).options(joinedload(Run.source)),
    )


@dataclass(frozen=True)
class RunStanding:
    """Where a run stands in its comparison group; ``rank`` and ``vs_best`` are ``None`` when it is not ranked."""

    rank: int | None
    vs_best: float | None
    group_size: int  # the eligible runs of its group
    reasons: list[str]  # why it is not ranked; empty when it is
    span: RankSpan | None = None  # its rank range and interval (``common.rank_spans``); None when not ranked


def run_standing(session: Session, run: Run) -> RunStanding:
    """The run's rank in its group by ``ranking.rank_group``, as its page and ``/api/v1/runs/{ref}``
    show it: one more than the eligible runs of the group strictly faster, counted by the database."""
    reasons = ineligibility_reasons(run_facts(run))
    same_group = (Run.workload_id == run.workload_id, Run.comparison_key == run.comparison_key, eligible())
    size, faster, best = session.execute(
        select(func.count(), func.count(case((Run.latency_ns < run.latency_ns, 1))), func.min(Run.latency_ns)).where(
            *same_group
        )
    ).one()
    if reasons:
        return RunStanding(None, None, size, reasons)
    return RunStanding(faster + 1, run.latency_ns / best, size, reasons, rank_spans(session, [run.name]).get(run.name))


def review_of(run: Run) -> Review | None:
    """The maintainers' decision on a run held for review; ``None`` until there is one."""
    if run.review_state is None or run.reviewed_at is None:
        return None
    return Review.model_validate({"state": run.review_state, "at": run.reviewed_at, "note": run.review_note})


def run_detail(session: Session, run: Run) -> RunDetail:
    standing = run_standing(session, run)
    implementation = run.implementation
    return RunDetail(
        **run_fields(run),
        rank=standing.rank,
        **rank_span_fields(standing.span),
        group_size=standing.group_size,
        vs_best=standing.vs_best,
        ineligibility_reasons=standing.reasons,
        held_for_review=run.held_for_review,
        review=review_of(run),
        disqualified_upstream=(run.upstream_withdrawn_reason or "no reason given") if run.upstream_withdrawn else None,
        withdrawn=Withdrawal(at=run.withdrawn_at, reason=run.withdrawn_reason) if run.withdrawn_at else None,
        missing_since=run.missing_since,
        metrics=run_metrics(run),
        availability=Availability(
            license=implementation.license,
            source_available=implementation.source_available,
            install_recipe=implementation.has_install_recipe,
            text=availability_text(
                implementation.license, implementation.source_available, implementation.has_install_recipe
            ),
        ),
        source=source_ref(run.source) if run.source else None,
        external_id=run.external_id,
        manifests=RunManifests(
            run=RunManifest(digest=run.digest, manifest=manifest_document(run)),
            workload=WorkloadManifest(digest=run.workload.digest, manifest=manifest_document(run.workload)),
            implementation=ImplementationManifest(
                digest=implementation.digest, manifest=manifest_document(implementation)
            ),
            protocol=ProtocolManifest(digest=run.protocol.digest, manifest=manifest_document(run.protocol)),
            environment=EnvironmentManifest(digest=run.environment.digest, manifest=manifest_document(run.environment)),
        ),
        history=history(session, "BenchmarkRun", run.name),
    )


def runs_to_compare(session: Session, names: Sequence[str]) -> tuple[list[ComparedRun], list[str]]:
    """The runs named, in the order given, as ``ComparedRun`` facts; and the names not found."""
    rank = rank_expression().label("rank")
    rows = session.execute(with_references(select(Run, rank)).where(Run.name.in_(list(names)))).all()
    found = {run.name: (run, value) for run, value in rows}
    missing = [name for name in names if name not in found]
    spans = rank_spans(session, list(found))
    compared = []
    for name in names:
        if name not in found:
            continue
        run, rank_value = found[name]
        metrics = run_metrics(run)
        environment, protocol, implementation = run.environment, run.protocol, run.implementation
        facts = run_facts(run)
        compared.append(
            ComparedRun(
                name=run.name,
                digest=run.digest,
                comparison_key=run.comparison_key,
                status=run.status,
                evidence=run.evidence,
                availability=availability_text(
                    implementation.license, implementation.source_available, implementation.has_install_recipe
                ),
                latency_ns=run.latency_ns,
                primary_statistic=run.primary_statistic,
                sol_score=run.sol_score,
                share_of_bound=bound_share(run),
                avg_speedup=_number(metrics.get("avg_speedup")),
                fast_count=_count(metrics.get("fast_1_count")),
                fast_total=_count(metrics.get("fast_1_total")),
                observed_at=run.observed_at,
                rank=rank_value if is_eligible(facts) else None,
                uncertainty=facts.uncertainty,
                rank_range=spans[name].rank_range if is_eligible(facts) and name in spans else None,
                workload_slug=run.workload.name,
                workload_title=run.workload.title,
                workload_digest=run.workload.digest,
                project=implementation.project,
                project_slug=implementation.project_slug,
                revision=implementation.revision,
                protocol_name=protocol.name,
                protocol_title=protocol.title,
                protocol_family=protocol.family,
                harness_name=protocol.harness_name,
                harness_version=protocol.harness_version,
                protocol_digest=protocol.digest,
                environment_name=environment.name,
                environment_title=environment.title,
                environment_label=environment_label(environment),
                gpu_product=environment.gpu_product,
                gpu_slug=environment.gpu_slug,
                stack=stack_text(environment),
                environment_digest=environment.digest,
                withdrawn=facts.withdrawn,
                upstream_withdrawn=facts.upstream_withdrawn,
                held_for_review=facts.held_for_review,
            )
        )
    return compared, missing


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
