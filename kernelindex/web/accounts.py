"""Sign up, sign in, sign out, and the account page with its API keys."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.accounts.passwords import password_problem
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.store import accounts
from kernelindex.store.accounts import User
from kernelindex.store.attestations import attestations_by_user
from kernelindex.store.submissions import submissions_of
from kernelindex.web.auth import GENERATION_KEY, HANDLE_KEY, NO_STORE, SignedInUser, current_user
from kernelindex.web.deps import CheckedForm, SessionDep, client_address
from kernelindex.web.rendering import template_response
from kernelindex.web.session_cookie import SIGNED_IN_KEY

# HTML pages and their forms: the OpenAPI document describes the JSON API only.
router = APIRouter(include_in_schema=False)


def signed_in_handle(request: Request) -> str | None:
    """The handle to show in the header (from the signed session; no database read)."""
    handle = request.session.get(HANDLE_KEY) if "session" in request.scope else None
    return handle if isinstance(handle, str) else None


def safe_next(target: str | None) -> str:
    """Only same-site paths: an open redirect would let a link send a user anywhere."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return urls.account()


def sign_in(request: Request, user: User) -> None:
    # A fresh session (and CSRF token) at every sign-in, so a planted session id is worthless.
    request.session.clear()
    request.session[SIGNED_IN_KEY] = user.id
    request.session[HANDLE_KEY] = user.handle
    request.session[GENERATION_KEY] = user.session_generation


def form_page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    return template_response(request, template, {"errors": {}, "values": {}, **context}, status_code=status)


def limited(
    request: Request, template: str, limit_name: str, subject: str | None = None, **context: Any
) -> Response | None:
    """Count one attempt against ``limit_name`` by ``subject`` (the client's address unless
    given); ``None`` while under the limit, else the form again with a 429."""
    limit = LIMITS[limit_name]
    if request.app.state.rate_limiter.allow(limit, subject or client_address(request)):
        return None
    response = form_page(request, template, 429, errors={"form": limit.message}, **context)
    response.headers["Retry-After"] = str(limit.window_s)
    return response


@router.get("/signup")
def signup_form(request: Request) -> Response:
    return form_page(request, "signup.html")


# Handlers that read the store or hash a password are plain functions: FastAPI runs them in
# its threadpool, so an Argon2 hash (tens of milliseconds of CPU) or a wait for the database
# never holds up the event loop. The form is read and its CSRF token checked before, by
# ``CheckedForm``.


@router.post("/signup")
def signup(request: Request, form: CheckedForm, session: SessionDep) -> Response:
    handle, password, confirm = (str(form.get(name, "")) for name in ("handle", "password", "confirm"))
    values = {"handle": handle}
    if refused := limited(request, "signup.html", "signup", values=values):
        return refused
    errors = {}
    if problem := accounts.handle_problem(handle):
        errors["handle"] = problem
    if problem := password_problem(password):
        errors["password"] = problem
    elif password != confirm:
        errors["confirm"] = "The two passwords differ."
    if not errors:
        try:
            user = accounts.create_user(session, handle, password)
            session.commit()
        except accounts.AccountError as exc:
            session.rollback()
            errors["handle"] = str(exc)
    if errors:
        return form_page(request, "signup.html", 400, errors=errors, values=values)
    sign_in(request, user)
    return RedirectResponse(urls.account(), status_code=303)


@router.get("/signin")
def signin_form(request: Request, next: str | None = None) -> Response:
    return form_page(request, "signin.html", values={"next": safe_next(next)})


@router.post("/signin")
def signin(request: Request, form: CheckedForm, session: SessionDep) -> Response:
    handle, password = str(form.get("handle", "")), str(form.get("password", ""))
    values = {"handle": handle, "next": safe_next(str(form.get("next", "")))}
    if refused := limited(request, "signin.html", "signin", values=values):
        return refused
    account_key = f"handle:{handle.strip().casefold()}"
    if refused := limited(request, "signin.html", "signin_account", account_key, values=values):
        return refused
    user = accounts.authenticate(session, handle, password)
    if user is None:
        errors = {"form": "That handle and password do not match an account."}
        return form_page(request, "signin.html", 400, errors=errors, values=values)
    # End this session's transaction first: the limiter writes through its own connection.
    session.commit()
    # Both limits count failures: a successful sign-in takes its attempt back.
    request.app.state.rate_limiter.refund(LIMITS["signin"], client_address(request))
    request.app.state.rate_limiter.refund(LIMITS["signin_account"], account_key)
    sign_in(request, user)
    return RedirectResponse(values["next"], status_code=303)


def end_sessions(request: Request, session: Session) -> None:
    """Sign out on every device: a copy of this cookie, or any other session of the account,
    stops working on every worker, because the store no longer accepts its generation."""
    user = current_user(request, session)
    if user is not None:
        accounts.end_sessions(session, user)
        session.commit()
    request.session.clear()


@router.post("/signout")
def signout(request: Request, form: CheckedForm, session: SessionDep) -> Response:
    end_sessions(request, session)
    return RedirectResponse("/", status_code=303)


@router.post("/account/signout-everywhere")
def signout_everywhere(request: Request, form: CheckedForm, user: SignedInUser, session: SessionDep) -> Response:
    end_sessions(request, session)
    return RedirectResponse(urls.signin(urls.account()), status_code=303)


def account_page(request: Request, session: Session, user: User, status: int = 200, **context: Any) -> Response:
    written = attestations_by_user(session, user)
    response = form_page(
        request,
        "account.html",
        status,
        user=user,
        keys=accounts.api_keys(session, user),
        attestations=written,
        submissions=submissions_of(session, user),
        **context,
    )
    # The account's keys, and a new key's secret shown this once: kept by no cache, not even the browser's.
    response.headers.update(NO_STORE)
    return response


@router.get("/account")
def account(request: Request, user: SignedInUser, session: SessionDep) -> Response:
    return account_page(request, session, user)


@router.post("/account/keys")
def create_key(request: Request, form: CheckedForm, user: SignedInUser, session: SessionDep) -> Response:
    label, scopes = str(form.get("label", "")), [str(scope) for scope in form.getlist("scope")]
    try:
        key, secret = accounts.create_api_key(session, user, label, scopes)
        session.commit()
    except accounts.AccountError as exc:
        session.rollback()
        return account_page(request, session, user, 400, errors={"key": str(exc)}, values={"label": label})
    return account_page(request, session, user, new_key=secret, new_key_label=key.label)


@router.post("/account/keys/{key_id}/revoke")
def revoke_key(request: Request, key_id: int, form: CheckedForm, user: SignedInUser, session: SessionDep) -> Response:
    try:
        accounts.revoke_api_key(session, user, key_id)
        session.commit()
    except accounts.AccountError as exc:
        return account_page(request, session, user, 404, errors={"key": str(exc)})
    return RedirectResponse(urls.account(), status_code=303)
