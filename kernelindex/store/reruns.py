"""Writing controlled reruns, and deriving ``verified``, ``reproduced`` and ``replicated``.

A bundle is written whole or not at all, inside the caller's transaction: its suite run
(an ordinary ``run`` row, so it ranks and cites like any other), its case runs, and the
bundle itself. Evidence is derived, never taken from the bundle (``ranking.rerun_evidence``
states the rule): every rerun is ``verified``; another agreeing rerun of the same
implementation in the same comparison group makes it ``reproduced`` when it shares the
operator, ``replicated`` when a different approved operator signed it on another GPU.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.rerun_tables import RerunBundle, RerunCase, RerunResult
from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Workload
from kernelindex.manifests import Manifest
from kernelindex.manifests.digest import comparison_key
from kernelindex.manifests.types import EvidenceLevel, RunStatus
from kernelindex.ranking import CaseFigure, RerunFacts, independent, rerun_agreements, rerun_evidence
from kernelindex.rerun import protocol as rerun_protocol
from kernelindex.rerun.bundle import BundleError
from kernelindex.rerun.cases import Case
from kernelindex.store.batch import RerunRecord, SourceInfo
from kernelindex.store.ingest import ensure_source, environment_columns, implementation_columns, protocol_columns
from kernelindex.store.manifests import Row, existing_by_name, put
from kernelindex.store.spreads import spread_columns
from kernelindex.uncertainty import figure_uncertainty, suite_uncertainty

__all__ = [
    "RERUN_PROTOCOL_NAME",
    "RERUN_SOURCE",
    "RerunAgreements",
    "RerunBounds",
    "RerunResult",
    "RerunWorkload",
    "StoredBundle",
    "agreements_of_run",
    "bundle_text",
    "derive_rerun_evidence",
    "newest_rerun_bounds",
    "record_operator",
    "rerun_of_run",
    "rerun_workload",
    "stored_bundle",
    "write_rerun",
]

RERUN_SOURCE = SourceInfo(
    slug="kernelindex-reruns",
    name="KernelIndex controlled reruns",
    url="/protocols/kernelindex-rerun-v1",
    description=(
        "Measurements made by KernelIndex's own runner on a GPU it controls, under the published "
        "KernelIndex rerun protocol: open implementations, correctness against a float64 reference, "
        "CUDA-event timing with a cold L2, every raw sample kept, each bundle signed with the runner's "
        "Ed25519 key."
    ),
    licence="Measurements: CC-BY-4.0. Implementations measured: Apache-2.0 (source in the registry).",
    attribution="Data: KernelIndex controlled reruns, CC-BY-4.0.",
    gpu_naming="the device the runner measured on, as the CUDA driver named it, in the signed bundle",
)

RERUN_PROTOCOL_NAME = f"{rerun_protocol.PROTOCOL_NAME}-v{rerun_protocol.PROTOCOL_VERSION}"


@dataclass(frozen=True)
class StoredBundle:
    """A bundle imported before: the digest of its file, the suite run it became and its comparison group."""

    file_sha256: str
    run_name: str | None
    group_key: str | None = None


@dataclass(frozen=True)
class RerunWorkload:
    """The registry's workload a bundle names, with its cases in order."""

    id: int
    name: str
    digest: str
    cases: list[Case]
    # The sha256 of the reference program, where the workload is defined by one (KernelBench).
    reference_sha256: str | None = None


def stored_bundle(session: Session, bundle_id: str) -> StoredBundle | None:
    existing = session.scalar(select(RerunBundle).where(RerunBundle.bundle_id == bundle_id))
    if existing is None:
        return None
    result = session.scalar(select(RerunResult).where(RerunResult.bundle_id == existing.id))
    if result is None:
        return StoredBundle(existing.file_sha256, None)
    return StoredBundle(existing.file_sha256, result.run.name, result.run.comparison_key)


