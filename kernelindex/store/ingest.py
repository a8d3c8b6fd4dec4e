"""Writing one ingested batch (a workload and its runs) and the ingestion bookkeeping."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, insert, select, update
from sqlalchemy.orm import Session

from kernelindex.db.tables import (
    Environment,
    Implementation,
    IngestionReport,
    ManifestVersion,
    Protocol,
    Run,
    Source,
    Workload,
    WorkloadCase,
)
from kernelindex.figure_gate import Reason, Refused
from kernelindex.gpus import gpu_slug
from kernelindex.manifests import BenchmarkProtocol, ExecutionEnvironment
from kernelindex.manifests import Implementation as ImplementationManifest
from kernelindex.manifests.digest import comparison_key
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.ranking import geometric_mean
from kernelindex.slugs import slugify
from kernelindex.store.batch import LIVE, Batch, ReadFrom, RunRecord, SourceInfo, StoredRun
from kernelindex.store.bulk import insert_rows, version_rows
from kernelindex.store.manifests import Outcome, existing_by_name, insert_new, manifest_text, put
from kernelindex.store.search import index_batch, index_new_workloads
from kernelindex.store.spreads import spread_columns
from kernelindex.store.version import LISTS, confine_writes, workload_scope


def begin_writing(session: Session) -> None:
    """Open the session's transaction as a writer.

    On SQLite the driver begins a transaction only at the first INSERT or UPDATE, so a
    SAVEPOINT issued before one would open (and its release commit) a transaction of its own;
    ``BEGIN IMMEDIATE`` opens a real one first, taking the write lock at once (waiting out
    another writer by the busy timeout) rather than failing midway when it upgrades.
    PostgreSQL needs nothing: its transactions begin at the first statement.
    """
    connection = session.connection()
    if connection.dialect.name == "sqlite" and not connection.connection.dbapi_connection.in_transaction:  # type: ignore[union-attr]
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def ensure_source(session: Session, info: SourceInfo) -> Source:
    """The source's row, created or brought up to date with what the adapter says of it."""
    source = session.scalar(select(Source).where(Source.slug == info.slug))
    facts = {
        "name": info.name,
        "url": info.url,
        "description": info.description,
        "licence": info.licence,
        "attribution": info.attribution,
        "run_noun": info.run_noun,
        "gpu_naming": info.gpu_naming,
    }
    if source is None:
        source = Source(slug=info.slug, **facts)
        session.add(source)
        session.flush()
    for column, value in facts.items():
        if getattr(source, column) != value:
            setattr(source, column, value)
    return source


