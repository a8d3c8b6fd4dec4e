"""Ingesting the bundled SOL-ExecBench snapshot: completeness, idempotency, digests."""

from __future__ import annotations

import json

from sqlalchemy import func, select

from kernelindex.db.tables import (
    Environment,
    Implementation,
    IngestionReport,
    ManifestVersion,
    Protocol,
    Run,
    Workload,
    WorkloadCase,
)
from kernelindex.ingest.sources import ingest
from kernelindex.manifests import manifest_digest, parse_manifest
from kernelindex.paths import BUNDLED_SNAPSHOT
from kernelindex.settings import Settings

TABLES = (Workload, WorkloadCase, Implementation, Protocol, Environment, Run, ManifestVersion)
SEED_PROTOCOL_V1_0 = "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
SEED_ENVIRONMENT_B200_V1_0 = "sha256:5296c820e166474e590abb1beaf7728cdfe0a4bde9bf55f8966a40f4f5401621"


def count(session, table) -> int:  # type: ignore[no-untyped-def]
    return session.scalar(select(func.count()).select_from(table))


def store_state(session) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Row counts, every digest and every modification time: what 'writes nothing' must keep."""
    state: dict[str, object] = {table.__tablename__: count(session, table) for table in TABLES}
    for table in (Workload, Implementation, Protocol, Environment, Run):
        state[f"{table.__tablename__}.rows"] = sorted(
            session.execute(select(table.name, table.digest, table.updated_at)).all()
        )
    state["versions"] = sorted(
        session.execute(select(ManifestVersion.name, ManifestVersion.digest, ManifestVersion.superseded_at)).all()
    )
    return state


def test_ingest_bundled_snapshot_loads_every_kernel_and_submission(loaded_db):
    with loaded_db.sessions() as session:
        assert count(session, Workload) == 235
        assert count(session, WorkloadCase) == 3957
        assert count(session, Run) == 708
        assert count(session, Implementation) == 708
        assert count(session, Protocol) == 2
        assert count(session, Environment) == 2
        assert count(session, ManifestVersion) == 235 + 708 + 708 + 2 + 2
        collections = dict(
            session.execute(select(Workload.collection, func.count()).group_by(Workload.collection)).all()
        )
        assert collections == {"L1": 94, "L2": 82, "Quant": 33, "FlashInfer-Bench": 26}
        held = session.scalars(select(Run.external_id).where(Run.held_for_review)).all()
        assert sorted(held, key=int) == sorted(
            ["36644", "36119", "35775", "33453", "20107", "15511", "35819", "36565", "25162"], key=int
        )
        report = session.scalars(select(IngestionReport)).one()
        assert report.status == "succeeded"
        assert report.counts["added"] == {
            "environment": 2,
            "implementation": 708,
            "protocol": 2,
            "run": 708,
            "workload": 235,
        }
        assert report.counts["flags"]["held_for_review"] == 9
        assert report.drift == []


def test_ingest_snapshot_twice_writes_nothing_the_second_time(db):
    settings = Settings(database_url=db.url)
    first = ingest(db.sessions, settings, "sol-execbench", snapshot=BUNDLED_SNAPSHOT)
    with db.sessions() as session:
        before = store_state(session)
    second = ingest(db.sessions, settings, "sol-execbench", snapshot=BUNDLED_SNAPSHOT)
    with db.sessions() as session:
        after = store_state(session)
        reports = count(session, IngestionReport)

    assert first.status == second.status == "succeeded"
    assert first.wrote_records
    assert not second.wrote_records
    assert second.counts["unchanged"] == {"implementation": 708, "run": 708, "workload": 235}
    assert "added" not in second.counts and "updated" not in second.counts
    assert after == before
    assert reports == 2


def test_every_stored_manifest_digest_recomputes_from_its_json(loaded_db):
    with loaded_db.sessions() as session:
        for table in (Workload, Implementation, Protocol, Environment, Run, ManifestVersion):
            for digest, text in session.execute(select(table.digest, table.manifest_json)):
                manifest = json.loads(text)
                assert manifest_digest(manifest) == digest
                assert parse_manifest(manifest).digest == digest


def test_snapshot_protocol_and_environment_reproduce_the_published_digests(loaded_db):
    with loaded_db.sessions() as session:
        protocol = session.scalars(select(Protocol).where(Protocol.harness_version == "v1.0")).one()
        environment = session.scalars(select(Environment).where(Environment.name == "sol-execbench-b200-v1-0")).one()
    assert protocol.digest == SEED_PROTOCOL_V1_0
    assert environment.digest == SEED_ENVIRONMENT_B200_V1_0


def test_seed_submission_maps_as_published(loaded_db):
    with loaded_db.sessions() as session:
        run = session.scalars(select(Run).where(Run.name == "sol-submission-16893")).one()
        manifest = json.loads(run.manifest_json)
        assert run.latency_ns == 209_838
        assert run.evidence == "reported"
        assert run.protocol.digest == SEED_PROTOCOL_V1_0
        assert run.workload.name == "l1-039-adaptive-instance-normalization-2d-backward"
        assert run.implementation.project == "ac4k"
        assert run.implementation.revision == "submission-16893"
    assert manifest["metadata"] == {
        "name": "sol-submission-16893",
        "title": "ac4k · 039_adaptive_instance_normalization_2d_backward · B200",
        "labels": {"worker": "B200-ext-prod-2954"},
    }
    assert manifest["spec"]["observedAt"] == "2026-07-03T03:55:35.544Z"
    assert manifest["spec"]["timing"] == {"latencyNs": {"mean": 209838}, "primaryStatistic": "mean"}
    assert manifest["spec"]["sourceNative"] == {
        "source": "sol-execbench",
        "benchmark": "039_adaptive_instance_normalization_2d_backward",
        "externalId": "16893",
        "metrics": {
            "sol_score": 0.805502,
            "latency_ms": 0.209838,
            "avg_speedup": 4.049,
            "fast_1_count": 16,
            "fast_1_total": 16,
        },
    }


def test_workload_keeps_cases_bounds_and_source_facts(loaded_db):
    with loaded_db.sessions() as session:
        workload = session.scalars(select(Workload).where(Workload.external_id == "40")).one()
        cases = workload.cases
        manifest = json.loads(workload.manifest_json)
    assert workload.name == "l1-040-conv2d-residual-block"
    assert workload.title == "Conv2d residual block"
    assert workload.origin_model == "NAFNet"
    assert workload.case_count == len(cases) == 16
    hidden = manifest["spec"]["definition"]["axes"]["hidden_channels"]
    assert (hidden["type"], hidden["value"]) == ("const", 32)
    assert all(case.sol_latency_ms and case.baseline_latency_ms for case in cases)
    upstream = json.loads((BUNDLED_SNAPSHOT / "api" / "kernels" / "40.json").read_text())["data"]
    assert [case.axes for case in cases] == [w["axes"] for w in upstream["workloads"]]
    assert [case.sol_latency_ms for case in cases] == [w["sol_ms"] for w in upstream["workloads"]]
    # The kernel-level "baseline_latency_ms" is the geometric mean of the per-case sol_ms.
    assert abs(workload.sol_aggregate_ms - upstream["baseline_latency_ms"]) < 2e-6
