"""``/admin/runner-keys``: a maintainer approves an operator's runner key for their account, stating
who they are and the machine, and revokes it. As at ``/admin``: maintainers only, a CSRF token on
every form, the moderation rate limit, 303 back with a notice, or the page again with the error and
the input kept; each action is in the audit log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.store.accounts import User
from kernelindex.store.moderation import ModerationError
from kernelindex.store.runner_keys import (
    MAX_MACHINE,
    MAX_OPERATOR_NAME,
    RunnerKeyRow,
    approve_runner_key,
    revoke_runner_key,
    runner_keys,
)
from kernelindex.web.auth import NO_STORE, Maintainer
from kernelindex.web.deps import CheckedForm, SessionDep
from kernelindex.web.pages import PageContext

router = APIRouter(include_in_schema=False)
NOTICE_KEY = "runner_keys_notice"
APPROVE_FIELDS = ("handle", "public_key", "operator_name", "machine")


class RunnerKeysPage(PageContext):
    """What ``admin_runner_keys.html`` shows; ``values`` and ``error_form`` keep a refused form's input
    (``"approve"``, or ``"revoke:KEY_ID"``)."""

    template: ClassVar[str] = "admin_runner_keys.html"

    maintainer: str
    keys: list[RunnerKeyRow]
    max_operator_name: int = MAX_OPERATOR_NAME
    max_machine: int = MAX_MACHINE
    notice: str | None = None
    error: str | None = None
    error_form: str | None = None
    values: dict[str, str] = {}


def keys_page(request: Request, session: Session, user: User, status: int = 200, **context: Any) -> Response:
    page = RunnerKeysPage(maintainer=user.handle, keys=runner_keys(session), **context)
    response: Response = request.app.state.templates.TemplateResponse(
        request, page.template, {"page": page}, status_code=status, headers=NO_STORE
    )
    return response


@router.get(urls.admin_runner_keys())
def runner_keys_admin(request: Request, user: Maintainer, session: SessionDep) -> Response:
    notice = request.session.pop(NOTICE_KEY, None)
    return keys_page(request, session, user, notice=notice if isinstance(notice, str) else None)


def _act(
    request: Request, session: Session, user: User, key: str, values: dict[str, str], act: Callable[[Session], str]
) -> Response:
    """Run ``act(session)`` (returning the notice) and commit it with its audit entry, then redirect;
    a refusal shows the page with the error and the input kept."""
    limit = LIMITS["moderate"]
    if not request.app.state.rate_limiter.allow(limit, f"user:{user.id}"):
        response = keys_page(request, session, user, 429, error=limit.message, error_form=key, values=values)
        response.headers["Retry-After"] = str(limit.window_s)
        return response
    try:
        notice = act(session)
        session.commit()
    except ModerationError as exc:
        session.rollback()
        return keys_page(request, session, user, exc.status, error=str(exc), error_form=key, values=values)
    request.session[NOTICE_KEY] = notice
    return RedirectResponse(urls.admin_runner_keys(), status_code=303, headers=NO_STORE)


@router.post(urls.admin_runner_keys())
def approve_key(request: Request, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    values = {field: str(form.get(field, "")) for field in APPROVE_FIELDS}

    def approve(s: Session) -> str:
        row = approve_runner_key(
            s, user, values["handle"], values["public_key"], values["operator_name"], values["machine"]
        )
        return (
            f"The key {row.key_id} is approved for {row.handle}: bundles it signs may be uploaded with that "
            f"account's API key (reruns scope), credited to {row.operator}."
        )

    return _act(request, session, user, "approve", values, approve)


@router.post("/admin/runner-keys/{key_id}/revoke")
def revoke_key(request: Request, key_id: str, user: Maintainer, form: CheckedForm, session: SessionDep) -> Response:
    reason = str(form.get("reason", ""))

    def revoke(s: Session) -> str:
        row = revoke_runner_key(s, user, key_id, reason)
        return f"The key {row.key_id} of {row.handle} is revoked: it signs no upload now; its runs stay."

    return _act(request, session, user, f"revoke:{key_id}", {f"revoke:{key_id}": reason}, revoke)
