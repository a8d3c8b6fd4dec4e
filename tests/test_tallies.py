"""Tallies (``store.tallies``, ``store.collection_tallies``) equal a count of the runs after every
kind of write: runs added and changed through the session, eligibility changed by statements the
session does not see (confined to a workload, or not), a maintainer's withdrawal, a workload moved
to another collection or renamed, a GPU renamed, a bulk insert; and two PostgreSQL writers adding
runs to one workload at once both get counted.

The expected counts come from ``kernelindex.ranking.is_eligible`` over every run, not from SQL,
and each collection's busiest workloads from a full sort of its workloads.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.tables import Environment, Run, Workload
from kernelindex.db.tally_tables import EVERY_GPU, CollectionTally, WorkloadSourceTally, WorkloadTally
from kernelindex.manifests.types import RunStatus
from kernelindex.ranking import is_eligible, most_measured_first
from kernelindex.store import accounts, moderation
from kernelindex.store.bulk import insert_rows
from kernelindex.store.collection_tallies import BUSIEST_KEPT
from kernelindex.store.runs import run_facts
from kernelindex.store.tallies import eligible_run_count, workloads_per_gpu
from kernelindex.store.version import LISTS, confine_writes, workload_scope
from tests.factories import PASSWORD

PREFIX = "tally-"


Tally = tuple[int, int, float | None, int | None]  # runs, eligible runs, best SOL score, fastest run id


def expected_tallies(session: Session) -> dict[tuple[int, str], Tally]:
    """(workload id, GPU slug or EVERY_GPU) → its tally, counted in Python; the fastest run by
    ``ranking.fastest_reported``'s rule (equal latencies by name)."""
    gpus = dict(session.execute(select(Environment.id, Environment.gpu_slug)).all())
    runs: Counter[tuple[int, str]] = Counter()
    eligible: Counter[tuple[int, str]] = Counter()
    best: dict[tuple[int, str], float] = {}
    fastest: dict[tuple[int, str], tuple[int, str, int]] = {}
    for run in session.scalars(select(Run)):
        ranked = is_eligible(run_facts(run))
        for key in ((run.workload_id, gpus[run.environment_id]), (run.workload_id, EVERY_GPU)):
            runs[key] += 1
            eligible[key] += ranked
            if ranked and run.sol_score is not None:
                best[key] = max(best.get(key, run.sol_score), run.sol_score)
            if ranked:
                fastest[key] = min(
                    fastest.get(key, (run.latency_ns, run.name, run.id)), (run.latency_ns, run.name, run.id)
                )
    return {key: (runs[key], eligible[key], best.get(key), fastest[key][2] if key in fastest else None) for key in runs}


def stored_tallies(session: Session) -> dict[tuple[int, str], Tally]:
    return {
        (row.workload_id, row.gpu_slug): (row.runs, row.eligible_runs, row.best_sol, row.fastest_run_id)
        for row in session.scalars(select(WorkloadTally))
    }


def expected_collections(session: Session, tallies: dict[tuple[int, str], Tally]) -> dict[tuple[int, str, str], Any]:
    """(source id, collection, GPU slug or EVERY_GPU) → (workloads, runs, eligible runs, measured
    workloads, busiest ids, first ids by name), from a full sort of every workload by
    ``ranking.most_measured_first``."""
    members: dict[tuple[int, str], list[tuple[int, str]]] = {}
    for workload in session.scalars(select(Workload)):
        members.setdefault((workload.source_id, workload.collection), []).append((workload.id, workload.name))
    expected = {}
    for (source_id, collection), workloads in members.items():
        ids = {workload_id for workload_id, _ in workloads}
        gpus = {gpu for workload_id, gpu in tallies if workload_id in ids and gpu != EVERY_GPU}
        by_name = [workload_id for workload_id, _ in sorted(workloads, key=lambda w: w[1])][:BUSIEST_KEPT]
        for gpu in [EVERY_GPU, *gpus]:
            counts = {workload_id: tallies.get((workload_id, gpu), (0, 0, None, None)) for workload_id in ids}
            busiest = sorted(workloads, key=lambda w, c=counts: most_measured_first(c[w[0]][1], c[w[0]][0], w[1]))
            expected[source_id, collection, gpu] = (
                len(workloads),
                sum(count[0] for count in counts.values()),
                sum(count[1] for count in counts.values()),
                sum(count[0] > 0 for count in counts.values()),
                [workload_id for workload_id, _ in busiest][:BUSIEST_KEPT],
                by_name if gpu == EVERY_GPU else None,
            )
    return expected


