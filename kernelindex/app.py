"""The application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.paths import STATIC, TEMPLATES
from kernelindex.settings import Settings
from kernelindex.web import api, catalog, compare, exports, home, manifests, records, runs, search, workloads
from kernelindex.web.errors import install_error_handlers
from kernelindex.web.format import FILTERS
from kernelindex.web.request_guard import RequestGuard
from kernelindex.web.security import SecurityHeaders


def make_templates() -> Jinja2Templates:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(FILTERS)
    return Jinja2Templates(env=environment)


def create_app(settings: Settings | None = None, sessions: sessionmaker[Session] | None = None) -> FastAPI:
    """Build the app. ``sessions`` replaces the engine made from ``settings`` (tests use it)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = None
        if sessions is None:
            engine = make_engine(settings.database_url)
            app.state.sessions = make_sessionmaker(engine)
        else:
            app.state.sessions = sessions
        yield
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
    app.state.templates = make_templates()
    app.add_middleware(RequestGuard)
    # Added last so it wraps everything, including the guard's refusals.
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # Order matters where paths overlap: more specific routes first.
    for module in (api, exports, records, search, compare, manifests, home, workloads, runs, catalog):
        app.include_router(module.router)

    install_error_handlers(app)
    return app
