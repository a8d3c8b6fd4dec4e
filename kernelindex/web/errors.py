"""Errors a person can act on: a page for browsers, RFC 9457 problem details for JSON."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from kernelindex.web.rendering import template_response

log = logging.getLogger("kernelindex.web")

# How long a client should wait before asking again while the database is in trouble.
RETRY_AFTER_S = 10
UNREACHABLE = "The database cannot be reached at the moment. Nothing was lost; try again in a few seconds."
TOO_SLOW = "The database did not answer in time. Nothing was lost; try again in a few seconds."
# SQLSTATE 57014, query_canceled: a statement past statement_timeout, or one the site gave up
# waiting for (a server that accepts but does not answer).
QUERY_CANCELED_SQLSTATE = "57014"
READ_ONLY = (
    "The registry is read-only at the moment (maintenance): reading works, but changes cannot be saved. "
    "Nothing was saved; try again later."
)
# SQLSTATE 25006, read_only_sql_transaction: PostgreSQL refusing a write (a read-only
# database, or a hot standby after a failover).
READ_ONLY_SQLSTATE = "25006"
# The database is there but holds no tables (recreated empty, never migrated).
NO_TABLES = (
    "The database holds no KernelIndex tables: it is new or was recreated empty. "
    "Whoever runs this site should run `kernelindex db upgrade` (and load or import the data); "
    "the site comes back by itself."
)
UNDEFINED_TABLE_SQLSTATE = "42P01"

TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Request too large",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


class BadRequest(HTTPException):
    def __init__(self, detail: str):
        super().__init__(status_code=400, detail=detail)


class NotFound(HTTPException):
    def __init__(self, detail: str):
        super().__init__(status_code=404, detail=detail)


class SignInRequired(Exception):
    """A page or form that needs an account, asked for by a visitor who is signed out:
    answered ``303`` to ``location`` (the sign-in page, with where to come back to)."""

    def __init__(self, location: str, headers: dict[str, str] | None = None):
        super().__init__(location)
        self.location = location
        self.headers = headers


def wants_problem_json(request: Request) -> bool:
    path = request.url.path
    accept = request.headers.get("accept", "")
    return (
        path.startswith("/api/")
        or path.endswith((".json", ".atom", ".xml", ".gz", ".txt", ".csv"))
        or ("application/json" in accept and "text/html" not in accept)
    )


def problem(status: int, detail: str, title: str | None = None) -> JSONResponse:
    return JSONResponse(
        {"type": "about:blank", "title": title or TITLES.get(status, "Error"), "status": status, "detail": detail},
        status_code=status,
        media_type="application/problem+json",
    )


def error_response(request: Request, status: int, detail: str) -> Response:
    if wants_problem_json(request):
        return problem(status, detail)
    context = {"status": status, "title": TITLES.get(status, "Error"), "detail": detail}
    return template_response(request, "error.html", context, status_code=status)


def database_trouble(exc: SQLAlchemyError) -> str | None:
    """What to tell a person when ``exc`` means the database is down or refuses writes;
    None when it is a bug (a constraint, a bad query), which stays a logged 500."""
    orig = getattr(exc, "orig", None)
    if getattr(orig, "sqlstate", None) == READ_ONLY_SQLSTATE or "readonly database" in str(orig):
        return READ_ONLY
    if getattr(orig, "sqlstate", None) == UNDEFINED_TABLE_SQLSTATE or str(orig).startswith("no such table"):
        return NO_TABLES
    if getattr(orig, "sqlstate", None) == QUERY_CANCELED_SQLSTATE or isinstance(exc, PoolTimeout):
        return TOO_SLOW
    if isinstance(exc, OperationalError | InterfaceError | DisconnectionError):
        return UNREACHABLE
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return UNREACHABLE
    return None


def unavailable(request: Request, exc: SQLAlchemyError, detail: str) -> Response:
    """The 503 page or problem JSON for database trouble (``database_trouble``'s ``detail``)."""
    # No traceback: this is the database's state, not a bug. Pooled connections are
    # checked before use (pre-ping), so pages come back by themselves when it does.
    log.warning("database trouble on %s: %s", request.url.path, str(exc).splitlines()[0])
    response = error_response(request, 503, detail)
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    response.headers["Cache-Control"] = "no-store"
    return response


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else TITLES.get(exc.status_code, "Error")
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"There is no page at {request.url.path}."
        response = error_response(request, exc.status_code, detail)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(SignInRequired)
    async def sign_in_required(request: Request, exc: SignInRequired) -> Response:
        return RedirectResponse(exc.location, status_code=303, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        parts = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"] if part not in ("query", "path", "body"))
            parts.append(f"{where}: {error['msg']}" if where else error["msg"])
        return error_response(request, 400, "; ".join(parts))

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect) -> Response:
        # The client left before sending its whole request: nothing to answer and no bug,
        # so one line in the log, not a traceback.
        log.info("client disconnected during %s %s", request.method, request.url.path)
        return Response(status_code=400)

    @app.exception_handler(SQLAlchemyError)
    async def database_error(request: Request, exc: SQLAlchemyError) -> Response:
        detail = database_trouble(exc)
        if detail is None:
            return await unexpected(request, exc)
        return unavailable(request, exc, detail)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.url.path)
        return error_response(request, 500, "Something went wrong on our side; it has been logged.")
