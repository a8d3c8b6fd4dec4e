"""Page versions across processes on PostgreSQL: a worker's listener hears of another
process's write within a bounded time, and of its own at once, with no read per request."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select

from kernelindex.db import migrate
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import PageVersion
from kernelindex.store.version import MAX_LAG_S, SEQUENCE, VersionReader, mark_changed, workload_scope

SCOPE = workload_scope(7)


@pytest.fixture
def pg_url(postgres) -> str:
    url = postgres.create("versions")
    migrate.upgrade(url)
    return url


@pytest.fixture
def engines(pg_url: str) -> Iterator[tuple[Engine, Engine]]:
    reader_engine, writer_engine = make_engine(pg_url), make_engine(pg_url)
    yield reader_engine, writer_engine
    reader_engine.dispose()
    writer_engine.dispose()


def listening(reader: VersionReader) -> None:
    reader.read()
    deadline = time.monotonic() + 10
    while not reader.in_memory():
        assert time.monotonic() < deadline, "the listener did not start"
        time.sleep(0.01)


def test_a_write_elsewhere_reaches_a_listening_worker_within_a_bounded_time(engines):
    reader_engine, writer_engine = engines
    reader = VersionReader(make_sessionmaker(reader_engine))
    try:
        listening(reader)
        seq, numbers = reader.read([SCOPE])
        assert numbers[SCOPE] == 0
        with make_sessionmaker(writer_engine).begin() as session:
            mark_changed(session, SCOPE)
        committed = time.monotonic()
        while (found := reader.read([SCOPE])) is not None and found[1][SCOPE] <= seq:
            assert time.monotonic() - committed < MAX_LAG_S, "another process's write was not heard of"
            time.sleep(0.005)
        assert reader.in_memory()  # answered from memory throughout
        assert found is not None and found[0] >= found[1][SCOPE] > seq
    finally:
        reader.close()


def test_a_workers_own_write_is_known_at_once(engines):
    reader_engine, _ = engines
    reader = VersionReader(make_sessionmaker(reader_engine))
    try:
        listening(reader)
        seq, _ = reader.read([SCOPE])
        with make_sessionmaker(reader_engine).begin() as session:
            mark_changed(session, SCOPE)
        # No wait: the commit itself told this process's reader.
        assert reader.read([SCOPE])[1][SCOPE] > seq  # type: ignore[index]
    finally:
        reader.close()


def test_a_reader_without_its_listener_reads_the_store_exactly(engines, monkeypatch):
    reader_engine, writer_engine = engines
    reader = VersionReader(make_sessionmaker(reader_engine), listen=False)
    try:
        assert not reader.in_memory()
        seq, _ = reader.read([SCOPE])
        with make_sessionmaker(writer_engine).begin() as session:
            mark_changed(session, SCOPE)
        assert reader.read([SCOPE])[1][SCOPE] > seq  # type: ignore[index]
    finally:
        reader.close()


def test_each_commit_takes_the_next_number_for_every_scope_it_changed(engines):
    """Each commit, from whichever process, takes the next number, and every scope it changed holds it."""
    first, second = (make_sessionmaker(engine) for engine in engines)
    other = workload_scope(8)
    for sessions, scopes in ((first, [SCOPE]), (second, [SCOPE, other]), (first, [other])):
        with sessions.begin() as session:
            mark_changed(session, *scopes)
    with first() as session:
        stored = {scope: seq for scope, seq in session.execute(select(PageVersion.scope, PageVersion.seq))}
    assert stored == {SEQUENCE: 3, SCOPE: 2, other: 3}