def stored_collections(session: Session) -> dict[tuple[int, str, str], Any]:
    return {
        (row.source_id, row.collection, row.gpu_slug): (
            row.workloads,
            row.runs,
            row.eligible_runs,
            row.measured,
            row.busiest,
            row.first_by_name,
        )
        for row in session.scalars(select(CollectionTally))
    }


def assert_exact(sessions: sessionmaker[Session]) -> None:
    with sessions() as session:
        session.expire_all()
        stored, expected = stored_tallies(session), expected_tallies(session)
        assert stored.keys() == expected.keys()
        workloads = {w.id: (w.source_id, w.collection, w.name) for w in session.scalars(select(Workload))}
        for row in session.scalars(select(WorkloadTally)):  # each copies its workload's
            assert (row.source_id, row.collection, row.name) == workloads[row.workload_id]
        for key, (runs, eligible, best, fastest) in expected.items():
            assert stored[key][:2] == (runs, eligible), key
            assert stored[key][2] == pytest.approx(best), key
            assert stored[key][3] == fastest, key
        on_gpus = select(Run.workload_id, Run.source_id, Environment.gpu_slug).join(Run.environment)
        by_source: Counter[tuple[int, int | None, str]] = Counter()
        for workload, source, gpu in session.execute(on_gpus):
            by_source.update([(workload, source, gpu), (workload, source, EVERY_GPU)])
        stored_by_source = {
            (row.workload_id, row.source_id, row.gpu_slug): row.runs
            for row in session.scalars(select(WorkloadSourceTally))
        }
        assert stored_by_source == dict(by_source)
        assert stored_collections(session) == expected_collections(session, expected)


def _template(session: Session) -> dict[str, Any]:
    run = session.scalars(select(Run).order_by(Run.id).limit(1)).one()
    return {c.key: getattr(run, c.key) for c in Run.__table__.columns if c.key not in ("id", "name", "external_id")}


def test_the_snapshot_ingest_leaves_the_tallies_exact(loaded_db: Any) -> None:
    assert_exact(loaded_db.sessions)
    with loaded_db.sessions() as session:
        assert eligible_run_count(session) == sum(
            eligible for (_, gpu), (_, eligible, _, _) in expected_tallies(session).items() if gpu == EVERY_GPU
        )
        measured: Counter[str] = Counter(gpu for _, gpu in expected_tallies(session) if gpu != EVERY_GPU)
        assert workloads_per_gpu(session) == dict(measured)


writes = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 4), st.sampled_from(list(RunStatus)), st.booleans()),
        st.tuples(st.just("flip"), st.integers(0, 40), st.sampled_from(["held", "upstream", "status", "sol"])),
        st.tuples(st.just("hidden"), st.integers(0, 4), st.booleans()),
        st.tuples(st.just("withdraw"), st.integers(0, 40)),
        st.tuples(st.just("move"), st.integers(0, 4), st.sampled_from(["collection", "name"])),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=writes)
