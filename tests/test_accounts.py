"""Accounts: sign up, sign in, sign out, sessions, CSRF, rate limits, API keys, body caps."""

from __future__ import annotations

import re
import time

import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner
from fastapi.testclient import TestClient
from itsdangerous import TimestampSigner
from sqlalchemy import select

from kernelindex.accounts.ratelimit import LIMITS, DatabaseCounter, RateLimiter, RedisCounter
from kernelindex.accounts.secrets import session_secret
from kernelindex.cli import main
from kernelindex.db.account_tables import ApiKey
from kernelindex.db.tables import User
from kernelindex.store import accounts
from tests.factories import PASSWORD, csrf_token, sign_in, signup


def test_signup_signs_in_and_the_cookie_is_protected(empty_client):
    response = signup(empty_client)
    assert response.status_code == 303 and response.headers["location"] == "/account"
    cookie = response.headers["set-cookie"]
    assert "kernelindex_session=" in cookie and "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
    account = empty_client.get("/account")
    assert account.status_code == 200
    assert BeautifulSoup(account.text, "html.parser").select_one("h1").get_text() == "ada"
    assert '<a href="/account">ada</a>' in empty_client.get("/").text


@pytest.mark.parametrize(
    ("handle", "password", "confirm", "field", "message"),
    [
        ("a", PASSWORD, PASSWORD, "handle", "2 to 32 letters"),
        ("ada lovelace", PASSWORD, PASSWORD, "handle", "2 to 32 letters"),
        ("<script>", PASSWORD, PASSWORD, "handle", "2 to 32 letters"),
        ("ada", "short", "short", "password", "at least 10 characters"),
        ("ada", PASSWORD, PASSWORD + "x", "confirm", "The two passwords differ."),
    ],
)
def test_signup_errors_are_shown_on_the_form_with_the_input_kept(
    empty_client, db, handle, password, confirm, field, message
):
    response = signup(empty_client, handle, password, confirm)
    assert response.status_code == 400
    page = BeautifulSoup(response.text, "html.parser")
    assert message in page.select_one(f"#e-{field}").get_text()
    assert page.select_one("#f-handle")["value"] == handle
    assert "<script>" not in response.text.split("<main", 1)[1]
    with db.sessions() as session:
        assert session.scalar(select(User)) is None


def test_handles_are_unique_regardless_of_case(empty_client):
    assert signup(empty_client, "Ada").status_code == 303
    empty_client.cookies.clear()
    response = signup(empty_client, "ada")
    assert response.status_code == 400 and "is taken" in response.text


@pytest.mark.parametrize("given", [None, "", "forged-token"])
def test_a_form_without_this_sessions_csrf_token_is_refused(empty_client, db, given):
    csrf_token(empty_client, "/signup")
    data = {"handle": "ada", "password": PASSWORD, "confirm": PASSWORD}
    if given is not None:
        data["csrf_token"] = given
    response = empty_client.post("/signup", data=data, headers={"Accept": "text/html"})
    assert response.status_code == 403
    assert "did not come from this site" in response.text
    with db.sessions() as session:
        assert session.scalar(select(User)) is None


def test_signin_signout_and_safe_redirects(empty_client):
    signup(empty_client)
    empty_client.post("/signout", data={"csrf_token": csrf_token(empty_client, "/account")})
    assert empty_client.get("/account", follow_redirects=False).headers["location"] == "/signin?next=/account"
    bad = empty_client.post(
        "/signin",
        data={"csrf_token": csrf_token(empty_client, "/signin"), "handle": "ada", "password": "wrong password"},
    )
    assert bad.status_code == 400 and "do not match an account" in bad.text
    assert BeautifulSoup(bad.text, "html.parser").select_one("#f-handle")["value"] == "ada"
    data = {
        "csrf_token": csrf_token(empty_client, "/signin"),
        "handle": "ADA",
        "password": PASSWORD,
        "next": "//evil.example/x",
    }
    good = empty_client.post("/signin", data=data, follow_redirects=False)
    assert good.status_code == 303 and good.headers["location"] == "/account"
    # Signing in starts a new session, so the old form's token no longer works.
    data["next"] = "/workloads"
    assert empty_client.post("/signin", data=data, follow_redirects=False).status_code == 403
    data["csrf_token"] = csrf_token(empty_client, "/signin")
    assert empty_client.post("/signin", data=data, follow_redirects=False).headers["location"] == "/workloads"