def apply_batch(session: Session, source: Source, batch: Batch, now: datetime) -> Counter[str]:
    """Write a batch inside the caller's transaction; returns ``"<outcome>.<table>"`` counts."""
    counts: Counter[str] = Counter()

    protocols, environments = _put_shared(session, batch.protocols, batch.environments, now, counts)
    workload = _put_workload(session, source, batch, now, counts)

    implementations = _put_implementations(session, batch.implementations, now, counts)

    listed = [record.stored.name for record in batch.runs]
    # Names and digests only: most runs of a re-ingest are unchanged, and a full row carries
    # its manifest's text. The rows of changed runs are loaded below, few at a time.
    stored = {}
    for name, digest, missing, workload_id in session.execute(
        select(Run.name, Run.digest, Run.missing_since.is_not(None), Run.workload_id).where(Run.name.in_(listed))
    ):
        if workload_id != workload.id:
            # A run never moves to another workload: the upstream listing it under this one now
            # is refused, and the stored run keeps its figures and its workload.
            _refuse_moved(batch, name)
            continue
        stored[name] = (digest, missing)
    if batch.withheld:
        batch.runs = [record for record in batch.runs if record.stored.name not in batch.withheld]
        listed = [record.stored.name for record in batch.runs]
    changed = existing_by_name(
        session,
        Run,
        [
            record.stored.name
            for record in batch.runs
            if record.stored.name in stored and stored[record.stored.name][0] != record.stored.digest
        ],
    )
    new_runs: list[tuple[StoredRun, dict[str, Any]]] = []
    for record in batch.runs:
        name = record.stored.name
        held = record.held_for_review
        if name not in stored:
            outcome = Outcome.ADDED
            new_runs.append(
                (
                    record.stored,
                    _run_columns(
                        record, source, (workload.id, workload.digest), implementations, protocols, environments
                    ),
                )
            )
        elif name not in changed:
            outcome = Outcome.UNCHANGED
        else:
            columns = _run_columns(
                record, source, (workload.id, workload.digest), implementations, protocols, environments
            )
            if changed[name].review_state is not None:
                # A maintainer has decided on this run: a new upstream value does not hold it again.
                held = changed[name].held_for_review
                del columns["held_for_review"]
            _, outcome = put(session, Run, record.stored, columns, changed[name], now)
        counts[f"{outcome}.run"] += 1
        if outcome is not Outcome.UNCHANGED:
            counts["flag.held_for_review"] += held
            counts["flag.withdrawn_upstream"] += record.upstream_withdrawn
    insert_new(session, Run, new_runs, now)

    returned = [name for name, (_, missing) in stored.items() if missing]
    if returned:
        session.execute(update(Run).where(Run.name.in_(returned)).values(missing_since=None, last_seen_at=None))
        counts["flag.back_upstream"] += len(returned)
    if batch.complete:
        gone = session.execute(
            update(Run)
            .where(
                Run.workload_id == workload.id,
                Run.source_id == source.id,
                Run.missing_since.is_(None),
                Run.name.not_in([*listed, *batch.withheld]),
            )
            .values(missing_since=now, last_seen_at=source.last_observed_at or now)
        )
        # An UPDATE gives a CursorResult (it has the rowcount); Session.execute is typed as giving any Result.
        counts["flag.missing_upstream"] += cast(CursorResult[Any], gone).rowcount
    index_batch(session, batch, workload, counts)
    return counts


def _refuse_moved(batch: Batch, name: str) -> None:
    record = next(record for record in batch.runs if record.stored.name == name)
    batch.withheld.add(name)
    batch.refused.add(
        f"{record.external_id} ({name})",
        Refused(
            Reason.DUPLICATE_ID,
            "the source lists it under this workload, but it is stored as a result of another; "
            "it keeps its workload and figures",
        ),
    )


def _put_shared(
    session: Session,
    protocol_manifests: Sequence[BenchmarkProtocol],
    environment_manifests: Sequence[ExecutionEnvironment],
    now: datetime,
    counts: Counter[str],
) -> tuple[dict[str, Protocol], dict[str, Environment]]:
    """Protocols and environments (shared by many workloads), written where new or changed; they
    are counted when written, not once per workload that uses them."""
    protocols = existing_by_name(session, Protocol, (m.metadata.name for m in protocol_manifests))
    for manifest in protocol_manifests:
        row, outcome = put(
            session, Protocol, manifest, protocol_columns(manifest), protocols.get(manifest.metadata.name), now
        )
        protocols[row.name] = row
        if outcome is not Outcome.UNCHANGED:
            counts[f"{outcome}.protocol"] += 1
    environments = existing_by_name(session, Environment, (m.metadata.name for m in environment_manifests))
    for env in environment_manifests:
        env_row, outcome = put(
            session, Environment, env, environment_columns(env), environments.get(env.metadata.name), now
        )
        environments[env_row.name] = env_row
        if outcome is not Outcome.UNCHANGED:
            counts[f"{outcome}.environment"] += 1
    return protocols, environments


def _put_implementations(
    session: Session, manifests: Sequence[ImplementationManifest], now: datetime, counts: Counter[str]
) -> dict[str, Implementation]:
    """Implementations written where new or changed, by name; each is counted once per batch
    (or group) that lists it."""
    rows = existing_by_name(session, Implementation, (m.metadata.name for m in manifests))
    # New ones through the bulk path (``insert_new``), then read back: a source whose every
    # submission is its own implementation (SOL-ExecBench) adds one per run, and one ORM object
    # each took a third of a 100,000-submission ingest.
    new: dict[str, ImplementationManifest] = {}
    again: list[ImplementationManifest] = []
    for manifest in manifests:
        name = manifest.metadata.name
        if name in rows or name in new:
            again.append(manifest)
        else:
            new[name] = manifest
    if new:
        insert_new(session, Implementation, ((m, implementation_columns(m)) for m in new.values()), now)
        rows.update(existing_by_name(session, Implementation, new))
        counts["added.implementation"] += len(new)
    for manifest in again:
        row, outcome = put(
            session, Implementation, manifest, implementation_columns(manifest), rows[manifest.metadata.name], now
        )
        rows[row.name] = row
        counts[f"{outcome}.implementation"] += 1
    session.flush()
    return rows