def test_every_kind_of_write_keeps_the_tallies_exact(loaded_db: Any, steps: list[tuple[Any, ...]]) -> None:
    sessions = loaded_db.sessions
    with sessions.begin() as session:
        maintainer = session.scalar(select(accounts.User).where(accounts.User.handle == "tally-maintainer"))
        if maintainer is None:
            accounts.create_user(session, "tally-maintainer", PASSWORD, maintainer=True)
    with sessions() as session:
        workloads = session.scalars(select(Workload.id).order_by(Workload.id).limit(5)).all()
        environments = session.scalars(select(Environment.id).order_by(Environment.id)).all()
    for number, step in enumerate(steps):
        with sessions.begin() as session:
            kind = step[0]
            if kind == "add":  # a new run through the session, of any status
                _, which, status, held = step
                session.add(
                    Run(
                        **{
                            **_template(session),
                            "name": f"{PREFIX}{number}-{datetime.now(UTC).timestamp()}",
                            "external_id": None,
                            "workload_id": workloads[which],
                            "environment_id": environments[number % len(environments)],
                            "status": status,
                            "held_for_review": held,
                            "sol_score": 0.1 * (number + 1),
                        }
                    )
                )
            elif kind == "flip":  # a run's eligibility (or SOL score) changed on its ORM object
                run = session.scalars(select(Run).order_by(Run.id).offset(step[1]).limit(1)).one()
                if step[2] == "held":
                    run.held_for_review = not run.held_for_review
                elif step[2] == "upstream":
                    run.upstream_withdrawn = not run.upstream_withdrawn
                elif step[2] == "status":
                    run.status = RunStatus.FAILED if run.status == RunStatus.PASSED else RunStatus.PASSED
                else:
                    run.sol_score = None if run.sol_score else 0.99
            elif kind == "hidden":  # a multi-row UPDATE, confined to its workload by its transaction or not
                _, which, confined = step
                if confined:
                    confine_writes(session, workload_scope(workloads[which]), LISTS)
                session.execute(
                    update(Run)
                    .where(Run.workload_id == workloads[which])
                    .values(upstream_withdrawn=~Run.upstream_withdrawn)
                    .execution_options(synchronize_session=False)
                )
            elif kind == "move":  # a workload moved to another collection, or renamed (which orders it anew)
                workload = session.get(Workload, workloads[step[1]])
                assert workload is not None
                if step[2] == "collection":
                    workload.collection = f"{PREFIX}moved-{number % 2}"
                else:
                    workload.name = f"{PREFIX}{'a' if number % 2 else 'z'}-{number}-{datetime.now(UTC).timestamp()}"
            else:  # a maintainer's withdrawal
                run = session.scalars(select(Run).order_by(Run.id).offset(step[1]).limit(1)).one()
                if run.withdrawn_at is None:
                    maintainer = session.scalar(select(accounts.User).where(accounts.User.handle == "tally-maintainer"))
                    moderation.withdraw_run(session, maintainer, run.name, "a duplicate")
        assert_exact(sessions)


def test_a_renamed_gpu_and_a_bulk_insert_recount_what_they_move(loaded_db: Any) -> None:
    sessions = loaded_db.sessions
    with sessions.begin() as session:
        environment = session.scalars(select(Environment).order_by(Environment.id).limit(1)).one()
        environment.gpu_slug = "renamed-gpu"
    assert_exact(sessions)
    with sessions() as session:
        assert "renamed-gpu" in workloads_per_gpu(session)
    with sessions.begin() as session:
        template = _template(session)
        insert_rows(session, Run, [{**template, "name": f"{PREFIX}bulk-{i}", "external_id": None} for i in range(3)])
    assert_exact(sessions)


def test_a_rolled_back_write_leaves_the_tallies_as_they_were(loaded_db: Any) -> None:
    sessions = loaded_db.sessions
    with sessions() as session:
        before = stored_tallies(session)
    with sessions() as session:
        session.execute(update(Run).values(status=RunStatus.FAILED).execution_options(synchronize_session=False))
        session.rollback()
    with sessions.begin() as session:  # a later write of something else recounts nothing it should not
        run = session.scalars(select(Run).order_by(Run.id).limit(1)).one()
        run.sol_score = run.sol_score
    with sessions() as session:
        assert stored_tallies(session) == before
    assert_exact(sessions)


@pytest.mark.parametrize("committed_catalogue_url", ["postgresql"], indirect=True)
def test_two_writers_adding_runs_to_one_workload_at_once_are_both_counted(committed_catalogue_url: str) -> None:
    engine = make_engine(committed_catalogue_url)
    sessions = make_sessionmaker(engine)
    with sessions.begin() as session:
        # A workload without runs yet: no tally row that a writer would wait on by itself.
        existing = session.scalars(select(Workload).order_by(Workload.id).limit(1)).one()
        columns = {c.key: getattr(existing, c.key) for c in Workload.__table__.columns if c.key != "id"}
        workload = Workload(**{**columns, "name": f"{PREFIX}empty", "external_id": f"{PREFIX}empty"})
        session.add(workload)
        session.flush()
        template = {**_template(session), "workload_id": workload.id}
        workload_id = workload.id
    # Each writer adds its run, waits until the other has added its own (neither committed), then commits.
    both_added = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        try:
            with sessions.begin() as session:
                session.add(Run(**{**template, "name": f"{PREFIX}concurrent-{number}", "external_id": None}))
                session.flush()
                both_added.wait()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    with sessions() as session:
        runs = len(session.scalars(select(Run.id).where(Run.workload_id == workload_id)).all())
        stored = session.scalar(
            select(WorkloadTally.runs).where(
                WorkloadTally.workload_id == workload_id, WorkloadTally.gpu_slug == EVERY_GPU
            )
        )
    assert stored == runs
    assert_exact(sessions)
    engine.dispose()