def test_a_forged_or_expired_session_cookie_signs_nobody_in(empty_client, db):
    signup(empty_client)
    cookie = empty_client.cookies["kernelindex_session"]
    # Each cookie replaces the jar's: a second cookie of the same name (set for another domain) would
    # be sent beside the first, and the server may read either.
    empty_client.cookies.clear()
    empty_client.cookies.set("kernelindex_session", cookie[:-3] + ("AAA" if not cookie.endswith("AAA") else "BBB"))
    assert empty_client.get("/account", follow_redirects=False).status_code == 303
    payload = cookie.split(".")[0]
    signer = TimestampSigner(session_secret(db.sessions))
    old = signer.sign(payload.encode())
    # Re-sign the same session as of 15 days ago: past the 14-day lifetime.
    signer.get_timestamp = lambda: int(time.time()) - 15 * 86400  # type: ignore[method-assign]
    empty_client.cookies.clear()
    empty_client.cookies.set("kernelindex_session", signer.sign(payload.encode()).decode())
    assert empty_client.get("/account", follow_redirects=False).status_code == 303
    empty_client.cookies.clear()
    empty_client.cookies.set("kernelindex_session", old.decode())
    assert empty_client.get("/account", follow_redirects=False).status_code == 200


def _signed_out_by(client, path: str) -> None:  # type: ignore[no-untyped-def]
    response = client.post(path, data={"csrf_token": csrf_token(client, "/account")}, follow_redirects=False)
    assert response.status_code == 303


@pytest.mark.parametrize("path", ["/signout", "/account/signout-everywhere"])
def test_a_cookie_saved_before_signout_no_longer_signs_in(empty_client, path):
    signup(empty_client)
    saved = empty_client.cookies["kernelindex_session"]
    _signed_out_by(empty_client, path)
    empty_client.cookies.set("kernelindex_session", saved)
    replayed = empty_client.get("/account", follow_redirects=False)
    assert replayed.status_code == 303 and replayed.headers["location"] == "/signin?next=/account"
    # A fresh sign-in works again.
    empty_client.cookies.clear()
    sign_in(empty_client, "ada")
    assert empty_client.get("/account", follow_redirects=False).status_code == 200


def test_signout_ends_every_session_of_the_account_on_every_worker(make_app, db):
    # Two apps over one store stand for two workers: each has its own engine and no shared memory.
    with TestClient(make_app(db)) as laptop, TestClient(make_app(db)) as phone:
        signup(laptop)
        sign_in(phone, "ada")
        assert phone.get("/account", follow_redirects=False).status_code == 200
        page = BeautifulSoup(laptop.get("/account").text, "html.parser")
        assert page.select_one('form[action="/account/signout-everywhere"] input[name="csrf_token"]')
        _signed_out_by(laptop, "/account/signout-everywhere")
        assert phone.get("/account", follow_redirects=False).status_code == 303
        assert laptop.get("/account", follow_redirects=False).status_code == 303


def test_signout_everywhere_needs_the_forms_csrf_token(empty_client):
    signup(empty_client)
    refused = empty_client.post("/account/signout-everywhere", data={"csrf_token": "forged"})
    assert refused.status_code == 403
    assert empty_client.get("/account", follow_redirects=False).status_code == 200


def test_signin_attempts_are_rate_limited_per_address(empty_client):
    limit = LIMITS["signin"].count
    csrf = csrf_token(empty_client, "/signin")
    statuses = [
        empty_client.post("/signin", data={"csrf_token": csrf, "handle": "nobody", "password": "x" * 12}).status_code
        for _ in range(limit + 1)
    ]
    assert statuses == [400] * limit + [429]
    last = empty_client.post("/signin", data={"csrf_token": csrf, "handle": "nobody", "password": "x" * 12})
    assert last.status_code == 429 and "Too many sign-in attempts" in last.text and last.headers["retry-after"]


