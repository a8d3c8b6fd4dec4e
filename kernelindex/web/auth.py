"""Who is asking, as dependencies: the signed-in account, a maintainer, an API key's holder.

Each reads the store, so each is a plain function that FastAPI runs in its threadpool.
A handler lists the one it needs (``user: SignedInUser``); FastAPI resolves them in the
order of the handler's parameters, so a form's CSRF check declared before the account
is still made first. A signed-out browser is sent to sign in by ``SignInRequired``
(answered ``303`` in ``kernelindex.web.errors``); other refusals are ``HTTPException``s,
a page or problem JSON like every other error.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.store import accounts
from kernelindex.store.accounts import User
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import SignInRequired
from kernelindex.web.session_cookie import SIGNED_IN_KEY

HANDLE_KEY = "handle"
GENERATION_KEY = "generation"
# Moderation pages hold CSRF tokens and unpublished reports: never stored by a cache.
NO_STORE = {"Cache-Control": "no-store"}


def current_user(request: Request, session: SessionDep) -> User | None:
    """The account of the signed session, or ``None``. The store says whether the session is still
    live (not ended by a sign-out); an ended one, or one naming a deleted account, is cleared."""
    user_id = request.session.get(SIGNED_IN_KEY)
    if not isinstance(user_id, int):
        return None
    user = accounts.session_user(session, user_id, request.session.get(GENERATION_KEY))
    if user is None:
        request.session.clear()
    return user


CurrentUser = Annotated[User | None, Depends(current_user)]


def sign_in_at(target: str, headers: dict[str, str] | None = None) -> SignInRequired:
    """Send the browser to sign in, then back to ``target`` (a same-site path)."""
    return SignInRequired(urls.signin(target), headers)


def signed_in_user(request: Request, user: CurrentUser) -> User:
    """The signed-in account; a signed-out browser is sent to sign in and back to this address."""
    if user is None:
        raise sign_in_at(request.url.path)
    return user


SignedInUser = Annotated[User, Depends(signed_in_user)]


def maintainer(request: Request, user: CurrentUser) -> User:
    """The signed-in maintainer; a signed-out browser is sent to sign in, any other account gets 403."""
    if user is None:
        # After signing in, a POST's address would be a 405: come back to the page instead.
        target = request.url.path if request.method == "GET" else urls.admin()
        if request.method == "GET" and request.url.query:
            target += f"?{request.url.query}"
        raise sign_in_at(target, NO_STORE)
    if not user.is_maintainer:
        raise HTTPException(
            status_code=403,
            detail=f"Moderation is for maintainers only, and the account {user.handle} is not a maintainer's.",
        )
    return user


Maintainer = Annotated[User, Depends(maintainer)]


WRONG_SCOPE, NO_KEY = "wrong-scope", "no-key"


def bearer_key_holder(request: Request, session: Session, scope: str) -> User | str:
    """The owner of the request's Bearer key if it is unrevoked and has ``scope``; else ``WRONG_SCOPE``
    (a usable key without it) or ``NO_KEY``. Each caller words its own refusal. The key's use is
    committed at once: the rate limiter writes through its own connection, and an open write here
    would make it wait on SQLite's single writer."""
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    secret = secret.strip() if scheme.lower() == "bearer" else ""
    user = accounts.user_for_api_key(session, secret, scope) if secret else None
    if user is None:
        usable = bool(secret) and any(accounts.user_for_api_key(session, secret, s) for s in accounts.SCOPES)
        if not usable:
            return NO_KEY
        session.commit()
        return WRONG_SCOPE
    session.commit()
    return user


def attest_key_holder(request: Request, session: SessionDep) -> User:
    """The owner of the request's Bearer key, if it is unrevoked and has the attest scope;
    401 without a usable key, 403 for a usable key without that scope."""
    user = bearer_key_holder(request, session, "attest")
    if user == WRONG_SCOPE:
        raise HTTPException(
            status_code=403,
            detail="This API key has no attest scope; writing needs a key with the attest scope.",
        )
    if not isinstance(user, User):
        raise HTTPException(
            status_code=401,
            detail="Send an unrevoked API key with the attest scope as 'Authorization: Bearer ki_…'.",
        )
    return user


AttestKeyHolder = Annotated[User, Depends(attest_key_holder)]
