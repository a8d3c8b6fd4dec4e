"""Moderation (PRODUCT.md §7): the maintainers' queues and the writes they make.

Every write here records itself in the audit log in the caller's transaction, so an
action and its audit entry are committed together or not at all. Nothing is deleted:
a hidden attestation keeps its row and manifest, a withdrawn run keeps its URL, digest
and history, a run rejected on review stays listed with the note, and a resolved report
keeps its text. Each change of state is made with
one conditional UPDATE, so two maintainers acting at once cannot both succeed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Update, func, select, update
from sqlalchemy.orm import Session, aliased

from kernelindex.db.account_tables import AuditEntry
from kernelindex.db.rerun_tables import RerunResult
from kernelindex.db.tables import Attestation, Environment, Implementation, Report, Run, User, Workload
from kernelindex.manifests.types import AttestationType, RunStatus
from kernelindex.store.accounts import audit, now
from kernelindex.store.manifests import attestation_manifest

MAX_REASON = 500
MAX_NOTE = 2000
MAX_ID = 2**31 - 1  # an id beyond PostgreSQL's integer is no report, not a database error
# Newlines and tabs are fine in a reason; other control characters (NUL above all,
# which PostgreSQL refuses) are not text anyone typed.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ModerationError(ValueError):
    """A moderation request that cannot be met; the message says why.

    ``status`` is the HTTP status a page answers with: 400 for bad input, 404 for an
    unknown record, 409 for a record already in the state asked for.
    """

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


# --- What the queues show -----------------------------------------------------------


@dataclass(frozen=True)
class ReportRow:
    id: int
    run_name: str
    workload_title: str
    reason: str
    body: str
    reporter: str | None  # None: reported by a visitor who was not signed in
    created_at: datetime

    @property
    def reason_text(self) -> str:
        return self.reason.replace("_", " ").capitalize()


@dataclass(frozen=True)
class AttestationRow:
    name: str
    digest: str  # shown to maintainers even while hidden: the public no longer sees it
    run_name: str
    author: str
    type: AttestationType
    body: str
    state: str
    hidden_reason: str | None
    created_at: datetime
    updated_at: datetime  # for a hidden attestation: when it was hidden


@dataclass(frozen=True)
class RunRow:
    name: str
    workload_title: str
    workload_slug: str
    implementation: str
    gpu: str
    latency_ns: int
    status: RunStatus
    withdrawn_at: datetime | None
    withdrawn_reason: str | None
    held_for_review: bool
    review_state: str | None


RELEASED, REJECTED = "released", "rejected"


@dataclass(frozen=True)
class HeldRunRow:
    """A run held for review, as the queue shows it: why it is held and the figures that say so."""

    name: str
    workload_title: str
    workload_slug: str
    implementation: str
    gpu: str
    latency_ns: int
    bound_ns: int | None  # the suite's bound the run beat; None where the workload publishes none
    bound_kind: str  # "speed-of-light bound" (the source's) or "roofline bound" (a controlled rerun's)
    observed_at: datetime
    review_state: str | None  # None while waiting; RELEASED or REJECTED once decided
    reviewed_at: datetime | None
    review_note: str | None

    @property
    def percent_of_bound(self) -> float | None:
        """The latency as a percentage of the bound: below 100 is what a correct kernel cannot reach."""
        return 100 * self.latency_ns / self.bound_ns if self.bound_ns else None

    @property
    def reason(self) -> str:
        return f"Faster than the suite's {self.bound_kind}"


@dataclass(frozen=True)
class AuditRow:
    actor: str | None  # None: done by the system (e.g. the CLI), not by a signed-in user
    action: str
    target: str
    reason: str | None
    created_at: datetime


@dataclass(frozen=True)
class Counts:
    open_reports: int
    hidden_attestations: int
    withdrawn_runs: int
    held_runs: int  # waiting for a decision
    audit_entries: int


def counts(session: Session) -> Counts:
    def count(*where: ColumnElement[bool], table: type = Run) -> int:
        return session.scalar(select(func.count()).select_from(table).where(*where)) or 0

    return Counts(
        open_reports=count(Report.state == "open", table=Report),
        hidden_attestations=count(Attestation.state == "hidden", table=Attestation),
        withdrawn_runs=count(Run.withdrawn_at.is_not(None)),
        held_runs=count(*_WAITING),
        audit_entries=count(table=AuditEntry),
    )


def open_reports(session: Session, limit: int = 100) -> list[ReportRow]:
    """Open reports, newest first."""
    rows = session.execute(
        select(Report, Run.name, Workload.title, User.handle)
        .join(Run, Run.id == Report.run_id)
        .join(Workload, Workload.id == Run.workload_id)
        .outerjoin(User, User.id == Report.user_id)
        .where(Report.state == "open")
        .order_by(Report.created_at.desc(), Report.id.desc())
        .limit(limit)
    )
    return [
        ReportRow(
            id=report.id,
            run_name=run_name,
            workload_title=title,
            reason=report.reason,
            body=report.body,
            reporter=handle,
            created_at=report.created_at,
        )
        for report, run_name, title, handle in rows
    ]


def _attestations(session: Session, *where: ColumnElement[bool], limit: int) -> list[AttestationRow]:
    rows = session.execute(
        select(Attestation, Run.name, User.handle)
        .join(Run, Run.id == Attestation.run_id)
        .join(User, User.id == Attestation.user_id)
        .where(*where)
        .order_by(Attestation.updated_at.desc(), Attestation.id.desc())
        .limit(limit)
    )
    return [
        AttestationRow(
            name=row.name,
            digest=row.digest,
            run_name=run_name,
            author=handle,
            type=row.type,
            body=attestation_manifest(row).spec.body,
            state=row.state,
            hidden_reason=row.hidden_reason,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
        for row, run_name, handle in rows
    ]


def hidden_attestations(session: Session, limit: int = 50) -> list[AttestationRow]:
    """Hidden attestations, most recently hidden first."""
    return _attestations(session, Attestation.state == "hidden", limit=limit)


def newest_attestations(session: Session, limit: int = 20) -> list[AttestationRow]:
    """Published attestations, newest first: what a maintainer may need to hide."""
    return _attestations(session, Attestation.state == "published", limit=limit)


def find_attestation(session: Session, name: str) -> AttestationRow | None:
    found = _attestations(session, Attestation.name == name, limit=1)
    return found[0] if found else None


def _runs(session: Session, *where: ColumnElement[bool], limit: int) -> list[RunRow]:
    rows = session.execute(
        select(Run, Workload.title, Workload.name, Implementation.project, Environment.gpu_product)
        .join(Workload, Workload.id == Run.workload_id)
        .join(Implementation, Implementation.id == Run.implementation_id)
        .join(Environment, Environment.id == Run.environment_id)
        .where(*where)
        .order_by(Run.withdrawn_at.desc(), Run.id.desc())
        .limit(limit)
    )
    return [
        RunRow(
            name=run.name,
            workload_title=title,
            workload_slug=slug,
            implementation=project,
            gpu=gpu,
            latency_ns=run.latency_ns,
            status=run.status,
            withdrawn_at=run.withdrawn_at,
            withdrawn_reason=run.withdrawn_reason,
            held_for_review=run.held_for_review,
            review_state=run.review_state,
        )
        for run, title, slug, project, gpu in rows
    ]


def withdrawn_runs(session: Session, limit: int = 50) -> list[RunRow]:
    """Runs withdrawn by a maintainer, most recently withdrawn first."""
    return _runs(session, Run.withdrawn_at.is_not(None), limit=limit)


def find_run(session: Session, name: str) -> RunRow | None:
    found = _runs(session, Run.name == name, limit=1)
    return found[0] if found else None


# Held by the ingest and not yet decided on; a rejected run stays held but leaves the queue.
_WAITING = (Run.held_for_review.is_(True), Run.review_state.is_(None))


def _held_runs(session: Session, *where: ColumnElement[bool], order: Any, limit: int) -> list[HeldRunRow]:
    rows = session.execute(
        select(
            Run,
            Workload.title,
            Workload.name,
            Workload.sol_aggregate_ms,
            Implementation.project,
            Environment.gpu_product,
            RerunResult.bound_ns,
        )
        .join(Workload, Workload.id == Run.workload_id)
        .join(Implementation, Implementation.id == Run.implementation_id)
        .join(Environment, Environment.id == Run.environment_id)
        .outerjoin(RerunResult, RerunResult.run_id == Run.id)
        .where(*where)
        .order_by(order, Run.id.desc())
        .limit(limit)
    )
    return [
        HeldRunRow(
            name=run.name,
            workload_title=title,
            workload_slug=slug,
            implementation=project,
            gpu=gpu,
            latency_ns=run.latency_ns,
            bound_ns=rerun_bound if rerun_bound is not None else (round(sol_ms * 1_000_000) if sol_ms else None),
            bound_kind="roofline bound" if rerun_bound is not None else "speed-of-light bound",
            observed_at=run.observed_at,
            review_state=run.review_state,
            reviewed_at=run.reviewed_at,
            review_note=run.review_note,
        )
        for run, title, slug, sol_ms, project, gpu, rerun_bound in rows
    ]


def held_runs(session: Session, limit: int = 100) -> list[HeldRunRow]:
    """Runs held for review and not yet decided on, newest observation first."""
    return _held_runs(session, *_WAITING, order=Run.observed_at.desc(), limit=limit)


def reviewed_runs(session: Session, limit: int = 50) -> list[HeldRunRow]:
    """Runs a maintainer has released or rejected, most recently decided first."""
    return _held_runs(session, Run.review_state.is_not(None), order=Run.reviewed_at.desc(), limit=limit)


def audit_log(session: Session, limit: int = 100) -> list[AuditRow]:
    """The newest audit entries first, with the actor's handle."""
    actor = aliased(User)
    rows = session.execute(
        select(AuditEntry, actor.handle)
        .outerjoin(actor, actor.id == AuditEntry.actor_id)
        .order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())
        .limit(limit)
    )
    return [
        AuditRow(
            actor=handle, action=entry.action, target=entry.target, reason=entry.reason, created_at=entry.created_at
        )
        for entry, handle in rows
    ]


