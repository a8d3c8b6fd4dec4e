"""Signed cookies (the session, the signed-out visitor's CSRF token) whose key is read when first
needed, not when the app is built.

Without ``KERNELINDEX_SECRET_KEY`` the key is kept in the store; a worker that started while
the database was down (or before it was migrated) must still start, answer 503, and sign
cookies once the store is back. The key is read on the first request that can read it, then
kept for the worker's life (``SessionKey``), and shared with the response cache, which must
tell a signed-in visitor's session from a stray or forged cookie without rendering anything.
"""

from __future__ import annotations

import json
from base64 import b64decode
from collections.abc import Callable
from typing import Literal

from itsdangerous import BadData, TimestampSigner
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request, cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.accounts.csrf import COOKIE as CSRF_COOKIE
from kernelindex.accounts.csrf import COOKIE_SCOPE, SIGNER_SCOPE
from kernelindex.accounts.csrf import MAX_AGE_S as CSRF_MAX_AGE_S
from kernelindex.web.errors import database_trouble, unavailable

# The session key that only a sign-in writes (``kernelindex.web.accounts``); the response
# cache tells a signed-in visitor by it.
SIGNED_IN_KEY = "user_id"


class SessionKey:
    """The signing key of the worker's cookies, loaded once by ``load`` (in the threadpool: it may
    read the store). Until then ``signer`` is ``None`` and no cookie can be checked."""

    def __init__(self, load_secret: Callable[[], str], session_cookie: str, max_age: int):
        self.load_secret = load_secret
        self.session_cookie = session_cookie
        self.max_age = max_age
        self.signer: TimestampSigner | None = None

    def load(self) -> TimestampSigner:
        if self.signer is None:
            # Two first requests may both read it: every reader gets the one key of the store.
            self.signer = TimestampSigner(str(self.load_secret()))
        return self.signer

    def signed_in(self, cookie_header: bytes) -> bool:
        """Whether a ``Cookie`` header holds a validly signed, unexpired session of a signed-in
        account. A stray, expired, forged or signed-out session is not one; before the key is
        loaded nothing can be checked, and the answer is yes (the page is then rendered, never
        taken from a shared cache)."""
        if self.signer is None:
            return True
        # Parsed as the session middleware parses it, so that both see the same cookie.
        value = cookie_parser(cookie_header.decode("latin-1")).get(self.session_cookie)
        if value is None:
            return False
        try:
            data = json.loads(b64decode(self.signer.unsign(value.encode("utf-8"), max_age=self.max_age)))
        except (BadData, ValueError):
            return False
        return isinstance(data, dict) and SIGNED_IN_KEY in data


class LazySessionMiddleware(SessionMiddleware):
    """Starlette's ``SessionMiddleware``, its signing key from ``key`` on first use; it also sets
    the CSRF cookie that a form rendered for a signed-out visitor asked for (``kernelindex.accounts.csrf``)."""

    def __init__(
        self,
        app: ASGIApp,
        key: SessionKey,
        same_site: Literal["lax", "strict", "none"],
        https_only: bool,
    ) -> None:
        # A placeholder until the real key is read: nothing is signed or checked with it.
        super().__init__(
            app,
            secret_key="not yet read",
            session_cookie=key.session_cookie,
            max_age=key.max_age,
            same_site=same_site,
            https_only=https_only,
        )
        self.key = key
        # Strict: the token is only ever needed by a form of this site posting to this site.
        self.csrf_flags = "; Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if https_only else "")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await super().__call__(scope, receive, send)
            return
        if self.key.signer is None:
            try:
                await run_in_threadpool(self.key.load)
            except SQLAlchemyError as exc:
                detail = database_trouble(exc)
                if detail is None:
                    raise
                await unavailable(Request(scope), exc, detail)(scope, receive, send)
                return
        assert self.key.signer is not None
        self.signer = self.key.signer
        scope[SIGNER_SCOPE] = self.signer

        async def set_csrf_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and (value := scope.get(COOKIE_SCOPE)):
                cookie = f"{CSRF_COOKIE}={value}; Max-Age={CSRF_MAX_AGE_S}{self.csrf_flags}"
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode("latin-1"))]
            await send(message)

        await super().__call__(scope, receive, set_csrf_cookie)