def _run_columns(
    record: RunRecord,
    source: Source,
    workload: tuple[int, str],
    implementations: Mapping[str, Implementation],
    protocols: Mapping[str, Protocol],
    environments: Mapping[str, Environment],
) -> dict[str, Any]:
    run = record.stored
    protocol, environment = protocols[record.protocol], environments[record.environment]
    workload_id, workload_digest = workload
    return {
        "source_id": source.id,
        "external_id": record.external_id,
        "workload_id": workload_id,
        "implementation_id": implementations[record.implementation].id,
        "protocol_id": protocol.id,
        "environment_id": environment.id,
        "comparison_key": comparison_key(workload_digest, protocol.digest, environment.digest),
        "status": run.status,
        "evidence": EvidenceLevel.REPORTED,
        "primary_statistic": run.primary_statistic,
        "latency_ns": run.latency_ns,
        **spread_columns(run.uncertainty),
        "sol_score": record.sol_score,
        "observed_at": run.observed_at,
        "upstream_withdrawn": record.upstream_withdrawn,
        "upstream_withdrawn_reason": record.upstream_withdrawn_reason,
        "held_for_review": record.held_for_review,
        "missing_since": None,
        "last_seen_at": None,
    }


def protocol_columns(manifest: BenchmarkProtocol) -> dict[str, Any]:
    spec = manifest.spec
    return {
        "title": manifest.metadata.title or manifest.metadata.name,
        "family": spec.comparability.family,
        "harness_name": spec.harness.name,
        "harness_version": spec.harness.version,
    }


def environment_columns(manifest: ExecutionEnvironment) -> dict[str, Any]:
    hardware = manifest.spec.hardware
    return {
        "title": manifest.metadata.title or manifest.metadata.name,
        "gpu_slug": gpu_slug(hardware.vendor, hardware.product),
        "gpu_product": hardware.product,
        "architecture": hardware.architecture,
    }


def implementation_columns(manifest: ImplementationManifest) -> dict[str, Any]:
    spec = manifest.spec
    return {
        "project": spec.project.name,
        "project_slug": slugify(spec.project.name),
        "revision": spec.revision,
        "runtime": spec.runtime,
        "license": spec.license,
        "source_available": spec.source.available,
        "has_install_recipe": spec.install is not None,
    }


def _put_workload(session: Session, source: Source, batch: Batch, now: datetime, counts: Counter[str]) -> Workload:
    current = session.scalar(
        select(Workload).where(Workload.source_id == source.id, Workload.external_id == batch.external_id)
    )
    workload, outcome = put(session, Workload, batch.workload, _workload_columns(source, batch), current, now)
    counts[f"{outcome}.workload"] += 1
    _put_upstream_total(workload, batch, now)
    if current is not None and current.missing_since is not None:
        current.missing_since = None
        current.last_seen_at = None
    if outcome is Outcome.UPDATED:
        # The old cases must be gone before the new ones are inserted: (workload_id, position) is unique.
        workload.cases.clear()
        session.flush()
    session.flush()
    # From here the batch writes only this workload's rows (its cases, its runs by name, its
    # search entries), some by statements whose rows are not seen: they change its pages and the lists.
    confine_writes(session, workload_scope(workload.id), LISTS)
    if outcome is not Outcome.UNCHANGED:
        # One multi-row INSERT rather than an ORM object per case (a sweep has dozens).
        session.execute(insert(WorkloadCase), _case_rows(workload.id, batch))
        session.expire(workload, ["cases"])
    return workload