def _known(session: Session) -> dict[tuple[str, str], Any]:
    """Rows and workloads this session has already read or written for reruns, by (what, name):
    the hundreds of bundles of one import share a source, a protocol, a few environments and
    workloads, and looking each up again per bundle was a third of a first start's rerun import.
    Kept in ``session.info`` for the innermost transaction only: after a commit, or a rollback of it
    or of a savepoint, nothing read before is trusted."""
    transaction = session.get_nested_transaction() or session.get_transaction()
    held = session.info.get("kernelindex.reruns.known")
    if held is None or held[0] is not transaction:
        held = session.info["kernelindex.reruns.known"] = (transaction, {})
    known: dict[tuple[str, str], Any] = held[1]
    return known


def rerun_workload(session: Session, name: str) -> RerunWorkload | None:
    known = _known(session)
    if ("workload", name) in known:
        found: RerunWorkload = known["workload", name]
        return found
    workload = session.scalar(select(Workload).where(Workload.name == name))
    if workload is None:
        return None
    cases = [Case(index=case.position, axes=case.axes) for case in workload.cases]
    reference = json.loads(workload.manifest_json)["spec"]["definition"].get("reference") or {}
    found = RerunWorkload(workload.id, workload.name, workload.digest, cases, reference.get("sha256"))
    known["workload", name] = found
    return found


def write_rerun(
    session: Session, record: RerunRecord, workload: RerunWorkload, now: datetime, *, derive: bool = True
) -> Run:
    """Write one mapped bundle filed under ``workload``; returns its suite run.

    The caller has checked that the bundle is new and that its cases are the workload's. With
    ``derive`` False the group's evidence is left for the caller to derive (``derive_rerun_evidence``),
    once for many bundles of a group.
    """
    known = _known(session)
    source = known.get(("source", RERUN_SOURCE.slug))
    if source is None:
        source = known["source", RERUN_SOURCE.slug] = ensure_source(session, RERUN_SOURCE)
    if source.last_observed_at is None or source.last_observed_at < record.finished_at:
        source.last_observed_at = record.finished_at
    run = _write_suite_run(session, record, workload, source.id, now)
    stored = RerunBundle(
        bundle_id=record.bundle_id,
        key_id=record.key_id,
        operator=record.operator,
        session_id=record.session_id,
        file_sha256=record.file_sha256,
        machine_id=record.machine_id,
        started_at=record.started_at,
        finished_at=record.finished_at,
        imported_at=now,
        bundle_json=record.bundle_json,
    )
    # Rows are linked by relationship, not id, so that nothing needs a flush here: an import writing
    # many bundles in one transaction (``ingest.reruns.importer``) flushes them together, a multi-row INSERT
    # per table.
    result = RerunResult(
        run=run,
        bundle=stored,
        bound_ns=record.bound_ns,
        achievable_bound_ns=record.achievable_bound_ns,
        cases_passed=record.cases_passed,
        case_count=record.case_count,
    )
    session.add_all([stored, result])
    for case in record.cases:
        columns = {
            "position": case.position,
            "bound_ns": case.bound_ns,
            "achievable_bound_ns": case.achievable_bound_ns,
        }
        row, _ = put(session, RerunCase, case.manifest, columns, None, now)
        result.cases.append(row)
    if derive:
        session.flush()
        derive_rerun_evidence(session, run.comparison_key)
    return run


