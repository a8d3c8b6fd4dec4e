"""Blocking work (Argon2, every database call) runs in the threadpool, never on the event loop:
one slow sign-in must not hold up the other requests a worker is serving."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup
from fastapi import APIRouter
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event, select

from kernelindex import web
from kernelindex.app import create_app
from kernelindex.db.account_tables import ApiKey
from kernelindex.settings import Settings
from kernelindex.store import accounts
from kernelindex.store.version import VersionReader
from kernelindex.web.deps import checked_form, raw_body
from tests.servers import serving

PASSWORD = "correct horse battery"
RUN = "sol-submission-16893"
SLOW_VERIFY_S = 3.0
# Async dependencies allowed on a write: they only await the request body.
BODY_READERS = {checked_form, raw_body}


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def csrf(client: httpx.Client | TestClient, path: str = "/signup") -> str:
    page = BeautifulSoup(client.get(path).text, "html.parser")
    return page.select_one('input[name="csrf_token"]')["value"]


def test_a_page_is_answered_while_a_sign_in_verifies_its_password(db, monkeypatch):
    with db.sessions.begin() as session:
        accounts.create_user(session, "ada", PASSWORD)
    verifying, verified = threading.Event(), threading.Event()
    real_verify = accounts.verify_password

    def slow_verify(password_hash: str, password: str) -> bool:
        verifying.set()
        time.sleep(SLOW_VERIFY_S)  # blocks its thread, like Argon2: the whole worker if that is the loop's
        verified.set()
        return real_verify(password_hash, password)

    monkeypatch.setattr(accounts, "verify_password", slow_verify)
    app = create_app(Settings(database_url=db.url), sessions=db.sessions)
    with serving(app) as base, httpx.Client(base_url=base, timeout=30) as signer:
        data = {"csrf_token": csrf(signer, "/signin"), "handle": "ada", "password": PASSWORD, "next": "/"}
        answers: list[httpx.Response] = []
        sign_in = threading.Thread(target=lambda: answers.append(signer.post("/signin", data=data)))
        sign_in.start()
        try:
            assert verifying.wait(10), "the sign-in never reached the password check"
            with httpx.Client(base_url=base, timeout=30) as reader:
                page = reader.get("/signup")
            answered_during_sign_in = not verified.is_set()
        finally:
            sign_in.join(30)
    assert page.status_code == 200
    assert answered_during_sign_in, "the page waited for the sign-in's password check: it ran on the event loop"
    assert answers and answers[0].status_code == 303 and answers[0].headers["location"] == "/"


@pytest.fixture
def blocking_calls(monkeypatch) -> Iterator[dict[str, list[str]]]:
    """Records every SQL statement, password hash or check and page-versions read, and which
    of them ran on a thread that is running an event loop."""
    seen: dict[str, list[str]] = {"all": [], "on_loop": []}

    def note(what: str) -> None:
        seen["all"].append(what)
        if on_event_loop():
            seen["on_loop"].append(what)

    def watched(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            note(name)
            return function(*args, **kwargs)

        return call

    def on_sql(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        note(statement[:60])

    monkeypatch.setattr(accounts, "hash_password", watched("hash_password", accounts.hash_password))
    monkeypatch.setattr(accounts, "verify_password", watched("verify_password", accounts.verify_password))
    monkeypatch.setattr(VersionReader, "read", watched("page versions", VersionReader.read))
    event.listen(Engine, "before_cursor_execute", on_sql)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", on_sql)


def test_sign_in_accounts_moderation_and_writes_never_block_the_event_loop(loaded_db, blocking_calls):
    with loaded_db.sessions.begin() as session:
        accounts.create_user(session, "mod", PASSWORD, maintainer=True)
    app = create_app(Settings(database_url=loaded_db.url, public_url="http://testserver"), sessions=loaded_db.sessions)
    with TestClient(app) as client, TestClient(app) as visitor:
        assert visitor.get("/").status_code == 200  # public, through the response cache
        data = {"csrf_token": csrf(client), "handle": "ada", "password": PASSWORD, "confirm": PASSWORD}
        assert client.post("/signup", data=data, follow_redirects=False).status_code == 303
        assert client.get("/account").status_code == 200
        for scope in ("attest", "read"):
            form = {"csrf_token": csrf(client, "/account"), "label": scope, "scope": [scope]}
            assert client.post("/account/keys", data=form).status_code == 200
        with loaded_db.sessions() as session:
            read_key = session.scalar(select(ApiKey.id).where(ApiKey.label == "read"))
        form = {"csrf_token": csrf(client, "/account")}
        assert client.post(f"/account/keys/{read_key}/revoke", data=form, follow_redirects=False).status_code == 303
        attest = {"csrf_token": csrf(client, f"/runs/{RUN}"), "type": "reproduced", "body": "Same on my B200."}
        assert client.post(f"/runs/{RUN}/attestations", data=attest, follow_redirects=False).status_code == 303
        report = {"csrf_token": csrf(client, f"/runs/{RUN}"), "reason": "other", "report_body": "Looks odd."}
        assert client.post(f"/runs/{RUN}/reports", data=report).status_code == 200
        assert client.post("/signout", data={"csrf_token": csrf(client)}, follow_redirects=False).status_code == 303

        refused = visitor.post(f"/api/v1/runs/{RUN}/attestations", json={"type": "reproduced", "body": "x"})
        assert refused.status_code == 401
        form = {"csrf_token": csrf(client, "/signin"), "handle": "mod", "password": PASSWORD, "next": "/admin"}
        assert client.post("/signin", data=form, follow_redirects=False).status_code == 303
        assert client.get("/admin").status_code == 200
        withdraw = {"csrf_token": csrf(client, "/admin"), "reason": "Measured on the wrong GPU."}
        assert client.post(f"/admin/runs/{RUN}/withdraw", data=withdraw, follow_redirects=False).status_code == 303

    assert {"hash_password", "verify_password", "page versions"} <= set(blocking_calls["all"])
    assert len(blocking_calls["all"]) > 50
    assert blocking_calls["on_loop"] == []


def write_routes() -> list[APIRoute]:
    """Every route of every module of ``kernelindex.web`` that writes, plus the pages behind sign-in."""
    routes = []
    for module_info in pkgutil.iter_modules(web.__path__):
        router = getattr(importlib.import_module(f"{web.__name__}.{module_info.name}"), "router", None)
        if isinstance(router, APIRouter):
            routes += [route for route in router.routes if isinstance(route, APIRoute)]
    return [route for route in routes if route.methods - {"GET", "HEAD"} or route.path in {"/account", "/admin"}]


def async_calls(route: APIRoute) -> set[Callable[..., Any]]:
    """The coroutine functions FastAPI would await on the event loop for ``route``: its
    handler and its dependencies, at any depth."""
    found = set()
    pending = [route.dependant]
    while pending:
        dependant = pending.pop()
        call = dependant.call
        if call is not None and (inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(call.__call__)):
            found.add(call)
        pending.extend(dependant.dependencies)
    return found


def test_write_and_sign_in_routes_run_their_work_in_the_threadpool():
    routes = write_routes()
    paths = {route.path for route in routes}
    assert {"/signin", "/signup", "/account/keys", "/admin", "/admin/runs/{name}/withdraw"} <= paths
    assert "/api/v1/runs/{name}/attestations" in paths
    for route in routes:
        # A coroutine handler runs on the event loop; a plain one in the threadpool. Only the
        # readers of the request body may be awaited, and they touch neither store nor password.
        assert async_calls(route) <= BODY_READERS, f"{sorted(route.methods)} {route.path}"
