"""The application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy.orm import Session, sessionmaker
from starlette.exceptions import HTTPException

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.paths import STATIC, TEMPLATES
from kernelindex.settings import Settings
from kernelindex.web import home, runs
from kernelindex.web.format import FILTERS
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


def problem(status: int, title: str, detail: str) -> JSONResponse:
    """An RFC 9457 problem details response."""
    return JSONResponse(
        {"type": "about:blank", "title": title, "status": status, "detail": detail},
        status_code=status,
        media_type="application/problem+json",
    )


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

    app = FastAPI(title="KernelIndex", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.templates = make_templates()
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(home.router)
    app.include_router(runs.router)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        titles = {404: "Not found", 400: "Bad request", 405: "Method not allowed"}
        return problem(exc.status_code, titles.get(exc.status_code, "Error"), str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return problem(400, "Bad request", detail)

    return app