def _write_suite_run(
    session: Session, record: RerunRecord, workload: RerunWorkload, source_id: int, now: datetime
) -> Run:
    protocol = _put_reference(session, Protocol, record.protocol, protocol_columns(record.protocol), now)
    environment = _put_reference(session, Environment, record.environment, environment_columns(record.environment), now)
    implementation = _put_reference(
        session, Implementation, record.implementation, implementation_columns(record.implementation), now
    )
    manifest = record.suite_run
    if existing_by_name(session, Run, [manifest.metadata.name]):
        raise BundleError(f"a run named {manifest.metadata.name} already exists")
    latency = manifest.spec.timing.latency_ns["median"]
    # The suite median's interval: the geometric means of the cases' bootstrap intervals.
    cases = [figure_uncertainty(case.manifest.spec.timing.latency_ns, "median") for case in record.cases]
    spread = suite_uncertainty(cases, latency)
    run, _ = put(
        session,
        Run,
        manifest,
        {
            "source_id": source_id,
            "external_id": record.bundle_id,
            "workload_id": workload.id,
            # By relationship: a new implementation, protocol or environment has no id before a flush.
            "implementation": implementation,
            "protocol": protocol,
            "environment": environment,
            "comparison_key": comparison_key(workload.digest, protocol.digest, environment.digest),
            "status": manifest.spec.status,
            "evidence": EvidenceLevel.VERIFIED,
            "primary_statistic": "median",
            "latency_ns": latency,
            **spread_columns(spread),
            "sol_score": None,
            "observed_at": manifest.spec.observed_at,
            "upstream_withdrawn": False,
            "upstream_withdrawn_reason": None,
            # Faster than the datasheet speed of light is physically impossible, like beating SOL upstream.
            "held_for_review": record.bound_ns > 0 and latency < record.bound_ns,
            "missing_since": None,
            "last_seen_at": None,
        },
        None,
        now,
    )
    return run


def _put_reference(
    session: Session, table: type[Row], manifest: Manifest, columns: dict[str, Any], now: datetime
) -> Row:
    known, key = _known(session), (table.__name__, manifest.metadata.name)
    current = known.get(key)
    if current is None:
        current = existing_by_name(session, table, [manifest.metadata.name]).get(manifest.metadata.name)
    if current is not None and current.digest != manifest.digest:
        # A new version (an implementation at a new revision): its earlier one must be in the
        # database before ``put`` marks it superseded.
        session.flush()
    row, _ = put(session, table, manifest, columns, current, now)
    known[key] = row
    return row


def record_operator(session: Session, bundle_id: str, operator: str) -> None:
    """Record the operator of a bundle stored before its key's operator was stated, and derive its
    group's evidence again; a bundle whose operator is already recorded is left as it is."""
    stored = session.scalar(select(RerunBundle).where(RerunBundle.bundle_id == bundle_id))
    if stored is None or stored.operator is not None:
        return
    stored.operator = operator
    group = session.scalar(
        select(Run.comparison_key)
        .join(RerunResult, RerunResult.run_id == Run.id)
        .where(RerunResult.bundle_id == stored.id)
    )
    session.flush()
    if group is not None:
        derive_rerun_evidence(session, group)


def derive_rerun_evidence(session: Session, *group_keys: str) -> None:
    """Set ``verified``, ``reproduced`` or ``replicated`` on every rerun of the comparison groups named
    (many at once after an import: two queries in all rather than two per group)."""
    if not group_keys:
        return
    for reruns in _facts_by_implementation(session, group_keys).values():
        others = [facts for _, facts in reruns]
        for run, facts in reruns:
            evidence = rerun_evidence(facts, others)
            if run.evidence != evidence:
                run.evidence = evidence


@dataclass(frozen=True)
class RerunAgreements:
    """The reruns (names) that agree with one: on another physical GPU (those of them by another
    approved operator, under another key, also in ``replicated_by``), or on the same GPU again."""

    reproduced_by: list[str]
    repeated_on_same_gpu: list[str]
    replicated_by: list[str] = field(default_factory=list)


def agreements_of_run(session: Session, run: Run) -> RerunAgreements:
    """Which reruns of the same implementation and comparison group agree with ``run`` (a rerun), split
    by whether they measured another GPU (``ranking.rerun_agreements``)."""
    reruns = _facts_by_implementation(session, (run.comparison_key,)).get((run.comparison_key, run.implementation_id))
    mine = next((facts for other, facts in reruns or [] if other.id == run.id), None)
    if reruns is None or mine is None:
        return RerunAgreements([], [])
    names = {other.id: other.name for other, _ in reruns}
    facts_of = {other.id: facts for other, facts in reruns}
    found = rerun_agreements(mine, [facts for _, facts in reruns])
    # Of those on another GPU, the ones by another operator: what makes a run "Independently replicated".
    replicated = [i for i in found.reproduced_by if independent(mine, facts_of[i])]
    return RerunAgreements(
        sorted(names[i] for i in found.reproduced_by),
        sorted(names[i] for i in found.repeated_by),
        sorted(names[i] for i in replicated),
    )


