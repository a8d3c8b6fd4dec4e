"""Signed session cookies whose key is read when first needed, not when the app is built.

Without ``KERNELINDEX_SECRET_KEY`` the key is kept in the store; a worker that started while
the database was down (or before it was migrated) must still start, answer 503, and sign
cookies once the store is back. The key is read on the first request that can read it, then
kept for the worker's life.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from itsdangerous import TimestampSigner
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from kernelindex.web.errors import database_trouble, unavailable


class LazySessionMiddleware(SessionMiddleware):
    """Starlette's ``SessionMiddleware``, its signing key from ``load_secret`` on first use."""

    def __init__(
        self,
        app: ASGIApp,
        load_secret: Callable[[], str],
        session_cookie: str,
        max_age: int,
        same_site: Literal["lax", "strict", "none"],
        https_only: bool,
    ) -> None:
        # A placeholder until the real key is read: nothing is signed or checked with it.
        super().__init__(
            app,
            secret_key="not yet read",
            session_cookie=session_cookie,
            max_age=max_age,
            same_site=same_site,
            https_only=https_only,
        )
        self.load_secret = load_secret
        self.loaded = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self.loaded:
            try:
                # Two first requests may both read it: every reader gets the one key of the store.
                secret = await run_in_threadpool(self.load_secret)
            except SQLAlchemyError as exc:
                detail = database_trouble(exc)
                if detail is None:
                    raise
                await unavailable(Request(scope), exc, detail)(scope, receive, send)
                return
            self.signer = TimestampSigner(str(secret))
            self.loaded = True
        await super().__call__(scope, receive, send)
