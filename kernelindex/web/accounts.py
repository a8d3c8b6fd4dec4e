"""Sign up, sign in, sign out, and the account page with its API keys."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from kernelindex.accounts.csrf import check_csrf
from kernelindex.accounts.passwords import password_problem
from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.db.tables import User
from kernelindex.store import accounts
from kernelindex.store.attestations import attestations_by_user
from kernelindex.web.deps import SessionDep

router = APIRouter()
USER_KEY = "user_id"
HANDLE_KEY = "handle"


def current_user(request: Request, session: Session) -> User | None:
    user_id = request.session.get(USER_KEY)
    if not isinstance(user_id, int):
        return None
    user = session.get(User, user_id)
    if user is None:
        request.session.clear()
    return user


def signed_in_handle(request: Request) -> str | None:
    """The handle to show in the header (from the signed session; no database read)."""
    handle = request.session.get(HANDLE_KEY) if "session" in request.scope else None
    return handle if isinstance(handle, str) else None


def safe_next(target: str | None) -> str:
    """Only same-site paths: an open redirect would let a link send a user anywhere."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/account"


def sign_in(request: Request, user: User) -> None:
    # A fresh session (and CSRF token) at every sign-in, so a planted session id is worthless.
    request.session.clear()
    request.session[USER_KEY] = user.id
    request.session[HANDLE_KEY] = user.handle


def form_page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    return request.app.state.templates.TemplateResponse(
        request, template, {"errors": {}, "values": {}, **context}, status_code=status
    )


def limited(request: Request, template: str, limit_name: str, **context: Any) -> Response | None:
    limit = LIMITS[limit_name]
    address = request.client.host if request.client else "unknown"
    if request.app.state.rate_limiter.allow(limit, address):
        return None
    response = form_page(request, template, 429, errors={"form": limit.message}, **context)
    response.headers["Retry-After"] = str(limit.window_s)
    return response


@router.get("/signup")
def signup_form(request: Request) -> Response:
    return form_page(request, "signup.html")


@router.post("/signup")
async def signup(request: Request, session: SessionDep) -> Response:
    form = await request.form()
    check_csrf(request, form)
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
    return RedirectResponse("/account", status_code=303)


@router.get("/signin")
def signin_form(request: Request, next: str | None = None) -> Response:
    return form_page(request, "signin.html", values={"next": safe_next(next)})


@router.post("/signin")
async def signin(request: Request, session: SessionDep) -> Response:
    form = await request.form()
    check_csrf(request, form)
    handle, password = str(form.get("handle", "")), str(form.get("password", ""))
    values = {"handle": handle, "next": safe_next(str(form.get("next", "")))}
    if refused := limited(request, "signin.html", "signin", values=values):
        return refused
    user = accounts.authenticate(session, handle, password)
    if user is None:
        errors = {"form": "That handle and password do not match an account."}
        return form_page(request, "signin.html", 400, errors=errors, values=values)
    sign_in(request, user)
    return RedirectResponse(values["next"], status_code=303)


@router.post("/signout")
async def signout(request: Request) -> Response:
    check_csrf(request, await request.form())
    request.session.clear()
    return RedirectResponse("/", status_code=303)


def account_page(request: Request, session: Session, user: User, status: int = 200, **context: Any) -> Response:
    written = attestations_by_user(session, user)
    return form_page(
        request,
        "account.html",
        status,
        user=user,
        keys=accounts.api_keys(session, user),
        attestations=written,
        **context,
    )


def signed_in_or_redirect(request: Request, session: Session) -> User | Response:
    user = current_user(request, session)
    if user is None:
        return RedirectResponse(f"/signin?next={quote(request.url.path)}", status_code=303)
    return user


@router.get("/account")
def account(request: Request, session: SessionDep) -> Response:
    user = signed_in_or_redirect(request, session)
    return user if isinstance(user, Response) else account_page(request, session, user)


@router.post("/account/keys")
async def create_key(request: Request, session: SessionDep) -> Response:
    form = await request.form()
    check_csrf(request, form)
    user = signed_in_or_redirect(request, session)
    if isinstance(user, Response):
        return user
    label, scopes = str(form.get("label", "")), [str(scope) for scope in form.getlist("scope")]
    try:
        key, secret = accounts.create_api_key(session, user, label, scopes)
        session.commit()
    except accounts.AccountError as exc:
        session.rollback()
        return account_page(request, session, user, 400, errors={"key": str(exc)}, values={"label": label})
    return account_page(request, session, user, new_key=secret, new_key_label=key.label)


@router.post("/account/keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: int, session: SessionDep) -> Response:
    check_csrf(request, await request.form())
    user = signed_in_or_redirect(request, session)
    if isinstance(user, Response):
        return user
    try:
        accounts.revoke_api_key(session, user, key_id)
        session.commit()
    except accounts.AccountError as exc:
        return account_page(request, session, user, 404, errors={"key": str(exc)})
    return RedirectResponse("/account", status_code=303)