def _facts_by_implementation(
    session: Session, group_keys: tuple[str, ...]
) -> dict[tuple[str, int], list[tuple[Run, RerunFacts]]]:
    """The reruns of the groups, each with what evidence is derived from, by (group, implementation)."""
    rows = session.execute(
        select(
            Run,
            RerunResult.id,
            RerunBundle.operator,
            RerunBundle.key_id,
            RerunBundle.machine_id,
            RerunBundle.session_id,
        )
        .join(RerunResult, RerunResult.run_id == Run.id)
        .join(RerunBundle, RerunBundle.id == RerunResult.bundle_id)
        .where(Run.comparison_key.in_(group_keys))
    ).all()
    cases = _case_figures(session, [row[1] for row in rows])
    # A rerun is compared with the others of its implementation in its own group.
    by_implementation: dict[tuple[str, int], list[tuple[Run, RerunFacts]]] = defaultdict(list)
    for run, result_id, operator, key_id, machine, session_id in rows:
        facts = RerunFacts(
            run_id=run.id,
            operator=operator,
            key_id=key_id,
            machine_id=machine,
            session_id=session_id,
            latency_ns=run.latency_ns,
            cases=tuple(cases.get(result_id, [])),
            counts=run.status == RunStatus.PASSED and run.withdrawn_at is None,
        )
        by_implementation[run.comparison_key, run.implementation_id].append((run, facts))
    return by_implementation


def _case_figures(session: Session, result_ids: list[int]) -> dict[int, list[CaseFigure]]:
    """Each result's cases in order: the median and, where the case run states one, its interval."""
    figures: dict[int, list[CaseFigure]] = defaultdict(list)
    rows = session.execute(
        select(RerunCase.result_id, RerunCase.manifest_json)
        .where(RerunCase.result_id.in_(result_ids))
        .order_by(RerunCase.result_id, RerunCase.position)
    )
    for result_id, manifest_json in rows:
        latency = json.loads(manifest_json)["spec"]["timing"]["latencyNs"]
        low, high = latency.get("median_ci_low"), latency.get("median_ci_high")
        interval = (low, high) if low is not None and high is not None else None
        figures[result_id].append(CaseFigure(latency["median"], interval))
    return figures


@dataclass(frozen=True)
class RerunBounds:
    """Per-case bounds of a workload from its newest rerun, and the GPU they are for: the speed of
    light from datasheet peaks (0 where not known) and the achievable bound at measured ceilings."""

    gpu: str
    by_position: dict[int, int]
    achievable_by_position: dict[int, int]


def newest_rerun_bounds(session: Session, workload_id: int) -> RerunBounds | None:
    newest = session.execute(
        select(RerunResult.id, Environment.gpu_product)
        .join(Run, Run.id == RerunResult.run_id)
        .join(Environment, Environment.id == Run.environment_id)
        .join(RerunBundle, RerunBundle.id == RerunResult.bundle_id)
        .where(Run.workload_id == workload_id)
        .order_by(RerunBundle.finished_at.desc(), RerunResult.id.desc())
        .limit(1)
    ).first()
    if newest is None:
        return None
    rows = session.execute(
        select(RerunCase.position, RerunCase.bound_ns, RerunCase.achievable_bound_ns).where(
            RerunCase.result_id == newest.id
        )
    ).all()
    return RerunBounds(
        gpu=newest.gpu_product,
        by_position={position: sol for position, sol, _ in rows},
        achievable_by_position={position: achievable for position, _, achievable in rows},
    )


def bundle_text(session: Session, bundle_id: str) -> str | None:
    return session.scalar(select(RerunBundle.bundle_json).where(RerunBundle.bundle_id == bundle_id))


def rerun_of_run(session: Session, run_id: int) -> RerunResult | None:
    return session.scalar(
        select(RerunResult)
        .where(RerunResult.run_id == run_id)
        .options(joinedload(RerunResult.bundle), joinedload(RerunResult.cases))
    )
