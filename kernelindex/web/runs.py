"""Run detail pages, their JSON twins, and the forms on them: attestations and reports."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.store.attestations import (
    REPORT_REASONS,
    SubmissionError,
    add_attestation,
    add_report,
    attestations_of_run,
)
from kernelindex.store.common import history
from kernelindex.store.confirmation import confirmation_of_run
from kernelindex.store.page_scopes import run_page_scopes
from kernelindex.store.reruns import agreements_of_run, rerun_of_run
from kernelindex.store.run_queries import Run, run_standing
from kernelindex.store.run_queries import find_run as run_by_ref
from kernelindex.store.runner_keys import runner_key
from kernelindex.store.submissions import submission_of_run
from kernelindex.store.version import LISTS
from kernelindex.web.auth import current_user
from kernelindex.web.confirmation import confirmation_part
from kernelindex.web.deps import CheckedForm, SessionDep, client_address
from kernelindex.web.errors import NotFound, SignInRequired
from kernelindex.web.pages import PRIVATE_CACHE, page_route, public_url, render_page
from kernelindex.web.rendering import template_response
from kernelindex.web.rerun_part import rerun_part
from kernelindex.web.response_cache import depends_on
from kernelindex.web.run_page import FormState, build_run_page, parse_accessed

# HTML pages and their forms: the OpenAPI document describes the JSON API only.
router = APIRouter(include_in_schema=False)
FORM_FIELDS = ("type", "body", "body_format", "evidence_url", "measured_latency_ns", "environment_summary")


def find_run(session: Session, name: str) -> Run:
    run = run_by_ref(session, name)
    if run is None:
        raise NotFound(f"No run is named {name!r}. Run names look like sol-submission-16893.")
    return run


def render_run(
    request: Request,
    session: Session,
    run: Run,
    status_code: int = 200,
    accessed: str | None = None,
    attestation_form: FormState | None = None,
) -> Response:
    confirmation = confirmation_of_run(session, run)
    if confirmation is not None:
        # Its bound is read from every KernelBench rerun, not only this workload's.
        depends_on(request, [LISTS])
    context = build_run_page(
        run,
        run_standing(session, run),
        history(session, "BenchmarkRun", run.name),
        public_url(request),
        parse_accessed(accessed),
        attestations_of_run(session, run.id),
        signed_in=current_user(request, session) is not None,
        attestation_form=attestation_form,
        rerun=(
            rerun_part(result, run.protocol.name, runner_key(session, result.bundle.key_id))
            if (result := rerun_of_run(session, run.id))
            else None
        ),
        confirmation=confirmation_part(confirmation) if confirmation is not None else None,
        agreements=agreements_of_run(session, run) if result else None,
        submitted=submission_of_run(session, run.id),
    )
    return render_page(request, context, status_code=status_code)


@page_route(router, "/runs/{name}")
def show_run(request: Request, name: str, session: SessionDep, accessed: str | None = None) -> Response:
    run = find_run(session, name)
    depends_on(request, run_page_scopes(run))
    return render_run(request, session, run, accessed=accessed)


# The two forms are plain functions, run in the threadpool with their reads and writes;
# ``CheckedForm`` has read the form and checked its CSRF token before.


@router.post("/runs/{name}/attestations")
def attest(request: Request, name: str, form: CheckedForm, session: SessionDep) -> Response:
    run = find_run(session, name)
    # Not the ``SignedInUser`` dependency: an unknown run is a 404 first, and the way back
    # after signing in is the run's attestations.
    user = current_user(request, session)
    if user is None:
        raise SignInRequired(urls.signin(urls.run(run.name) + "#attestations"))
    values = {field: str(form.get(field, "")) for field in FORM_FIELDS}
    fields: dict[str, object] = dict(values)
    if values["measured_latency_ns"].strip().isdigit():
        fields["measured_latency_ns"] = int(values["measured_latency_ns"])
    if not request.app.state.rate_limiter.allow(LIMITS["attest"], f"user:{user.id}"):
        state = FormState(errors={"form": LIMITS["attest"].message}, values=values)
        return render_run(request, session, run, 429, attestation_form=state)
    try:
        add_attestation(session, user, run, fields)
        session.commit()
    except SubmissionError as exc:
        session.rollback()
        # Refused as invalid: nothing was added, so nothing counts against the daily limit.
        request.app.state.rate_limiter.refund(LIMITS["attest"], f"user:{user.id}")
        return render_run(request, session, run, 400, attestation_form=FormState(errors=exc.problems, values=values))
    return RedirectResponse(urls.run(run.name) + "#attestations", status_code=303)


@dataclass(frozen=True)
class ReportForm:
    """The report form as a page of its own (``report.html``)."""

    name: str
    run_url: str
    report_form: FormState
    report_reasons: dict[str, str]


def render_report_form(request: Request, run: Run, state: FormState, status_code: int = 200) -> Response:
    """The report form, with this visitor's CSRF token: a page for them alone, kept by no cache."""
    page = ReportForm(run.name, urls.run(run.name), state, REPORT_REASONS)
    return template_response(
        request, "report.html", {"page": page}, status_code=status_code, headers={"Cache-Control": PRIVATE_CACHE}
    )


@router.get("/runs/{name}/report")
def report_form(request: Request, name: str, session: SessionDep) -> Response:
    return render_report_form(request, find_run(session, name), FormState())


@router.post("/runs/{name}/reports")
def report(request: Request, name: str, form: CheckedForm, session: SessionDep) -> Response:
    run = find_run(session, name)
    values = {"reason": str(form.get("reason", "")), "report_body": str(form.get("report_body", ""))}
    if not request.app.state.rate_limiter.allow(LIMITS["report"], client_address(request)):
        refused = FormState(errors={"form": LIMITS["report"].message}, values=values)
        return render_report_form(request, run, refused, 429)
    try:
        add_report(session, run, values["reason"], values["report_body"], current_user(request, session))
        session.commit()
    except SubmissionError as exc:
        session.rollback()
        return render_report_form(request, run, FormState(errors=exc.problems, values=values), 400)
    return render_report_form(request, run, FormState(done=True))