def _workload_columns(source: Source, batch: Batch) -> dict[str, Any]:
    manifest = batch.workload
    spec = manifest.spec
    bounds = [case.sol_latency_ms for case in spec.cases if case.sol_latency_ms]
    return {
        "source_id": source.id,
        "external_id": batch.external_id,
        "collection": spec.collection,
        "title": manifest.metadata.title or spec.definition.name,
        "description": spec.definition.description,
        "origin_model": spec.origin_model,
        "tags": list(spec.tags),
        "case_count": len(spec.cases),
        "sol_aggregate_ms": geometric_mean(bounds) if len(bounds) == len(spec.cases) else None,
    }


def _case_rows(workload_id: int, batch: Batch) -> list[dict[str, Any]]:
    return [
        {
            "workload_id": workload_id,
            "position": position,
            "axes": case.axes,
            "baseline_latency_ms": case.baseline_latency_ms,
            "sol_latency_ms": case.sol_latency_ms,
        }
        for position, case in enumerate(batch.workload.spec.cases)
    ]


def _put_upstream_total(workload: Workload, batch: Batch, now: datetime) -> None:
    """Keep the upstream's newest count and when it was read. A batch without a count leaves what
    is stored (a snapshot that holds none says nothing of a count read before), and an older count
    (a snapshot loaded after a live ingest) never replaces a newer one."""
    if batch.upstream_total is None:
        return
    observed = batch.upstream_total_observed_at or now
    stored_at = workload.upstream_total_observed_at
    if stored_at is not None and stored_at > observed:
        return
    if workload.upstream_total != batch.upstream_total or stored_at != observed:
        workload.upstream_total = batch.upstream_total
        workload.upstream_total_observed_at = observed


def mark_missing_workloads(session: Session, source: Source, listed: set[str], now: datetime) -> int:
    """Workloads the upstream no longer lists keep everything and get ``missing_since``."""
    result = session.execute(
        update(Workload)
        .where(
            Workload.source_id == source.id,
            Workload.missing_since.is_(None),
            Workload.external_id.not_in(listed),
        )
        .values(missing_since=now, last_seen_at=source.last_observed_at or now)
    )
    return cast(CursorResult[Any], result).rowcount  # an UPDATE's result, as above


def start_report(
    session: Session, source: Source, origin: str, now: datetime, read_from: ReadFrom = LIVE
) -> IngestionReport:
    report = IngestionReport(
        source_id=source.id,
        origin=origin,
        read_from=read_from.kind,
        snapshot_observed_at=read_from.snapshot_observed_at,
        snapshot_scope=read_from.snapshot_scope,
        status="running",
        started_at=now,
        counts={},
        errors=[],
        drift=[],
    )
    session.add(report)
    session.flush()
    return report


def source_by_id(session: Session, source_id: int) -> Source:
    return session.get_one(Source, source_id)


def finish_report(
    session: Session,
    report_id: int,
    status: str,
    finished_at: datetime,
    counts: dict[str, dict[str, int]],
    errors: list[str],
    drift: list[str],
) -> None:
    report = session.get_one(IngestionReport, report_id)
    report.status = status
    report.finished_at = finished_at
    report.counts = counts
    report.errors = errors
    report.drift = drift


INTERRUPTED = "this ingest stopped before it finished (killed or crashed); the next run picked up its work"


def close_interrupted_reports(session: Session, now: datetime) -> int:
    """Mark reports still ``running`` as ``interrupted``; returns how many.

    Only call this while holding the ingest lock: then no ingest is running, so a report
    still ``running`` belongs to one that died (killed, or its machine lost power).
    """
    reports = session.scalars(select(IngestionReport).where(IngestionReport.status == "running")).all()
    for report in reports:
        report.status = "interrupted"
        report.finished_at = now
        report.errors = [*report.errors, INTERRUPTED]
    return len(reports)


def stored_units(session: Session, source: Source, units: Sequence[str]) -> set[str]:
    """Which of ``units`` (workload external ids) the store already holds a workload for."""
    if not units:
        return set()
    found = session.scalars(
        select(Workload.external_id).where(Workload.source_id == source.id, Workload.external_id.in_(units))
    )
    return set(found)


