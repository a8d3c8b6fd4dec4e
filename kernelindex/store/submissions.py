"""Submitted runs: checking a submission against the registry, the review queue, and publishing.

A submission is checked whole before anything is written (``check_submission``: the pure checks of
``kernelindex.submissions.checks``, with the facts they need read here). A valid one waits as
``pending``; a maintainer accepts it (it becomes a run of the "submissions" source, attributed to
its submitter and ranked in its comparison group like any run), rejects it with a reason, or asks
for changes (the submitter sends a new submission). Each decision is one conditional UPDATE, so
two maintainers cannot both decide, and is written to the audit log in the same transaction.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, func, select, update
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.submission_tables import SubmissionRecord
from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Workload
from kernelindex.figures import DATASHEET, SOL_EXECBENCH
from kernelindex.gpus import gpu_slug
from kernelindex.manifests import Manifest
from kernelindex.manifests.digest import comparison_key
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.store.accounts import User, audit, now
from kernelindex.store.batch import SourceInfo
from kernelindex.store.ingest import ensure_source, environment_columns, implementation_columns, protocol_columns
from kernelindex.store.manifests import Row, put
from kernelindex.store.moderation import MAX_NOTE, MAX_REASON, ModerationError, checked_text, withdraw_run
from kernelindex.store.reruns import newest_rerun_bounds
from kernelindex.store.runs import implementation_identity
from kernelindex.submissions.checks import (
    SUBMITTED_SOURCE,
    CaseBound,
    Refusal,
    SubmissionRefused,
    WorkloadFacts,
    check_bounds,
    check_cases,
    check_digests,
    check_duplicate,
    check_size,
    check_units,
    check_workload,
    parse_submission,
)
from kernelindex.submissions.document import Submission, case_digest

PENDING, ACCEPTED, REJECTED, CHANGES_REQUESTED = "pending", "accepted", "rejected", "changes-requested"
STATUSES = (PENDING, ACCEPTED, REJECTED, CHANGES_REQUESTED)
# A run of these is in the registry or on its way: the same run again is a duplicate.
_LIVE = (PENDING, ACCEPTED)

SUBMISSIONS_SOURCE = SourceInfo(
    slug=SUBMITTED_SOURCE,
    name="Submitted runs",
    url="/submit",
    description=(
        "Runs measured by people outside the registry and submitted through /submit or POST /api/v1/submissions: "
        "each with its run, implementation, environment and protocol manifests, per-case figures and an evidence "
        "link. Every submission passes the registry's checks (digests, the workload's cases, units, the "
        "speed-of-light bound, duplicates) and a maintainer's review before it is published. Reported by its "
        "submitter, reviewed by maintainers; not independently reproduced."
    ),
    licence="Each submitter publishes their figures under CC-BY-4.0 by submitting them.",
    attribution="Data: runs submitted to KernelIndex, each credited to its submitter, CC-BY-4.0.",
    run_noun="submitted runs",
    gpu_naming="the GPU each submitter's environment manifest names",
)


# --- Checking ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """A submission that passed every check: the document and the workload it measured."""

    document: Submission
    workload_id: int


def check_submission(session: Session, raw: bytes, when: datetime | None = None) -> Checked:
    """Check ``raw`` (the body as sent) in the order of ``checks.CHECKS`` but the rate, reading only;
    raises ``SubmissionRefused`` with the first refusal."""
    _refuse(check_size(raw))
    parsed = parse_submission(raw, when or now())
    if isinstance(parsed, Refusal):
        raise SubmissionRefused(parsed)
    document = parsed
    _refuse(check_digests(document))
    workload = session.scalar(select(Workload).where(Workload.name == document.workload.slug))
    facts = _workload_facts(workload) if workload is not None else None
    _refuse(check_workload(document, facts))
    assert workload is not None and facts is not None  # check_workload refuses a missing one
    _refuse(check_cases(document, facts))
    _refuse(check_units(document))
    hardware = document.environment.spec.hardware
    _refuse(check_bounds(document, case_bounds(session, workload, gpu_slug(hardware.vendor, hardware.product))))
    _refuse(check_duplicate(document, run_is_known(session, document.run.digest)))
    return Checked(document, workload.id)


def _refuse(refusal: Refusal | None) -> None:
    if refusal is not None:
        raise SubmissionRefused(refusal)


def _workload_facts(workload: Workload) -> WorkloadFacts:
    # The cases as the workload's manifest serves them (/manifests/{digest}): their digests are
    # computed from the same JSON a submitter reads.
    cases = json.loads(workload.manifest_json)["spec"]["cases"]
    return WorkloadFacts(workload.name, workload.digest, [case_digest(case["axes"]) for case in cases])


def case_bounds(session: Session, workload: Workload, gpu: str) -> dict[int, list[CaseBound]]:
    """The known lower bounds on each case's latency: the speed-of-light bound published with the
    workload (SOL-ExecBench's T_SOL), and the datasheet speed of light of the newest controlled rerun
    where it measured the same GPU (``gpu``, a GPU slug)."""
    bounds: dict[int, list[CaseBound]] = {}
    published = f"{SOL_EXECBENCH.name}, published with the workload"
    for case in workload.cases:
        if case.sol_latency_ms:
            bounds.setdefault(case.position, []).append(CaseBound(case.sol_latency_ms * 1_000_000, published))
    rerun = newest_rerun_bounds(session, workload.id)
    measured_on = (
        session.scalar(select(Environment.gpu_slug).where(Environment.gpu_product == rerun.gpu).limit(1))
        if rerun is not None
        else None
    )
    if rerun is not None and measured_on == gpu:
        name = f"{DATASHEET.name} speed of light of the {rerun.gpu}"
        for position, bound_ns in rerun.by_position.items():
            if bound_ns > 0:
                bounds.setdefault(position, []).append(CaseBound(bound_ns, name))
    return bounds


def run_is_known(session: Session, digest: str) -> bool:
    """Whether the registry holds a run of this digest, or a submission of it waits or was accepted."""
    stored = session.scalar(select(Run.id).where(Run.digest == digest).limit(1))
    waiting = session.scalar(
        select(SubmissionRecord.id)
        .where(SubmissionRecord.run_digest == digest, SubmissionRecord.status.in_(_LIVE))
        .limit(1)
    )
    return stored is not None or waiting is not None


def add_submission(session: Session, user: User, checked: Checked, raw: bytes) -> SubmissionRecord:
    """Store a checked submission as pending, with its audit entry, in the caller's transaction; the
    duplicate check is made again in it (another may have arrived since ``check_submission``)."""
    document = checked.document
    _refuse(check_duplicate(document, run_is_known(session, document.run.digest)))
    row = SubmissionRecord(
        public_id=secrets.token_hex(6),
        submitter_id=user.id,
        status=PENDING,
        document_json=raw.decode("utf-8"),
        run_digest=document.run.digest,
        workload_id=checked.workload_id,
        workload_digest=document.workload.digest,
        submitted_at=now(),
    )
    session.add(row)
    session.flush()
    audit(session, user, "submission.submit", f"submission {row.public_id}", None)
    return row


# --- What the queue and the pages show -------------------------------------------------------------


@dataclass(frozen=True)
class SubmissionView:
    """One submission as the queue, the account page and its own page show it."""

    public_id: str
    status: str
    submitter: str
    workload_slug: str
    workload_title: str
    implementation: str  # the implementation manifest's title, or its project
    gpu: str
    latency_ns: int
    statistic: str
    cases: int
    run_digest: str
    evidence_url: str
    artifacts: list[dict[str, Any]]
    submitted_at: datetime
    reviewed_at: datetime | None
    reviewer: str | None
    review_note: str | None
    run_name: str | None  # the run it became, once accepted
    run_withdrawn: bool
    document: dict[str, Any]


def _view(row: SubmissionRecord) -> SubmissionView:
    document = Submission.model_validate_json(row.document_json)
    run, implementation = document.run.spec, document.implementation
    return SubmissionView(
        public_id=row.public_id,
        status=row.status,
        submitter=row.submitter.handle,
        workload_slug=row.workload.name,
        workload_title=row.workload.title,
        implementation=implementation.metadata.title or implementation.spec.project.name,
        gpu=document.environment.spec.hardware.product,
        latency_ns=run.timing.latency_ns[run.timing.primary_statistic],
        statistic=run.timing.primary_statistic,
        cases=len(run.case_results or []),
        run_digest=row.run_digest,
        evidence_url=str(document.evidence_url),
        artifacts=[
            artifact.model_dump(mode="json", by_alias=True, exclude_none=True) for artifact in document.artifacts
        ],
        submitted_at=row.submitted_at,
        reviewed_at=row.reviewed_at,
        reviewer=row.reviewer.handle if row.reviewer else None,
        review_note=row.review_note,
        run_name=row.run.name if row.run else None,
        run_withdrawn=bool(row.run and row.run.withdrawn_at is not None),
        document=json.loads(row.document_json),
    )


def _rows(session: Session, *where: Any, order: Any, limit: int) -> list[SubmissionView]:
    rows = session.scalars(
        select(SubmissionRecord)
        .where(*where)
        .options(
            joinedload(SubmissionRecord.submitter),
            joinedload(SubmissionRecord.reviewer),
            joinedload(SubmissionRecord.workload),
            joinedload(SubmissionRecord.run),
        )
        .order_by(order, SubmissionRecord.id)
        .limit(limit)
    )
    return [_view(row) for row in rows]


def review_queue(session: Session, limit: int = 100) -> list[SubmissionView]:
    """Submissions waiting for a maintainer, oldest first."""
    return _rows(session, SubmissionRecord.status == PENDING, order=SubmissionRecord.submitted_at, limit=limit)


def reviewed_submissions(session: Session, limit: int = 50) -> list[SubmissionView]:
    """Submissions a maintainer has decided on, most recently decided first."""
    return _rows(session, SubmissionRecord.status != PENDING, order=SubmissionRecord.reviewed_at.desc(), limit=limit)


def submissions_of(session: Session, user: User, limit: int = 200) -> list[SubmissionView]:
    """A submitter's submissions, newest first: their credits, and what waits or came back."""
    return _rows(
        session, SubmissionRecord.submitter_id == user.id, order=SubmissionRecord.submitted_at.desc(), limit=limit
    )


def find_submission(session: Session, public_id: str) -> SubmissionView | None:
    found = _rows(session, SubmissionRecord.public_id == public_id, order=SubmissionRecord.id, limit=1)
    return found[0] if found else None


@dataclass(frozen=True)
class SubmittedRun:
    """Who submitted a published run, and the evidence they gave with it."""

    handle: str
    evidence_url: str
    artifacts: list[tuple[str, str, str | None]]  # name, https URL, sha256 (where given)


def submission_of_run(session: Session, run_id: int) -> SubmittedRun | None:
    """The submission a run was published from; None for a run that was not submitted."""
    found = session.execute(
        select(User.handle, SubmissionRecord.document_json)
        .join(SubmissionRecord, SubmissionRecord.submitter_id == User.id)
        .where(SubmissionRecord.run_id == run_id)
    ).first()
    if found is None:
        return None
    document = Submission.model_validate_json(found.document_json)
    artifacts = [(item.name, str(item.url), item.sha256) for item in document.artifacts]
    return SubmittedRun(found.handle, str(document.evidence_url), artifacts)


@dataclass(frozen=True)
class PublishedRun:
    """A run published from someone's submission, as their public page credits it."""

    run_name: str
    workload_slug: str
    workload_title: str
    implementation: str
    gpu: str
    latency_ns: int
    statistic: str
    published_at: datetime
    withdrawn: bool


def published_by(session: Session, handle: str) -> tuple[str, list[PublishedRun]] | None:
    """The account's handle as written and the runs published from its submissions, newest first;
    None where no account has the handle."""
    found = session.scalar(select(User).where(func.lower(User.handle) == handle.lower()))
    if found is None:
        return None
    rows = session.execute(
        select(Run, SubmissionRecord.reviewed_at)
        .join(SubmissionRecord, SubmissionRecord.run_id == Run.id)
        .where(SubmissionRecord.submitter_id == found.id, SubmissionRecord.status == ACCEPTED)
        .options(joinedload(Run.workload), joinedload(Run.implementation), joinedload(Run.environment))
        .order_by(SubmissionRecord.reviewed_at.desc(), Run.id.desc())
    ).all()
    runs = [
        PublishedRun(
            run_name=run.name,
            workload_slug=run.workload.name,
            workload_title=run.workload.title,
            implementation=implementation_identity(run.implementation),
            gpu=run.environment.gpu_product,
            latency_ns=run.latency_ns,
            statistic=run.primary_statistic,
            published_at=reviewed_at or run.created_at,
            withdrawn=run.withdrawn_at is not None,
        )
        for run, reviewed_at in rows
    ]
    return found.handle, runs


# --- The review's writes ---------------------------------------------------------------------------


def _decide(session: Session, maintainer: User, public_id: str, status: str, note: str | None) -> SubmissionRecord:
    """Move a pending submission to ``status``: one conditional UPDATE, so a second decision is a 409."""
    result = cast(
        "CursorResult[Any]",
        session.execute(
            update(SubmissionRecord)
            .where(SubmissionRecord.public_id == public_id, SubmissionRecord.status == PENDING)
            .values(status=status, reviewed_at=now(), reviewer_id=maintainer.id, review_note=note)
            .execution_options(synchronize_session=False)
        ),
    )
    row = session.scalar(
        select(SubmissionRecord)
        .where(SubmissionRecord.public_id == public_id)
        .execution_options(populate_existing=True)
    )
    if row is None:
        raise ModerationError(f"There is no submission {public_id!r}.", 404)
    if result.rowcount == 0:
        raise ModerationError(f"The submission {public_id} is already {row.status}.", 409)
    return row


def reject_submission(session: Session, maintainer: User, public_id: str, reason: str) -> SubmissionRecord:
    """Refuse a submission for good, with a reason its submitter reads; it is kept, never published."""
    text = checked_text(
        reason, MAX_REASON, f"Give a reason for rejecting submission {public_id}; its submitter reads it."
    )
    row = _decide(session, maintainer, public_id, REJECTED, text)
    audit(session, maintainer, "submission.reject", f"submission {public_id}", text)
    return row


def request_changes(session: Session, maintainer: User, public_id: str, note: str) -> SubmissionRecord:
    """Send a submission back: its submitter reads what to change and submits it again."""
    text = checked_text(note, MAX_NOTE, f"Say what should change in submission {public_id}; its submitter reads it.")
    row = _decide(session, maintainer, public_id, CHANGES_REQUESTED, text)
    audit(session, maintainer, "submission.request-changes", f"submission {public_id}", text)
    return row


def accept_submission(session: Session, maintainer: User, public_id: str, note: str) -> Run:
    """Publish a submission: it becomes a run of the "submissions" source, reported by its submitter,
    ranked in its comparison group. Refused (409) where the workload was revised since, or the run
    reached the registry another way."""
    text = checked_text(note, MAX_NOTE, None)
    row = _decide(session, maintainer, public_id, ACCEPTED, text)
    document = Submission.model_validate_json(row.document_json)
    workload = session.get_one(Workload, row.workload_id)
    if workload.digest != row.workload_digest:
        raise ModerationError(
            f"The workload {workload.name} was revised since submission {public_id} measured it; "
            "ask for changes: it must be measured again.",
            409,
        )
    if session.scalar(select(Run.id).where(Run.digest == row.run_digest).limit(1)) is not None:
        raise ModerationError(f"The run {row.run_digest} is already in the registry; reject this one.", 409)
    run = _write_run(session, public_id, document, workload)
    row.run_id = run.id
    audit(session, maintainer, "submission.accept", f"submission {public_id}: run {run.name}", text)
    return run


def _named(manifest: Manifest, name: str) -> Manifest:
    """``manifest`` under the registry's name (its title and labels kept): the digest leaves out
    the metadata, so it is the manifest the submitter sent, and a submitted name never lands on a
    record of the same name from a source."""
    data = manifest.to_json()
    data["metadata"] = {**data["metadata"], "name": name}
    return type(manifest).model_validate(data)


def _reference(session: Session, table: type[Row], manifest: Manifest, name: str, columns: dict[str, Any]) -> Row:
    """The stored record with the manifest's digest (a source's protocol or environment, so that the
    run joins that comparison group), or the manifest stored under ``name``."""
    existing = session.scalars(select(table).where(table.digest == manifest.digest).order_by(table.created_at)).first()
    if existing is not None:
        return existing
    row, _ = put(session, table, _named(manifest, name), columns, None, now())
    return row


def _write_run(session: Session, public_id: str, document: Submission, workload: Workload) -> Run:
    source = ensure_source(session, SUBMISSIONS_SOURCE)
    name = f"submission-{public_id}"
    protocol = _reference(session, Protocol, document.protocol, f"{name}-protocol", protocol_columns(document.protocol))
    environment = _reference(
        session, Environment, document.environment, f"{name}-environment", environment_columns(document.environment)
    )
    implementation = _reference(
        session,
        Implementation,
        document.implementation,
        f"{name}-implementation",
        implementation_columns(document.implementation),
    )
    session.flush()
    manifest = _named(document.run, name)
    spec = document.run.spec
    when = now()
    if source.last_observed_at is None or source.last_observed_at < when:
        source.last_observed_at = when
    run, _ = put(
        session,
        Run,
        manifest,
        {
            "source_id": source.id,
            "external_id": public_id,
            "workload_id": workload.id,
            "implementation_id": implementation.id,
            "protocol_id": protocol.id,
            "environment_id": environment.id,
            "comparison_key": comparison_key(workload.digest, protocol.digest, environment.digest),
            "status": spec.status,
            "evidence": EvidenceLevel.REPORTED,
            "primary_statistic": spec.timing.primary_statistic,
            "latency_ns": spec.timing.latency_ns[spec.timing.primary_statistic],
            "sol_score": None,
            "observed_at": spec.observed_at,
            "upstream_withdrawn": False,
            "upstream_withdrawn_reason": None,
            # Checked against the bound before it was queued, and reviewed by a maintainer since.
            "held_for_review": False,
            "missing_since": None,
            "last_seen_at": None,
        },
        None,
        when,
    )
    session.flush()
    return run


def withdraw_own_run(session: Session, user: User, public_id: str, reason: str) -> Run:
    """The submitter withdraws the run their accepted submission became (the maintainers' withdrawal,
    with its audit entry in the submitter's name)."""
    row = session.scalar(select(SubmissionRecord).where(SubmissionRecord.public_id == public_id))
    if row is None or (row.submitter_id != user.id and not user.is_maintainer):
        raise ModerationError(f"You have no submission {public_id!r}.", 404)
    if row.run is None:
        raise ModerationError(f"Submission {public_id} is {row.status}: only a published run can be withdrawn.", 409)
    return withdraw_run(session, user, row.run.name, reason)
