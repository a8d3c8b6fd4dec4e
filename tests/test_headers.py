"""Response headers and the small holes around them: HSTS, no-store on secrets, HEAD on every
GET route, control characters in addresses, the Link header, disconnects, slow clients, the
sign-in and attestation limits and a read-only key's answer to a write."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.accounts.ratelimit import LIMITS
from kernelindex.db.tables import Run
from kernelindex.web.request_guard import BodyLimit
from kernelindex.web.server import Protocol, server_options
from tests.factories import PASSWORD, api_key, csrf_token, sign_in, signup
from tests.test_bad_input import get_routes, site, working_path  # noqa: F401 (site is a fixture)

# --- Headers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("https_only", [False, True])
def test_headers_strict_transport_security_only_over_https(make_app, db, https_only):
    with TestClient(make_app(db, https_only=https_only)) as client:
        for path in ("/", "/no-such-page", "/api/v1/workloads"):
            header = client.get(path).headers.get("strict-transport-security")
            assert header == ("max-age=63072000; includeSubDomains" if https_only else None), path


def test_headers_account_and_a_new_key_are_never_stored(empty_client):
    assert signup(empty_client).status_code == 303
    assert empty_client.get("/account").headers["cache-control"] == "no-store"
    data = {"csrf_token": csrf_token(empty_client, "/account"), "label": "ci", "scope": ["read"]}
    created = empty_client.post("/account/keys", data=data)
    assert created.status_code == 200 and "ki_" in created.text
    assert created.headers["cache-control"] == "no-store"


def test_headers_head_is_answered_on_every_get_route(site):  # noqa: F811
    client = site.client
    checked = 0
    for route in get_routes(client.app):
        path = working_path(site, route)
        got, head = client.get(path), client.head(path)
        assert head.status_code == got.status_code, path
        assert head.content == b"", path
        if got.status_code == 200:
            assert head.headers["content-type"] == got.headers["content-type"], path
            assert head.headers.get("content-length") == got.headers.get("content-length"), path
        checked += 1
    assert checked > 50
    assert client.head("/static/kernelindex.css").status_code == 200


# --- Addresses ----------------------------------------------------------------------------------


@pytest.mark.parametrize("character", ["%0D", "%0A", "%09", "%0D%0ASet-Cookie:%20x=1"])
@pytest.mark.parametrize("where", ["/workloads/a{c}b", "/search?q=a{c}b", "/api/v1/workloads?cursor=a{c}b"])
def test_headers_cr_lf_and_tab_in_an_address_are_refused(empty_client, where, character):
    response = empty_client.get(where.format(c=character))
    assert response.status_code == 400
    assert "control characters" in response.text


def asgi_get(app: Any, path: str, query: bytes) -> tuple[int, dict[bytes, bytes]]:
    """GET with the raw query bytes a client may send (httpx would encode them first)."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": [(b"host", b"testserver")],
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("testclient", 50000),
        "root_path": "",
        "http_version": "1.1",
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(message for message in sent if message["type"] == "http.response.start")
    return start["status"], dict(start["headers"])


def test_headers_link_header_is_built_from_parsed_parameters(client):
    query = b'q=x>;rel=preload,<https://evil.example/a.js>;rel="preload"'
    status, headers = asgi_get(client.app, "/search", query)
    assert status == 200
    link = headers[b"link"].decode()
    assert re.fullmatch(r'<[^<>",;]+>; rel="alternate"; type="application/json"', link), link
    assert link.startswith("</search.json?q=")


# --- Disconnects and slow clients ---------------------------------------------------------------


def test_headers_client_disconnect_is_one_line_in_the_log(client, caplog):
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/runs/sol-submission-1/attestations",
        "raw_path": b"/api/v1/runs/sol-submission-1/attestations",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), (b"content-length", b"100")],
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("testclient", 50000),
        "root_path": "",
        "http_version": "1.1",
    }
    with caplog.at_level(logging.INFO):
        asyncio.run(client.app(scope, receive, send))
    assert not [record for record in caplog.records if record.exc_info], caplog.text
    assert [record for record in caplog.records if "disconnected" in record.getMessage()]


