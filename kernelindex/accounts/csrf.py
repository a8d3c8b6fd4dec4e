"""CSRF protection: a random token per session, required on every form that writes.

The token lives in the signed session cookie and is rendered into each form; a POST
whose field does not match is refused with 403 before it does anything.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from fastapi import HTTPException, Request

FIELD = "csrf_token"
SESSION_KEY = "csrf"


def csrf_token(request: Request) -> str:
    """This session's token, created on first use (also for visitors who are signed out)."""
    token = request.session.get(SESSION_KEY)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session[SESSION_KEY] = token
    return token


def check_csrf(request: Request, form: Any) -> None:
    """Raise 403 unless the form carries this session's token."""
    expected = request.session.get(SESSION_KEY)
    given = form.get(FIELD)
    if not isinstance(expected, str) or not isinstance(given, str) or not hmac.compare_digest(expected, given):
        raise HTTPException(
            status_code=403,
            detail="This form has expired or did not come from this site. Reload the page and submit it again.",
        )
