"""The application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy.orm import Session, sessionmaker
from starlette.middleware.trustedhost import TrustedHostMiddleware

from kernelindex import urls
from kernelindex.accounts.csrf import csrf_token
from kernelindex.accounts.ratelimit import DatabaseCounter, RateLimiter, RedisCounter
from kernelindex.accounts.secrets import session_secret
from kernelindex.db.engine import Timeouts, make_engine, make_sessionmaker
from kernelindex.ingest.reruns.upload import upload_bundle
from kernelindex.paths import STATIC, TEMPLATES
from kernelindex.settings import Settings
from kernelindex.store.version import VersionReader
from kernelindex.web import (
    accounts,
    admin,
    api,
    attestations,
    catalog,
    cite,
    compare,
    confirmation,
    exports,
    figures_page,
    home,
    manifests,
    operators,
    records,
    regressions,
    reruns,
    runs,
    search,
    submissions,
    workloads,
)
from kernelindex.web.accounts import signed_in_handle
from kernelindex.web.errors import install_error_handlers
from kernelindex.web.format import FILTERS
from kernelindex.web.pages import canonical_url
from kernelindex.web.request_guard import BodyLimit, HeadAsGet, RequestGuard
from kernelindex.web.response_cache import ResponseCache
from kernelindex.web.security import SecurityHeaders
from kernelindex.web.session_cookie import LazySessionMiddleware, SessionKey

SESSION_MAX_AGE_S = 14 * 24 * 3600
SESSION_COOKIE = "kernelindex_session"


def make_templates(public_url: str) -> Jinja2Templates:
    """The page templates; ``canonical_url(request)`` is the page's address on ``public_url``."""
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(FILTERS)
    environment.globals.update(
        csrf_token=csrf_token,
        signed_in_handle=signed_in_handle,
        urls=urls,
        public_url=public_url,
        canonical_url=lambda request: canonical_url(public_url, request),
    )
    return Jinja2Templates(env=environment)


def create_app(settings: Settings | None = None, sessions: sessionmaker[Session] | None = None) -> FastAPI:
    """Build the app. ``sessions`` replaces the engine made from ``settings`` (tests use it)."""
    settings = settings or Settings()
    engine = None
    if sessions is None:
        engine = make_engine(settings.database_url, serving=True, timeouts=Timeouts.serving(settings))
        sessions = make_sessionmaker(engine)

    versions = VersionReader(sessions)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        versions.close()
        if engine is not None:
            engine.dispose()

    app = FastAPI(
        title="KernelIndex API",
        version="1",
        description="Read the KernelIndex registry: workloads, runs, implementations, GPUs, models, sources.",
        lifespan=lifespan,
        docs_url=None,  # /api/docs is served by kernelindex.web.api from vendored files: no CDN, no inline script
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.settings = settings
    app.state.sessions = sessions
    app.state.versions = versions
    app.state.templates = make_templates(settings.public_url)
    # Uploaded rerun bundles are checked by the importer, a layer the pages do not import.
    app.state.rerun_uploader = upload_bundle
    app.state.rate_limiter = RateLimiter(
        RedisCounter(settings.redis_url) if settings.redis_url else DatabaseCounter(sessions)
    )
    configured, store = settings.secret_key, sessions

    def load_secret() -> str:
        # Read from the store on first need, not here: a worker must start while the database is down.
        return configured.get_secret_value() if configured else session_secret(store)

    session_key = SessionKey(load_secret, SESSION_COOKIE, SESSION_MAX_AGE_S)
    app.add_middleware(LazySessionMiddleware, key=session_key, same_site="lax", https_only=settings.https_only)
    if settings.response_cache_mb:
        # Outside the session middleware: a cached page is answered without decoding a cookie.
        app.add_middleware(
            ResponseCache,
            reader=versions,
            max_bytes=settings.response_cache_mb * 1024 * 1024,
            session_cookie=SESSION_COOKIE,
            signed_in=session_key.signed_in,
            public_url=settings.public_url,
        )
    # Outside the cache, so that HEAD is answered from it as GET is.
    app.add_middleware(HeadAsGet)
    app.add_middleware(BodyLimit)
    app.add_middleware(RequestGuard)
    # Before anything renders: a request for another host is refused, so a forged Host
    # header never reaches a page (nor the response cache).
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.trusted_hosts, www_redirect=False)
    # Added last so it wraps everything, including the guard's refusals.
    app.add_middleware(SecurityHeaders, hsts=settings.https_only)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # Order matters where paths overlap: more specific routes first.
    for module in (
        submissions,
        api,
        exports,
        records,
        regressions,
        search,
        compare,
        manifests,
        admin,
        operators,
        accounts,
        attestations,
        home,
        workloads,
        cite,
        runs,
        reruns,
        confirmation,
        catalog,
        figures_page,
    ):
        app.include_router(module.router)

    install_error_handlers(app)
    return app
