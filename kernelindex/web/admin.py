"""Moderation at ``/admin`` (PRODUCT.md §7), for maintainers only.

``GET /admin`` shows the runs held for review, the open reports, withdrawn runs, hidden
and newest attestations and the audit log; ``?run=NAME`` or ``?attestation=NAME`` looks one record up to act on
it. Each action is a POST form with a CSRF token that answers 303 to ``/admin`` (with
a notice) or, for input that cannot be acted on, the page again with the error and the
input kept. Every action counts against the maintainer's rate limit (429 beyond it).
Signed-out visitors are sent to sign in; other accounts get 403.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.datastructures import FormData

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.store import moderation, submissions
from kernelindex.store.accounts import User
from kernelindex.store.moderation import AttestationRow, AuditRow, Counts, HeldRunRow, ReportRow, RunRow
from kernelindex.store.submissions import SubmissionView
from kernelindex.web.auth import NO_STORE, Maintainer
from kernelindex.web.deps import CheckedForm, SessionDep
from kernelindex.web.pages import PageContext
from kernelindex.web.rendering import template_response

# HTML pages and their forms: the OpenAPI document describes the JSON API only.
router = APIRouter(include_in_schema=False)
NOTICE_KEY = "admin_notice"


class AdminPage(PageContext):
    """What ``admin.html`` shows. ``values`` and ``error_form`` are keyed by form
    (``"withdraw:NAME"``, ``"report:ID"``, ...) so a refused form keeps its input."""

    template: ClassVar[str] = "admin.html"

    maintainer: str
    counts: Counts
    notice: str | None = None
    error: str | None = None
    error_form: str | None = None
    values: dict[str, str] = {}
    lookup_run: str = ""
    lookup_attestation: str = ""
    run: RunRow | None = None
    attestation: AttestationRow | None = None
    held: list[HeldRunRow]
    reviewed: list[HeldRunRow]
    # Submitted runs waiting for a decision (oldest first), and the latest decisions.
    submissions: list[SubmissionView] = []
    decided_submissions: list[SubmissionView] = []
    reports: list[ReportRow]
    withdrawn: list[RunRow]
    hidden: list[AttestationRow]
    newest_attestations: list[AttestationRow]
    audit: list[AuditRow]


def admin_page(
    request: Request,
    session: Session,
    user: User,
    status: int = 200,
    run: str | None = None,
    attestation: str | None = None,
    **context: Any,
) -> Response:
    found_run = moderation.find_run(session, run) if run else None
    found_attestation = moderation.find_attestation(session, attestation) if attestation else None
    if "error" not in context:
        if run and found_run is None:
            status, context["error"] = 404, f"There is no run named {run!r}."
        elif attestation and found_attestation is None:
            status, context["error"] = 404, f"There is no attestation named {attestation!r}."
    page = AdminPage(
        maintainer=user.handle,
        counts=moderation.counts(session),
        lookup_run=run or "",
        lookup_attestation=attestation or "",
        run=found_run,
        attestation=found_attestation,
        held=moderation.held_runs(session),
        reviewed=moderation.reviewed_runs(session),
        submissions=submissions.review_queue(session),
        decided_submissions=submissions.reviewed_submissions(session, limit=20),
        reports=moderation.open_reports(session),
        withdrawn=moderation.withdrawn_runs(session),
        hidden=moderation.hidden_attestations(session),
        newest_attestations=moderation.newest_attestations(session),
        audit=moderation.audit_log(session),
        **context,
    )
    return template_response(request, page.template, {"page": page}, status_code=status, headers=NO_STORE)


@router.get("/admin")
def admin(
    request: Request, user: Maintainer, session: SessionDep, run: str | None = None, attestation: str | None = None
) -> Response:
    notice = request.session.pop(NOTICE_KEY, None)
    return admin_page(
        request,
        session,
        user,
        run=run.strip() if run else None,
        attestation=attestation.strip() if attestation else None,
        notice=notice if isinstance(notice, str) else None,
    )


Action = Callable[[Session, User, str], object]


def moderate(
    request: Request,
    session: Session,
    user: User,
    form: FormData,
    key: str,
    field: str,
    act: Action,
    notice: str,
    **lookup: str,
) -> Response:
    """Run ``act`` with the form's ``field`` and commit it (with its audit entry), then
    redirect; a refusal shows the page with the error. Access and the CSRF token are
    checked before, by the handler's dependencies (``Maintainer`` first, then ``CheckedForm``)."""
    text = str(form.get(field, ""))
    limit = LIMITS["moderate"]
    if not request.app.state.rate_limiter.allow(limit, f"user:{user.id}"):
        response = admin_page(request, session, user, 429, error=limit.message, error_form=key, values={key: text})
        response.headers["Retry-After"] = str(limit.window_s)
        return response
    try:
        act(session, user, text)
        session.commit()
    except moderation.ModerationError as exc:
        session.rollback()
        return admin_page(
            request, session, user, exc.status, error=str(exc), error_form=key, values={key: text}, **lookup
        )
    request.session[NOTICE_KEY] = notice
    return RedirectResponse(urls.admin(), status_code=303, headers=NO_STORE)


@router.post("/admin/reports/{report_id}/resolve")
def resolve_report(
    request: Request, report_id: int, user: Maintainer, form: CheckedForm, session: SessionDep
) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"report:{report_id}",
        "note",
        lambda s, user, note: moderation.resolve_report(s, user, report_id, note, dismissed=False),
        f"Report #{report_id} is resolved.",
    )


@router.post("/admin/reports/{report_id}/dismiss")
def dismiss_report(
    request: Request, report_id: int, user: Maintainer, form: CheckedForm, session: SessionDep
) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"report:{report_id}",
        "note",
        lambda s, user, note: moderation.resolve_report(s, user, report_id, note, dismissed=True),
        f"Report #{report_id} is dismissed.",
    )


@router.post("/admin/attestations/{name}/hide")
def hide_attestation(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"hide:{name}",
        "reason",
        lambda s, user, reason: moderation.hide_attestation(s, user, name, reason),
        f"The attestation {name} is hidden; its record is kept.",
        attestation=name,
    )


@router.post("/admin/attestations/{name}/unhide")
def unhide_attestation(
    request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep
) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"unhide:{name}",
        "reason",
        lambda s, user, reason: moderation.unhide_attestation(s, user, name, reason),
        f"The attestation {name} is shown again.",
        attestation=name,
    )


@router.post("/admin/runs/{name}/withdraw")
def withdraw_run(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"withdraw:{name}",
        "reason",
        lambda s, user, reason: moderation.withdraw_run(s, user, name, reason),
        f"The run {name} is withdrawn: it has left the rankings and its page shows the reason.",
        run=name,
    )


@router.post("/admin/runs/{name}/restore")
def restore_run(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"restore:{name}",
        "reason",
        lambda s, user, reason: moderation.restore_run(s, user, name, reason),
        f"The run {name} is restored and ranked again.",
        run=name,
    )


@router.post("/admin/runs/{name}/release")
def release_run(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"release:{name}",
        "note",
        lambda s, user, note: moderation.release_run(s, user, name, note),
        f"The run {name} is released: it is ranked, and its page shows your note.",
    )


@router.post("/admin/runs/{name}/reject")
def reject_run(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return moderate(
        request,
        session,
        user,
        form,
        f"reject:{name}",
        "note",
        lambda s, user, note: moderation.reject_run(s, user, name, note),
        f"The run {name} is rejected: it is kept and shown, never ranked, with your note on its page.",
    )
