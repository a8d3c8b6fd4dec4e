"""Writing controlled reruns, and deriving ``verified`` and ``replicated`` from them.

A bundle is written whole or not at all, inside the caller's transaction: its suite run
(an ordinary ``run`` row, so it ranks and cites like any other), its case runs, and the
bundle itself. Evidence is derived, never taken from the bundle: every rerun is
``verified``; a rerun becomes ``replicated`` when another rerun of the same
implementation in the same comparison group, signed by a different runner key on a
different GPU (by its UUID), agrees with it within the protocol's noise bound.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.rerun_tables import RerunBundle, RerunCase, RerunResult
from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Workload
from kernelindex.ingest.reruns import AGREEMENT_BOUND, RERUN_SOURCE, MappedBundle, VerifiedBundle, map_bundle
from kernelindex.manifests import Manifest
from kernelindex.manifests.digest import comparison_key
from kernelindex.rerun.bundle import BundleError
from kernelindex.rerun.cases import Case, cases_sha256
from kernelindex.store.ingest import ensure_source, environment_columns, implementation_columns, protocol_columns
from kernelindex.store.manifests import Outcome, Row, existing_by_name, put


@dataclass(frozen=True)
class ImportOutcome:
    bundle_id: str
    run_name: str | None
    implementation: str
    workload: str
    latency_ns: int | None
    already_imported: bool


def import_bundle(session: Session, bundle: VerifiedBundle, now: datetime) -> ImportOutcome:
    """Store one verified bundle; importing the same bundle again writes nothing."""
    payload = bundle.payload
    outcome = ImportOutcome(
        payload.bundle_id,
        None,
        payload.implementation.name,
        payload.workload.slug,
        payload.suite.latency_ns,
        already_imported=False,
    )
    existing = session.scalar(select(RerunBundle).where(RerunBundle.bundle_id == payload.bundle_id))
    if existing is not None:
        if existing.file_sha256 != bundle.file_sha256:
            raise BundleError(f"bundle {payload.bundle_id} was imported before with different content")
        result = session.scalar(select(RerunResult).where(RerunResult.bundle_id == existing.id))
        name = result.run.name if result is not None else None
        return replace(outcome, run_name=name, already_imported=True)

    workload = session.scalar(select(Workload).where(Workload.name == payload.workload.slug))
    if workload is None:
        raise BundleError(
            f"bundle {payload.bundle_id} measured {payload.workload.slug}, a workload not in this registry"
        )
    stored_cases = [Case(index=case.position, axes=case.axes) for case in workload.cases]
    if cases_sha256(stored_cases) != payload.workload.cases_sha256:
        raise BundleError(
            f"bundle {payload.bundle_id} measured a suite of {payload.workload.case_count} cases that differs from "
            f"the registry's {workload.name} ({workload.digest}); it cannot be filed under that workload"
        )
    mapped = map_bundle(bundle, workload.digest)
    source = ensure_source(session, RERUN_SOURCE)
    if source.last_observed_at is None or source.last_observed_at < payload.finished_at:
        source.last_observed_at = payload.finished_at
    run = _write_suite_run(session, mapped, workload, source.id, now)
    stored = RerunBundle(
        bundle_id=payload.bundle_id,
        key_id=bundle.key_id,
        file_sha256=bundle.file_sha256,
        machine_id=payload.environment.gpu.uuid or payload.environment.hostname,
        started_at=payload.started_at,
        finished_at=payload.finished_at,
        imported_at=now,
        bundle_json=bundle.text,
    )
    session.add(stored)
    session.flush()
    result = RerunResult(
        run_id=run.id,
        bundle_id=stored.id,
        bound_ns=mapped.bound_ns,
        cases_passed=payload.suite.cases_passed,
        case_count=payload.suite.suite_case_count,
    )
    session.add(result)
    session.flush()
    for case_run in mapped.case_runs:
        assert case_run.record.roofline is not None
        columns = {
            "result_id": result.id,
            "position": case_run.record.index,
            "bound_ns": round(case_run.record.roofline.bound_ns),
        }
        put(session, RerunCase, case_run.manifest, columns, None, now)
    session.flush()
    derive_rerun_evidence(session, run.comparison_key)
    return replace(outcome, run_name=run.name)


def _write_suite_run(session: Session, mapped: MappedBundle, workload: Workload, source_id: int, now: datetime) -> Run:
    protocol = _put_reference(session, Protocol, mapped.protocol, protocol_columns(mapped.protocol), now)
    environment = _put_reference(session, Environment, mapped.environment, environment_columns(mapped.environment), now)
    implementation = _put_reference(
        session, Implementation, mapped.implementation, implementation_columns(mapped.implementation), now
    )
    manifest = mapped.suite_run
    if existing_by_name(session, Run, [manifest.metadata.name]):
        raise BundleError(f"a run named {manifest.metadata.name} already exists")
    latency = manifest.spec.timing.latency_ns["median"]
    run, _ = put(
        session,
        Run,
        manifest,
        {
            "source_id": source_id,
            "external_id": mapped.bundle.payload.bundle_id,
            "workload_id": workload.id,
            "implementation_id": implementation.id,
            "protocol_id": protocol.id,
            "environment_id": environment.id,
            "comparison_key": comparison_key(workload.digest, protocol.digest, environment.digest),
            "status": manifest.spec.status,
            "evidence": "verified",
            "primary_statistic": "median",
            "latency_ns": latency,
            "sol_score": None,
            "observed_at": manifest.spec.observed_at,
            "upstream_withdrawn": False,
            "upstream_withdrawn_reason": None,
            # Faster than the H200 roofline bound is physically suspect, like beating SOL upstream.
            "held_for_review": mapped.bound_ns > 0 and latency < mapped.bound_ns,
            "missing_since": None,
            "last_seen_at": None,
        },
        None,
        now,
    )
    session.flush()
    return run


def _put_reference(
    session: Session, table: type[Row], manifest: Manifest, columns: dict[str, Any], now: datetime
) -> Row:
    current = existing_by_name(session, table, [manifest.metadata.name]).get(manifest.metadata.name)
    row, outcome = put(session, table, manifest, columns, current, now)
    if outcome is not Outcome.UNCHANGED:
        session.flush()
    return row


def derive_rerun_evidence(session: Session, group_key: str) -> None:
    """Set ``verified`` or ``replicated`` on every rerun of one comparison group."""
    rows = session.execute(
        select(Run, RerunBundle.key_id, RerunBundle.machine_id)
        .join(RerunResult, RerunResult.run_id == Run.id)
        .join(RerunBundle, RerunBundle.id == RerunResult.bundle_id)
        .where(Run.comparison_key == group_key)
    ).all()
    by_implementation: dict[int, list[tuple[Run, str, str]]] = defaultdict(list)
    for run, key_id, machine in rows:
        by_implementation[run.implementation_id].append((run, key_id, machine))
    for reruns in by_implementation.values():
        for run, key_id, machine in reruns:
            agreeing = any(
                other_key != key_id and other_machine != machine and agrees(run.latency_ns, other.latency_ns)
                for other, other_key, other_machine in reruns
                if other.id != run.id and other.status == "passed" and other.withdrawn_at is None
            )
            evidence = "replicated" if agreeing and run.status == "passed" else "verified"
            if run.evidence != evidence:
                run.evidence = evidence


def agrees(a_ns: int, b_ns: int) -> bool:
    """Two suite figures agree when they differ by at most the noise bound of the smaller."""
    return abs(a_ns - b_ns) <= AGREEMENT_BOUND * min(a_ns, b_ns)


@dataclass(frozen=True)
class RerunBounds:
    """Per-case roofline bounds of a workload from its newest rerun, and the GPU they are for."""

    gpu: str
    by_position: dict[int, int]


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
    rows = session.execute(select(RerunCase.position, RerunCase.bound_ns).where(RerunCase.result_id == newest.id))
    return RerunBounds(gpu=newest.gpu_product, by_position={position: bound for position, bound in rows})


def bundle_text(session: Session, bundle_id: str) -> str | None:
    return session.scalar(select(RerunBundle.bundle_json).where(RerunBundle.bundle_id == bundle_id))


def rerun_of_run(session: Session, run_id: int) -> RerunResult | None:
    return session.scalar(
        select(RerunResult)
        .where(RerunResult.run_id == run_id)
        .options(joinedload(RerunResult.bundle), joinedload(RerunResult.cases))
    )
