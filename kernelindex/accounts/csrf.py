"""CSRF protection: a random token required on every form that writes.

A signed-in visitor's token lives in their signed session cookie. A signed-out visitor has
no session, and gets none: their pages are the same for everyone, so that they can be
cached and shared. A form shown to them carries a token of its own, and the response that
shows it sets the same token, signed with the site's key, as a ``SameSite=Strict`` cookie
(a signed double-submit cookie). Another site can neither read that cookie nor make a
browser send it, and cannot forge a valid one without the key, so a POST whose field
matches it came from a page of this site. Such a form is therefore a page of its own (the
report form is ``/runs/{name}/report``), never part of a shared page: it works without
JavaScript, and the run page stays public.

A POST whose field matches neither is refused with 403 before it does anything.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from fastapi import HTTPException, Request
from itsdangerous import BadData, TimestampSigner

FIELD = "csrf_token"
SESSION_KEY = "csrf"
COOKIE = "kernelindex_csrf"
# Where the session middleware puts its signer, and where a render leaves a new cookie to set.
SIGNER_SCOPE = "kernelindex.signer"
COOKIE_SCOPE = "kernelindex.csrf_cookie"
# Set once a token was rendered: the response is then this visitor's alone.
USED_SCOPE = "kernelindex.csrf_used"
# As long as a session: a form left open for a day still posts.
MAX_AGE_S = 14 * 24 * 3600


def csrf_token(request: Request) -> str:
    """The token to render into a form: the session's for a visitor with a session (created on
    first use), else the signed-out visitor's cookie token (a new one is set with the response)."""
    request.scope[USED_SCOPE] = True
    session = request.scope.get("session")
    if session:
        token = session.get(SESSION_KEY)
        if not isinstance(token, str):
            token = secrets.token_urlsafe(32)
            session[SESSION_KEY] = token
        return token
    token = _cookie_token(request)
    if token is None:
        token = secrets.token_urlsafe(32)
        request.scope[COOKIE_SCOPE] = _signer(request).sign(token).decode()
    return token


def uses_token(request: Request) -> bool:
    """Whether this response rendered a CSRF token (so it must not be shared)."""
    return bool(request.scope.get(USED_SCOPE))


def check_csrf(request: Request, form: Any) -> None:
    """Raise 403 unless the form carries the session's token or, for a visitor without a
    session, the token of their signed CSRF cookie. A sign-in starts a new session, so a form
    rendered before it (with the cookie's token) is refused after it."""
    session = request.scope.get("session")
    expected = session.get(SESSION_KEY) if session else _cookie_token(request)
    given = form.get(FIELD)
    if not isinstance(expected, str) or not isinstance(given, str) or not hmac.compare_digest(expected, given):
        raise HTTPException(
            status_code=403,
            detail="This form has expired or did not come from this site. Reload the page and submit it again.",
        )


def _signer(request: Request) -> TimestampSigner:
    signer = request.scope.get(SIGNER_SCOPE)
    assert isinstance(signer, TimestampSigner), "the session middleware sets the signer"
    return signer


def _cookie_token(request: Request) -> str | None:
    """The token of the request's CSRF cookie, if its signature holds and it has not expired."""
    value = request.cookies.get(COOKIE)
    if not value:
        return None
    try:
        return _signer(request).unsign(value, max_age=MAX_AGE_S).decode()
    except (BadData, UnicodeDecodeError):
        return None
