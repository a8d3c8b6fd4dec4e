"""Submitting a run: ``POST /api/v1/submissions`` (an API key with ``submissions:write``), the form at
``/submit``, each submission's page, and the maintainers' decisions on them (from ``/admin``).

Both ways in make the same checks (``kernelindex.store.submissions.check_submission``) before anything
is stored; the API answers a refusal as RFC 9457 problem JSON whose ``check`` member names the check
that failed, the form shows it beside the document, and nothing is written. A submission passing every
check counts against its submitter's daily limit and waits for review.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.store import submissions
from kernelindex.store.accounts import User
from kernelindex.store.moderation import ModerationError
from kernelindex.submissions.checks import Refusal, SubmissionRefused
from kernelindex.submissions.document import MAX_BYTES, Submission
from kernelindex.web import admin
from kernelindex.web.api import Problem
from kernelindex.web.auth import (
    NO_STORE,
    WRONG_SCOPE,
    Maintainer,
    SignedInUser,
    bearer_key_holder,
    current_user,
    sign_in_at,
)
from kernelindex.web.deps import CheckedForm, RawBody, SessionDep
from kernelindex.web.errors import TITLES, NotFound
from kernelindex.web.pages import PageContext, page_route, public_url, render_page

router = APIRouter()
SCOPE = "submissions:write"
STATUS_TITLES = {**TITLES, 401: "Unauthorized", 409: "Conflict", 422: "Unprocessable content"}


class SubmissionProblem(Problem):
    """A refused submission: problem details with the check that refused it."""

    check: str = Field(
        description="the check that failed: auth, size, schema, digest, workload, case, unit, below-bound, "
        "duplicate or rate",
        examples=["below-bound"],
    )


class SubmissionReceived(BaseModel):
    """The answer to a submission that passed every check: it waits for review."""

    id: str = Field(examples=["3f9a0c1d2e4b"])
    status: Literal["pending"]
    url: str = Field(description="the submission's page, where its review is followed")


def self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON Schema with its ``$defs`` written in place: in the OpenAPI document a
    ``#/$defs/…`` reference would resolve against the document's root, where they are not. (No
    manifest part contains itself, so this ends.)"""
    definitions = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                rest = {key: value for key, value in node.items() if key != "$ref"}
                return resolve({**definitions[reference.removeprefix("#/$defs/")], **rest})
            return {key: resolve(value) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def refused(refusal: Refusal, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {
        "type": "about:blank",
        "title": STATUS_TITLES.get(refusal.status, "Error"),
        "status": refusal.status,
        "detail": refusal.detail,
        "check": refusal.check,
        **refusal.extra,
    }
    return JSONResponse(body, status_code=refusal.status, media_type="application/problem+json", headers=headers)


def _key_holder(request: Request, session: Session) -> User | Refusal:
    """The owner of the request's Bearer key if it may submit; else the refusal (401 or 403)."""
    user = bearer_key_holder(request, session, SCOPE)
    if user == WRONG_SCOPE:
        return Refusal("auth", 403, f"This API key has no {SCOPE} scope; create a key with it on your account page.")
    if not isinstance(user, User):
        detail = f"Send an unrevoked API key with the {SCOPE} scope as 'Authorization: Bearer ki_…'."
        return Refusal("auth", 401, detail)
    return user


def _submit(request: Request, session: Session, user: User, raw: bytes) -> str | Refusal:
    """Check, count against the daily limit, and store: the one path of the API and the form. The new
    submission's public id, or the refusal."""
    try:
        checked = submissions.check_submission(session, raw)
    except SubmissionRefused as exc:
        return exc.refusal
    # End the reading transaction: the limiter writes through its own connection.
    session.rollback()
    limit = LIMITS["submit"]
    if not request.app.state.rate_limiter.allow(limit, f"user:{user.id}"):
        return Refusal("rate", 429, limit.message)
    try:
        row = submissions.add_submission(session, user, checked, raw)
        session.commit()
    except SubmissionRefused as exc:
        session.rollback()
        request.app.state.rate_limiter.refund(limit, f"user:{user.id}")
        return exc.refusal
    return row.public_id


@router.post(
    urls.api_submissions(),
    status_code=202,
    response_model=SubmissionReceived,
    tags=["submissions"],
    summary="Submit a run for review (API key with the submissions:write scope, as a Bearer token)",
    operation_id="createSubmission",
    # The body is read by hand (so that a missing key is answered before it is parsed): declared here.
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": self_contained(Submission.model_json_schema(by_alias=True))}},
        }
    },
    responses={
        "4XX": {
            "description": "Problem details (RFC 9457) with the failed check: 400 schema, 401/403 auth, 409 "
            "duplicate, 413 size, 422 digest, workload, case, unit or below-bound, 429 rate. Nothing is stored.",
            "content": {"application/problem+json": {"schema": SubmissionProblem.model_json_schema()}},
        }
    },
)
def create_submission(request: Request, raw: RawBody, session: SessionDep) -> Response:
    user = _key_holder(request, session)
    if isinstance(user, Refusal):
        return refused(user)
    result = _submit(request, session, user, raw)
    if isinstance(result, Refusal):
        headers = {"Retry-After": str(LIMITS["submit"].window_s)} if result.check == "rate" else None
        return refused(result, headers)
    url = urls.absolute(public_url(request), urls.submission(result))
    received = SubmissionReceived(id=result, status="pending", url=url)
    return JSONResponse(received.model_dump(), status_code=202, headers={"Location": url})