def stored_run_names(session: Session, names: Sequence[str]) -> set[str]:
    """Which of ``names`` the store holds a run of (read a few thousand at a time)."""
    found: set[str] = set()
    for start in range(0, len(names), 5000):
        found.update(session.scalars(select(Run.name).where(Run.name.in_(names[start : start + 5000]))))
    return found


def apply_new_batches(session: Session, source: Source, batches: Sequence[Batch], now: datetime) -> Counter[str]:
    """Write batches whose workloads the store does not hold yet, all at once, in the caller's
    transaction: the rows ``apply_batch`` would write, as a few multi-row inserts (``COPY`` on
    PostgreSQL) instead of a dozen statements a workload. Every run of a new workload is new.

    Returns the counts of the whole group; the caller writes a group it cannot be sure is new
    through ``apply_batch``.
    """
    counts: Counter[str] = Counter()
    protocols, environments = _put_shared(
        session,
        list({m.metadata.name: m for batch in batches for m in batch.protocols}.values()),
        list({m.metadata.name: m for batch in batches for m in batch.environments}.values()),
        now,
        counts,
    )
    wanted = {m.metadata.name: m for batch in batches for m in batch.implementations}
    implementations = _put_implementations(session, list(wanted.values()), now, counts)

    workload_rows = []
    for batch in batches:
        workload_rows.append(
            {
                "name": batch.workload.metadata.name,
                "digest": batch.workload.digest,
                "manifest_json": manifest_text(batch.workload),
                "created_at": now,
                "updated_at": now,
                **_workload_columns(source, batch),
                "upstream_total": batch.upstream_total,
                "upstream_total_observed_at": (batch.upstream_total_observed_at or now)
                if batch.upstream_total is not None
                else None,
                "missing_since": None,
                "last_seen_at": None,
            }
        )
    insert_rows(session, Workload, workload_rows)
    insert_rows(session, ManifestVersion, version_rows("WorkloadSuite", workload_rows, now))
    listed = [batch.external_id for batch in batches]
    ids = {
        external_id: workload_id
        for external_id, workload_id in session.execute(
            select(Workload.external_id, Workload.id).where(
                Workload.source_id == source.id, Workload.external_id.in_(listed)
            )
        )
    }
    # From here the group writes only its new workloads' rows (cases, runs, search entries).
    confine_writes(session, *map(workload_scope, sorted(ids.values())), LISTS)
    insert_rows(session, WorkloadCase, [row for batch in batches for row in _case_rows(ids[batch.external_id], batch)])
    counts["added.workload"] += len(batches)

    run_rows = []
    for batch in batches:
        stored = (ids[batch.external_id], batch.workload.digest)
        for record in batch.runs:
            run_rows.append(
                {
                    "name": record.stored.name,
                    "digest": record.stored.digest,
                    "manifest_json": record.stored.text,
                    "created_at": now,
                    "updated_at": now,
                    **_run_columns(record, source, stored, implementations, protocols, environments),
                    "withdrawn_at": None,
                    "withdrawn_reason": None,
                }
            )
            counts["flag.held_for_review"] += record.held_for_review
            counts["flag.withdrawn_upstream"] += record.upstream_withdrawn
    insert_rows(session, Run, run_rows)
    insert_rows(session, ManifestVersion, version_rows("BenchmarkRun", run_rows, now))
    counts["added.run"] += len(run_rows)
    names = {batch.external_id: batch.workload.spec.definition.name for batch in batches}
    index_new_workloads(
        session,
        [
            (workload, names[workload.external_id])
            for workload in session.scalars(select(Workload).where(Workload.id.in_(ids.values())))
        ],
        list(wanted.values()) if counts["added.implementation"] or counts["updated.implementation"] else [],
        gpus_changed=bool(counts["added.environment"] or counts["updated.environment"]),
    )
    return counts


def workload_ids(session: Session, source_id: int, external_ids: Iterable[str]) -> list[int]:
    """The ids of the source's workloads with these external ids (read a few thousand at a time)."""
    wanted = sorted(external_ids)
    found: list[int] = []
    for start in range(0, len(wanted), 5000):
        chunk = wanted[start : start + 5000]
        found += session.scalars(
            select(Workload.id).where(Workload.source_id == source_id, Workload.external_id.in_(chunk))
        )
    return found