def test_headers_slow_body_is_cut_off():
    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read"})

    async def drip() -> dict[str, Any]:
        await asyncio.sleep(0.15)
        return {"type": "http.request", "body": b"x", "more_body": True}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    started = time.monotonic()
    asyncio.run(BodyLimit(app, timeout_s=0.5)(scope, drip, send))
    assert sent[0]["status"] == 408
    assert time.monotonic() - started < 2


@pytest.fixture
def served(monkeypatch) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """A trivial app under uvicorn with ``kernelindex serve``'s options, headers due in 0.5 s."""
    monkeypatch.setattr(Protocol, "header_timeout_s", 0.5)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
            await send({"type": "http.response.body", "body": b"ok"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", **server_options()))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield int(sock.getsockname()[1])
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def test_headers_slow_request_headers_are_cut_off(served):
    with socket.create_connection(("127.0.0.1", served), timeout=5) as slow:
        started = time.monotonic()
        for byte in b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ":
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.1)
            if time.monotonic() - started > 3:
                break
        assert slow.recv(100) == b""  # closed by the server, well before the client finished
        assert time.monotonic() - started < 3
    with socket.create_connection(("127.0.0.1", served), timeout=5) as prompt:
        prompt.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert prompt.recv(100).startswith(b"HTTP/1.1 200")


# --- Limits and keys ----------------------------------------------------------------------------


def failed_sign_in(client: TestClient, handle: str) -> int:
    data = {"csrf_token": csrf_token(client, "/signin"), "handle": handle, "password": "wrong password!"}
    return client.post("/signin", data=data, follow_redirects=False).status_code


def test_headers_failed_sign_ins_are_limited_per_account(make_app, db):
    app = make_app(db)
    with TestClient(app) as owner:
        assert signup(owner, "ada").status_code == 303
    limit = LIMITS["signin_account"]
    # From many addresses, each well under the per-address limit.
    for address in range(limit.count // 5):
        with TestClient(app, client=(f"198.51.100.{address}", 40000)) as guesser:
            assert [failed_sign_in(guesser, "Ada") for _ in range(5)] == [400] * 5
    with TestClient(app, client=("203.0.113.9", 40000)) as another:
        assert failed_sign_in(another, "ada") == 429
        data = {"csrf_token": csrf_token(another, "/signin"), "handle": "ada", "password": PASSWORD}
        assert another.post("/signin", data=data, follow_redirects=False).status_code == 429
    with TestClient(app, client=("203.0.113.10", 40000)) as other:
        assert signup(other, "grace").status_code == 303  # another account is not affected


def test_headers_successful_sign_ins_do_not_count_as_failures(make_app, db):
    with TestClient(make_app(db)) as client:
        assert signup(client, "ada").status_code == 303
        for _ in range(LIMITS["signin"].count + 2):
            sign_in(client, "ada")
        assert failed_sign_in(client, "ada") == 400


def test_headers_attestation_refused_as_invalid_does_not_count(make_app, loaded_db):
    with loaded_db.sessions() as session:
        run = session.scalars(select(Run.name).order_by(Run.id)).first()
    with TestClient(make_app(loaded_db)) as client:
        signup(client, "ada")
        key = api_key(client, ["attest"])
        headers = {"Authorization": f"Bearer {key}"}
        invalid = {"type": "reproduced", "body": "Same figure.", "evidenceUrl": "http://example.com/log"}
        path = f"/api/v1/runs/{run}/attestations"
        for _ in range(LIMITS["attest"].count + 2):
            refused = client.post(path, json=invalid, headers=headers)
            assert refused.status_code == 400, refused.text
        created = client.post(path, json={"type": "reproduced", "body": "Same figure."}, headers=headers)
        assert created.status_code == 201, created.text


def test_headers_read_only_key_gets_403_on_a_write(make_app, loaded_db):
    with loaded_db.sessions() as session:
        run = session.scalars(select(Run.name).order_by(Run.id)).first()
    with TestClient(make_app(loaded_db)) as client:
        signup(client, "ada")
        key = api_key(client, ["read"])
        body = {"type": "reproduced", "body": "Same figure."}
        path = f"/api/v1/runs/{run}/attestations"
        response = client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 403
        assert "attest scope" in response.json()["detail"]
        assert client.post(path, json=body, headers={"Authorization": "Bearer ki_nope"}).status_code == 401