# --- The writes ------------------------------------------------------------------------


def checked_text(value: str, limit: int, missing: str | None) -> str | None:
    """``value`` stripped; ``missing`` is the error for an empty value (``None``: optional)."""
    value = value.strip()
    if not value:
        if missing is not None:
            raise ModerationError(missing)
        return None
    if len(value) > limit:
        raise ModerationError(f"Keep it to {limit:,} characters; this is {len(value):,}.")
    if CONTROL.search(value):
        raise ModerationError("The text contains control characters; type it again without them.")
    return value


def _changed(session: Session, statement: Update) -> bool:
    """Run a conditional UPDATE; whether it changed a row (its condition held)."""
    result = cast("CursorResult[Any]", session.execute(statement))
    return result.rowcount > 0


def resolve_report(session: Session, maintainer: User, report_id: int, note: str, dismissed: bool) -> Report:
    """Close an open report as resolved (acted on) or dismissed (nothing to do); the note is optional."""
    text = checked_text(note, MAX_NOTE, None)
    if not 1 <= report_id <= MAX_ID:
        raise ModerationError(f"There is no report #{report_id}.", 404)
    state = "dismissed" if dismissed else "resolved"
    when = now()
    changed = _changed(
        session,
        update(Report)
        .where(Report.id == report_id, Report.state == "open")
        .values(state=state, resolved_at=when, resolved_by_id=maintainer.id, resolution_note=text)
        .execution_options(synchronize_session=False),
    )
    report = session.get(Report, report_id, populate_existing=True)
    if report is None:
        raise ModerationError(f"There is no report #{report_id}.", 404)
    if not changed:
        raise ModerationError(f"Report #{report_id} is already {report.state}.", 409)
    run = session.get_one(Run, report.run_id)
    audit(
        session,
        maintainer,
        f"report.{'dismiss' if dismissed else 'resolve'}",
        f"report #{report_id} on {run.name}",
        text,
    )
    return report