def test_api_keys_are_shown_once_stored_hashed_and_revocable(empty_client, db):
    signup(empty_client)
    response = empty_client.post(
        "/account/keys",
        data={"csrf_token": csrf_token(empty_client, "/account"), "label": "laptop", "scope": ["read", "attest"]},
    )
    assert response.status_code == 200
    secret = re.search(r"<code>(ki_[0-9a-f]{12}_[A-Za-z0-9_-]+)</code>", response.text)[1]
    assert secret not in empty_client.get("/account").text
    with db.sessions() as session:
        key = session.scalar(select(ApiKey))
        assert key.key_hash != secret and secret not in key.key_hash and key.scopes == ["attest", "read"]
        assert accounts.user_for_api_key(session, secret, "attest").handle == "ada"
        assert accounts.user_for_api_key(session, secret[:-1] + "x", "attest") is None
        key_id = key.id
    revoked = empty_client.post(
        f"/account/keys/{key_id}/revoke", data={"csrf_token": csrf_token(empty_client, "/account")}
    )
    assert revoked.status_code == 200 and "revoked" in revoked.text
    with db.sessions() as session:
        assert accounts.user_for_api_key(session, secret, "attest") is None


@pytest.mark.parametrize(("label", "scopes"), [("", ["read"]), ("x" * 101, ["read"]), ("k", []), ("k", ["admin"])])
def test_bad_api_key_requests_are_explained(empty_client, db, label, scopes):
    signup(empty_client)
    response = empty_client.post(
        "/account/keys", data={"csrf_token": csrf_token(empty_client, "/account"), "label": label, "scope": scopes}
    )
    assert response.status_code == 400
    assert "label" in response.text.lower() or "scopes" in response.text.lower()
    with db.sessions() as session:
        assert session.scalar(select(ApiKey)) is None


def test_oversized_bodies_are_refused(empty_client):
    response = empty_client.post(
        "/signup", content=b"x" * (65 * 1024), headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 413


def test_database_rate_limit_counts_across_limiters(db):
    # Two limiters over one store stand for two worker processes.
    clock = lambda: 1_000_000.0  # noqa: E731
    first, second = RateLimiter(DatabaseCounter(db.sessions), clock), RateLimiter(DatabaseCounter(db.sessions), clock)
    limit = LIMITS["attest"]
    allowed = [(first if i % 2 else second).allow(limit, "user:1") for i in range(limit.count + 2)]
    assert allowed == [True] * limit.count + [False, False]
    later = RateLimiter(DatabaseCounter(db.sessions), lambda: 1_000_000.0 + limit.window_s)
    assert later.allow(limit, "user:1")


def test_redis_rate_limit_counts_across_limiters():
    redis = pytest.importorskip("redis")
    url = "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url).flushdb()
    except redis.exceptions.ConnectionError as exc:
        pytest.skip(f"Redis is not running at {url}: {exc}")
    clock = lambda: 2_000_000.0  # noqa: E731
    limiters = [RateLimiter(RedisCounter(url), clock) for _ in range(2)]
    limit = LIMITS["signup"]
    assert [limiters[i % 2].allow(limit, "10.0.0.1") for i in range(limit.count + 1)] == [True] * limit.count + [False]


def test_cli_creates_a_maintainer_with_a_password_from_stdin(database_url):
    result = CliRunner().invoke(
        main,
        ["users", "create", "mod", "--maintainer", "--password-stdin", "--database-url", database_url],
        input=PASSWORD + "\n",
    )
    assert result.exit_code == 0, result.output
    again = CliRunner().invoke(
        main, ["users", "create", "MOD", "--password-stdin", "--database-url", database_url], input=PASSWORD + "\n"
    )
    assert again.exit_code == 1 and "is taken" in again.output
    short = CliRunner().invoke(
        main, ["users", "create", "x2", "--password-stdin", "--database-url", database_url], input="short\n"
    )
    assert short.exit_code == 1 and "at least 10 characters" in short.output


def test_sign_ups_are_rate_limited_per_address(empty_client, db):
    limit = LIMITS["signup"].count
    statuses = []
    for n in range(limit + 1):
        empty_client.cookies.clear()
        statuses.append(signup(empty_client, f"user{n}").status_code)
    assert statuses == [303] * limit + [429]
    with db.sessions() as session:
        assert len(session.scalars(select(User)).all()) == limit
