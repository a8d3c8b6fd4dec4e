"""The per-worker response cache: served from memory while the catalogue is unchanged, and
never stale after a write (ingest, attestation, moderation), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from kernelindex.db.account_tables import RateLimitCounter
from kernelindex.db.tables import Run, Source, User, Workload
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings
from kernelindex.store import accounts, moderation
from kernelindex.store.attestations import add_attestation
from kernelindex.store.ingest import apply_batch
from kernelindex.store.version import EVERYTHING, LISTS, confine_writes, current_version, workload_scope
from kernelindex.web.response_cache import ResponseCache
from tests.factories import PASSWORD, signup
from tests.upstream import FakeUpstream

WORKLOAD = "l1-040-conv2d-residual-block"
LEADER = "sol-submission-36270"


@pytest.fixture
def site(loaded_db, make_app) -> Iterator[tuple[TestClient, ResponseCache]]:
    app = make_app(loaded_db)
    with TestClient(app) as client:
        stack = app.middleware_stack
        while not isinstance(stack, ResponseCache):
            stack = stack.app
        yield client, stack


def leaderboard(client: TestClient) -> dict:
    response = client.get(f"/workloads/{WORKLOAD}.json")
    assert response.status_code == 200
    return response.json()


def test_response_cache_serves_an_unchanged_page_from_memory(site):
    client, cache = site
    first = client.get(f"/workloads/{WORKLOAD}")
    hits = cache.hits
    second = client.get(f"/workloads/{WORKLOAD}")
    assert cache.hits == hits + 1
    assert second.content == first.content
    assert second.headers["etag"] == first.headers["etag"]
    assert second.headers["content-security-policy"] == first.headers["content-security-policy"]
    again = client.get(f"/workloads/{WORKLOAD}", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_an_oversized_page_is_logged_once_per_path_and_still_served(site, monkeypatch, caplog):
    from kernelindex.web import response_cache

    client, cache = site
    monkeypatch.setattr(response_cache, "MAX_ENTRY_BYTES", 1024)  # every leaderboard is larger
    with caplog.at_level("WARNING", logger="kernelindex.response_cache"):
        first = client.get(f"/workloads/{WORKLOAD}")
        hits = cache.hits
        second = client.get(f"/workloads/{WORKLOAD}")
        client.get(f"/workloads/{WORKLOAD}.json")
    assert first.status_code == second.status_code == 200 and second.content == first.content
    assert cache.hits == hits  # rendered again, not kept
    logged = [r.getMessage() for r in caplog.records if r.name == "kernelindex.response_cache"]
    assert logged == [
        f"response cache: /workloads/{WORKLOAD} is over the 1,024 bytes a page may take, so it is rendered for every "
        "request",
        f"response cache: /workloads/{WORKLOAD}.json is over the 1,024 bytes a page may take, so it is rendered for "
        "every request",
    ]


def test_a_page_asked_for_many_times_at_once_is_rendered_once(site):
    """Single flight: twelve requests at once for a page not in the cache get one render between them."""
    import httpx

    client, cache = site
    app = client.app

    async def at_once() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as browser:
            return list(await asyncio.gather(*(browser.get(f"/workloads/{WORKLOAD}") for _ in range(12))))

    misses, joined = cache.misses, cache.joined
    responses = client.portal.call(at_once)
    assert {r.status_code for r in responses} == {200} and len({r.content for r in responses}) == 1
    assert cache.misses == misses + 1 and cache.joined == joined + 11
    assert cache.rendering == {}


def test_response_cache_leaves_byte_ranges_to_the_app(site):
    client, cache = site
    client.get("/exports/catalog.jsonl.gz")
    hits = cache.hits
    part = client.get("/exports/catalog.jsonl.gz", headers={"Range": "bytes=0-9"})
    assert part.status_code == 206 and len(part.content) == 10
    assert cache.hits == hits


def test_response_cache_sees_a_withdrawal_on_the_next_request(site, loaded_db):
    client, _ = site
    before = leaderboard(client)
    assert before["ranked"][0]["name"] == LEADER
    leaderboard(client)  # cached now
    with loaded_db.sessions.begin() as session:
        maintainer = accounts.create_user(session, "mod", PASSWORD, maintainer=True)
        moderation.withdraw_run(session, maintainer, LEADER, "Timing harness was patched.")
    after = leaderboard(client)
    assert after["ranked"][0]["name"] != LEADER
    assert after["workload"]["eligibleCount"] == before["workload"]["eligibleCount"] - 1


def test_response_cache_sees_an_attestation_on_the_next_request(site, loaded_db):
    client, _ = site
    path = f"/runs/{LEADER}.json"
    assert client.get(path).json()["attestations"] == []
    client.get(path)
    with loaded_db.sessions.begin() as session:
        user = accounts.create_user(session, "ada", PASSWORD)
        run = session.scalar(select(Run).where(Run.name == LEADER))
        add_attestation(session, user, run, {"type": "reproduced", "body": "Same figure on our B200."})
    assert [a["author"] for a in client.get(path).json()["attestations"]] == ["ada"]


def test_an_attestation_leaves_the_leaderboard_cached(site, loaded_db):
    client, cache = site
    leaderboard(client)
    with loaded_db.sessions.begin() as session:
        user = accounts.create_user(session, "ada", PASSWORD)
        run = session.scalar(select(Run).where(Run.name == LEADER))
        add_attestation(session, user, run, {"type": "reproduced", "body": "Same figure on our B200."})
    hits = cache.hits
    leaderboard(client)
    assert cache.hits == hits + 1


def test_response_cache_sees_an_ingested_change_on_the_next_request(site, loaded_db):
    client, _ = site
    leaderboard(client)
    with loaded_db.sessions.begin() as session:
        session.execute(update(Workload).where(Workload.name == WORKLOAD).values(title="Renamed upstream"))
    assert leaderboard(client)["workload"]["title"] == "Renamed upstream"


def test_catalogue_version_increases_with_public_writes_only(loaded_db):
    with loaded_db.sessions() as session:
        start = current_version(session)
    with loaded_db.sessions.begin() as session:
        session.scalar(select(Run).limit(1))  # a read
        session.add(RateLimitCounter(key="signup:127.0.0.1", window_start=0, hits=1))  # private
    with loaded_db.sessions() as session:
        assert current_version(session) == start
    with loaded_db.sessions.begin() as session:
        session.add(User(handle="bob", password_hash="x", is_maintainer=False, created_at=datetime.now(UTC)))
    with loaded_db.sessions() as session:
        assert current_version(session) == start  # accounts are shown on no public page
    with loaded_db.sessions.begin() as session:
        session.execute(update(Workload).where(Workload.name == WORKLOAD).values(title="Renamed"))
    with loaded_db.sessions() as session:
        assert current_version(session) == start + 1
    with loaded_db.sessions() as session:
        session.execute(update(Workload).values(title="Rolled back"))
        session.rollback()
    with loaded_db.sessions() as session:
        assert current_version(session) == start + 1
    with loaded_db.sessions.begin() as session:
        session.execute(update(Workload).where(Workload.name == "no-such-workload").values(title="Nobody"))
    with loaded_db.sessions() as session:
        assert current_version(session) == start + 1  # a write that matched no row changed nothing


def test_an_unchanged_reingest_leaves_every_cache_in_place(loaded_db):
    with loaded_db.sessions() as session:
        start = current_version(session)
    summary = ingest(
        loaded_db.sessions, Settings(database_url=loaded_db.url), "sol-execbench", snapshot=BUNDLED_SNAPSHOT
    )
    assert summary.status == "succeeded" and not summary.counts.get("added") and not summary.counts.get("updated")
    with loaded_db.sessions() as session:
        # Only the ingestion report (opened, then closed) is new, and the source page shows it;
        # no kernel's transaction may count as a change (there are 235 of them).
        assert current_version(session) - start == 2


@pytest.mark.parametrize("path", [f"/runs/{LEADER}", f"/workloads/{WORKLOAD}", "/"])
def test_anonymous_pages_are_public_and_set_no_cookie(site, path):
    client, _ = site
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["cache-control"].startswith("public")
    assert "set-cookie" not in response.headers and not client.cookies


def test_a_stray_or_forged_session_cookie_gets_the_cached_public_page(site):
    client, cache = site
    public = client.get(f"/runs/{LEADER}")
    # A real session of a signed-in account, for the forgery below to start from.
    signup(client, "ada")
    signed = client.cookies["kernelindex_session"]
    for cookie in ("anything", signed[:-4] + "AAAA", signed.split(".")[0] + ".e30.forged"):
        client.cookies.clear()
        client.cookies.set("kernelindex_session", cookie)
        hits = cache.hits
        served = client.get(f"/runs/{LEADER}")
        assert cache.hits == hits + 1, cookie
        assert served.content == public.content and "set-cookie" not in served.headers


def test_response_cache_never_shares_a_signed_in_page(site):
    client, cache = site
    client.get("/")
    signup(client, "ada")
    hits = cache.hits
    page = client.get("/")
    assert cache.hits == hits
    assert page.headers["cache-control"] == "private, no-cache" and "ada" in page.text


def cached_twice(client: TestClient, cache: ResponseCache, *paths: str) -> None:
    for path in paths:
        client.get(path)
        hits = cache.hits
        assert client.get(path).status_code == 200
        assert cache.hits == hits + 1, path


def served_from_cache(client: TestClient, cache: ResponseCache, path: str) -> bool:
    hits = cache.hits
    assert client.get(path).status_code == 200
    return cache.hits == hits + 1


def test_an_attestation_on_one_run_leaves_other_runs_and_workloads_cached(site, loaded_db):
    client, cache = site
    with loaded_db.sessions() as session:
        other_run = session.scalars(select(Run.name).where(Run.name != LEADER).order_by(Run.id)).first()
        other_workload = session.scalars(select(Workload.name).where(Workload.name != WORKLOAD)).first()
    pages = [f"/runs/{LEADER}.json", f"/runs/{other_run}", f"/workloads/{other_workload}", f"/workloads/{WORKLOAD}"]
    cached_twice(client, cache, *pages, "/")
    with loaded_db.sessions.begin() as session:
        user = accounts.create_user(session, "ada", PASSWORD)
        run = session.scalar(select(Run).where(Run.name == LEADER))
        add_attestation(session, user, run, {"type": "reproduced", "body": "Same figure on our B200."})
    assert not served_from_cache(client, cache, pages[0])
    assert [a["author"] for a in client.get(pages[0]).json()["attestations"]] == ["ada"]
    for path in [*pages[1:], "/"]:
        assert served_from_cache(client, cache, path), path


def test_an_ingest_of_one_workload_leaves_other_leaderboards_cached_and_refreshes_lists(site, loaded_db):
    client, cache = site
    upstream = FakeUpstream((39,))
    fastest = min(upstream.submissions[39], key=lambda row: row["latency_ms"])
    fastest["latency_ms"] = round(fastest["latency_ms"] * 0.9, 6)
    adapter = upstream.adapter()
    [unit] = adapter.discover().units
    batch = adapter.map(unit, adapter.fetch(unit))
    with loaded_db.sessions() as session:
        changed = session.scalar(select(Workload.name).where(Workload.external_id == "39"))
    lists = ["/", "/workloads", "/search?q=conv", "/gpus/b200"]
    cached_twice(client, cache, f"/workloads/{WORKLOAD}", f"/runs/{LEADER}", f"/workloads/{changed}.json", *lists)
    before = client.get(f"/workloads/{changed}.json").json()["fastest"]
    with loaded_db.sessions.begin() as session:
        source = session.scalar(select(Source).where(Source.slug == "sol-execbench"))
        written = apply_batch(session, source, batch, datetime.now(UTC))
    assert written["updated.run"] == 1
    assert served_from_cache(client, cache, f"/workloads/{WORKLOAD}")
    assert served_from_cache(client, cache, f"/runs/{LEADER}")
    assert not served_from_cache(client, cache, f"/workloads/{changed}.json")
    assert client.get(f"/workloads/{changed}.json").json()["fastest"] != before
    for path in lists:
        assert not served_from_cache(client, cache, path), path


def test_hidden_writes_change_everything_unless_confined(loaded_db):
    with loaded_db.sessions() as session:
        workload_id = session.scalar(select(Workload.id).where(Workload.name == WORKLOAD))
    scope = workload_scope(workload_id)
    with loaded_db.sessions.begin() as session:
        session.execute(update(Workload).where(Workload.id == workload_id).values(title="Renamed"))
    with loaded_db.sessions() as session:
        everything = current_version(session, EVERYTHING)
        assert everything == current_version(session)
    with loaded_db.sessions.begin() as session:
        confine_writes(session, scope, LISTS)
        session.execute(update(Workload).where(Workload.id == workload_id).values(title="Renamed again"))
    with loaded_db.sessions() as session:
        assert current_version(session, EVERYTHING) == everything
        assert current_version(session, scope) == current_version(session, LISTS) == current_version(session)