def _attestation_id(session: Session, name: str) -> int:
    found = session.scalar(select(Attestation.id).where(Attestation.name == name))
    if found is None:
        raise ModerationError(f"There is no attestation named {name!r}.", 404)
    return found


def _set_attestation_state(session: Session, maintainer: User, name: str, reason: str, hidden: bool) -> Attestation:
    verb = "hiding" if hidden else "showing again"
    text = checked_text(reason, MAX_REASON, f"Give a reason for {verb} this attestation; it goes in the audit log.")
    attestation_id = _attestation_id(session, name)
    state, previous = ("hidden", "published") if hidden else ("published", "hidden")
    changed = _changed(
        session,
        update(Attestation)
        .where(Attestation.id == attestation_id, Attestation.state == previous)
        .values(state=state, hidden_reason=text if hidden else None, updated_at=now())
        .execution_options(synchronize_session=False),
    )
    if not changed:
        raise ModerationError(f"The attestation {name} is already {state}.", 409)
    audit(session, maintainer, "attestation.hide" if hidden else "attestation.unhide", f"attestation {name}", text)
    return session.get_one(Attestation, attestation_id, populate_existing=True)


def hide_attestation(session: Session, maintainer: User, name: str, reason: str) -> Attestation:
    """Hide a published attestation from the run page and the export; its row and manifest stay."""
    return _set_attestation_state(session, maintainer, name, reason, hidden=True)