# --- The form ----------------------------------------------------------------------------------


def _form(request: Request, status: int = 200, error: Refusal | None = None, document: str = "") -> Response:
    response: Response = request.app.state.templates.TemplateResponse(
        request,
        "submit.html",
        {"error": error, "document": document, "max_bytes": MAX_BYTES},
        status_code=status,
        headers=NO_STORE,
    )
    return response


@router.get(urls.submit(), include_in_schema=False)
def submit_form(request: Request, user: SignedInUser) -> Response:
    return _form(request)


@router.post(urls.submit(), include_in_schema=False)
def submit(request: Request, form: CheckedForm, user: SignedInUser, session: SessionDep) -> Response:
    document = str(form.get("document", ""))
    result = _submit(request, session, user, document.encode("utf-8"))
    if isinstance(result, Refusal):
        return _form(request, result.status, result, document)
    return RedirectResponse(urls.submission(result), status_code=303, headers=NO_STORE)


# --- A submission's page -----------------------------------------------------------------------------


class SubmissionPage(PageContext):
    template: ClassVar[str] = "submission.html"

    submission: submissions.SubmissionView
    maintainer: bool  # the viewer reviews: the page offers the decisions
    can_withdraw: bool  # the viewer may withdraw the run it became
    run_url: str | None
    workload_url: str


def _visible(request: Request, session: Session, public_id: str) -> tuple[submissions.SubmissionView, User]:
    """The submission, for its submitter and the maintainers; anyone else is told there is none."""
    user = current_user(request, session)
    if user is None:
        raise sign_in_at(request.url.path, NO_STORE)
    found = submissions.find_submission(session, public_id)
    if found is None or (found.submitter != user.handle and not user.is_maintainer):
        raise NotFound(f"You have no submission {public_id!r}.")
    return found, user


def _page(found: submissions.SubmissionView, user: User) -> SubmissionPage:
    return SubmissionPage(
        submission=found,
        maintainer=user.is_maintainer,
        can_withdraw=found.run_name is not None and not found.run_withdrawn,
        run_url=urls.run(found.run_name) if found.run_name else None,
        workload_url=urls.workload(found.workload_slug),
    )


@page_route(router, "/submissions/{name}")
def submission_page(request: Request, name: str, session: SessionDep) -> Response:
    """``name``: the submission's public id."""
    found, user = _visible(request, session, name)
    response = render_page(request, _page(found, user))
    response.headers.update(NO_STORE)
    return response


@router.post("/submissions/{name}/withdraw", include_in_schema=False)
def withdraw(request: Request, name: str, form: CheckedForm, session: SessionDep) -> Response:
    _, user = _visible(request, session, name)
    try:
        submissions.withdraw_own_run(session, user, name, str(form.get("reason", "")))
        session.commit()
    except ModerationError as exc:
        session.rollback()
        found, user = _visible(request, session, name)
        page = _page(found, user)
        response: Response = request.app.state.templates.TemplateResponse(
            request, page.template, {"page": page, "error": str(exc)}, status_code=exc.status, headers=NO_STORE
        )
        return response
    return RedirectResponse(urls.submission(name), status_code=303, headers=NO_STORE)


# --- A submitter's public page ----------------------------------------------------------------------


class UserPage(PageContext):
    template: ClassVar[str] = "user.html"

    handle: str
    runs: list[submissions.PublishedRun]


@page_route(router, "/users/{handle}")
def user_page(request: Request, handle: str, session: SessionDep) -> Response:
    found = submissions.published_by(session, handle)
    if found is None:
        raise NotFound(f"No account has the handle {handle!r}.")
    return render_page(request, UserPage(handle=found[0], runs=found[1]))


# --- The maintainers' decisions (the queue is on /admin) ----------------------------------------------


def _decision(request: Request, session: Session, user: User, form: Any, public_id: str, decision: str) -> Response:
    actions = {
        "accept": ("note", submissions.accept_submission, "is accepted: its run is published and ranked."),
        "reject": ("reason", submissions.reject_submission, "is rejected; its submitter reads your reason."),
        "request-changes": ("note", submissions.request_changes, "is sent back; its submitter reads what to change."),
    }
    field, act, outcome = actions[decision]
    return admin.moderate(
        request,
        session,
        user,
        form,
        f"submission:{public_id}",
        field,
        lambda s, maintainer, text: act(s, maintainer, public_id, text),
        f"Submission {public_id} {outcome}",
    )


@router.post("/admin/submissions/{name}/accept", include_in_schema=False)
def accept(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return _decision(request, session, user, form, name, "accept")


@router.post("/admin/submissions/{name}/reject", include_in_schema=False)
def reject(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return _decision(request, session, user, form, name, "reject")


@router.post("/admin/submissions/{name}/request-changes", include_in_schema=False)
def request_changes(request: Request, name: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    return _decision(request, session, user, form, name, "request-changes")