def unhide_attestation(session: Session, maintainer: User, name: str, reason: str) -> Attestation:
    """Publish a hidden attestation again; the reason it was hidden stays in the audit log."""
    return _set_attestation_state(session, maintainer, name, reason, hidden=False)


def _run_id(session: Session, name: str) -> int:
    found = session.scalar(select(Run.id).where(Run.name == name))
    if found is None:
        raise ModerationError(f"There is no run named {name!r}.", 404)
    return found


def withdraw_run(session: Session, maintainer: User, name: str, reason: str) -> Run:
    """Withdraw a run: it keeps its URL, digest and history, shows the reason, and leaves the rankings."""
    text = checked_text(reason, MAX_REASON, f"Give a reason for withdrawing {name}; it is shown on the run page.")
    run_id = _run_id(session, name)
    changed = _changed(
        session,
        update(Run)
        .where(Run.id == run_id, Run.withdrawn_at.is_(None))
        .values(withdrawn_at=now(), withdrawn_reason=text)
        .execution_options(synchronize_session=False),
    )
    if not changed:
        raise ModerationError(f"The run {name} is already withdrawn.", 409)
    audit(session, maintainer, "run.withdraw", f"run {name}", text)
    return session.get_one(Run, run_id, populate_existing=True)


def restore_run(session: Session, maintainer: User, name: str, reason: str) -> Run:
    """Undo a withdrawal; the run is ranked again. The withdrawal stays in the audit log."""
    text = checked_text(reason, MAX_REASON, f"Give a reason for restoring {name}; it goes in the audit log.")
    run_id = _run_id(session, name)
    changed = _changed(
        session,
        update(Run)
        .where(Run.id == run_id, Run.withdrawn_at.is_not(None))
        .values(withdrawn_at=None, withdrawn_reason=None)
        .execution_options(synchronize_session=False),
    )
    if not changed:
        raise ModerationError(f"The run {name} is not withdrawn.", 409)
    audit(session, maintainer, "run.restore", f"run {name}", text)
    return session.get_one(Run, run_id, populate_existing=True)


def _review(session: Session, maintainer: User, name: str, note: str, state: str) -> Run:
    verb = "releasing" if state == RELEASED else "rejecting"
    text = checked_text(note, MAX_NOTE, f"Write a note on {verb} {name}; it is shown on the run page.")
    run_id = _run_id(session, name)
    changed = _changed(
        session,
        update(Run)
        .where(Run.id == run_id, *_WAITING)
        # A release ranks the run (it is no longer held); a rejection keeps it held, with the note.
        .values(review_state=state, reviewed_at=now(), review_note=text, held_for_review=state != RELEASED)
        .execution_options(synchronize_session=False),
    )
    if not changed:
        run = session.get_one(Run, run_id, populate_existing=True)
        already = f"already {run.review_state}" if run.review_state else "not held for review"
        raise ModerationError(f"The run {name} is {already}.", 409)
    audit(session, maintainer, f"run.{'release' if state == RELEASED else 'reject'}", f"run {name}", text)
    return session.get_one(Run, run_id, populate_existing=True)


def release_run(session: Session, maintainer: User, name: str, note: str) -> Run:
    """Release a run held for review: it becomes eligible and is ranked; a re-ingest keeps it so."""
    return _review(session, maintainer, name, note, RELEASED)


def reject_run(session: Session, maintainer: User, name: str, note: str) -> Run:
    """Reject a run held for review: it stays out of the rankings, kept, with the note on its page."""
    return _review(session, maintainer, name, note, REJECTED)
