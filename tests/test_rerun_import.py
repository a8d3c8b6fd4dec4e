"""Importing signed rerun bundles: signatures, digests and figures are checked, a refused
bundle leaves nothing behind, and evidence becomes verified, then replicated."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex.db.rerun_tables import RerunBundle, RerunCase, RerunResult
from kernelindex.db.tables import ManifestVersion, Run
from kernelindex.ingest.reruns import importer, read_bundle
from kernelindex.ingest.reruns.importer import (
    ApprovedKeys,
    KeysError,
    Operator,
    import_bundle,
    import_bundle_files,
    load_approved_keys,
)
from kernelindex.manifests import BenchmarkRun
from kernelindex.rerun.bundle import BundleError
from tests.conftest import StoreUnderTest
from tests.rerun_bundles import (
    ADAIN,
    CONV,
    approved,
    make_payload,
    operator,
    resign_with_tampering,
    signed,
    write_keys_file,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture
def other_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def _import(store: StoreUnderTest, data: bytes, keys: dict[str, str], by: Operator | None = None) -> Any:
    bundle = read_bundle(data, keys)
    with store.sessions.begin() as session:
        return import_bundle(session, bundle, NOW, by)


def _rerun_rows(session: Session) -> dict[str, int]:
    return {
        table.__tablename__: session.scalar(select(func.count()).select_from(table)) or 0
        for table in (RerunBundle, RerunResult, RerunCase)
    } | {"run": session.scalar(select(func.count()).select_from(Run).where(Run.evidence != "reported")) or 0}


def test_a_bundle_becomes_a_verified_suite_run_and_sixteen_case_runs(loaded_db: StoreUnderTest, key) -> None:
    data = signed(make_payload(base_ns=120_000), key)
    outcome = _import(loaded_db, data, approved(key))
    assert not outcome.already_imported
    with loaded_db.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == outcome.run_name))
        assert run is not None
        assert run.evidence == "verified" and run.status == "passed" and run.primary_statistic == "median"
        assert run.workload.name == ADAIN
        assert run.environment.gpu_slug == "h200" and run.environment.architecture == "sm_90"
        assert run.protocol.name == "kernelindex-rerun-v1"
        sol_keys = set(session.scalars(select(Run.comparison_key).where(Run.evidence == "reported")))
        assert run.comparison_key not in sol_keys
        cases = session.scalars(select(RerunCase).order_by(RerunCase.position)).all()
        assert [case.position for case in cases] == list(range(16))
        # The run's manifest and every case manifest are valid and digest-addressable.
        manifest = BenchmarkRun.model_validate_json(run.manifest_json)
        assert manifest.digest == run.digest
        assert manifest.spec.workload_digest == run.workload.digest
        for case in cases:
            case_manifest = BenchmarkRun.model_validate_json(case.manifest_json)
            assert case_manifest.digest == case.digest and case_manifest.spec.case_index == case.position
            assert session.scalar(select(ManifestVersion.name).where(ManifestVersion.digest == case.digest))
        # The suite figure is the geometric mean of the case medians, as the runner computed it.
        assert run.latency_ns == json.loads(data)["payload"]["suite"]["latencyNs"]
        stored = session.scalar(select(RerunBundle))
        assert stored is not None and stored.bundle_json == data.decode()


def test_importing_the_same_bundle_again_writes_nothing(loaded_db: StoreUnderTest, key) -> None:
    data = signed(make_payload(), key)
    first = _import(loaded_db, data, approved(key))
    with loaded_db.sessions() as session:
        before = _rerun_rows(session)
    again = _import(loaded_db, data, approved(key))
    assert again.already_imported and again.run_name == first.run_name
    with loaded_db.sessions() as session:
        assert _rerun_rows(session) == before


def _evidence(store: StoreUnderTest) -> dict[str, str]:
    with store.sessions() as session:
        return dict(session.execute(select(Run.name, Run.evidence).where(Run.evidence != "reported")).all())


def test_a_second_key_of_the_same_operator_on_another_gpu_only_reproduces(
    loaded_db: StoreUnderTest, key, other_key
) -> None:
    keys, lab = approved(key, other_key), operator("lab-a")
    first = _import(loaded_db, signed(make_payload(base_ns=120_000), key), keys, lab)
    assert _evidence(loaded_db) == {first.run_name: "verified"}
    second = _import(
        loaded_db, signed(make_payload(base_ns=121_000, gpu_uuid="GPU-bbbb", session_id="b" * 32), other_key), keys, lab
    )
    assert _evidence(loaded_db) == {first.run_name: "reproduced", second.run_name: "reproduced"}


def test_a_different_operator_with_one_case_off_by_2x_does_not_replicate(
    loaded_db: StoreUnderTest, key, other_key
) -> None:
    keys = approved(key, other_key)
    first = _import(loaded_db, signed(make_payload(base_ns=120_000), key), keys, operator("lab-a"))
    # The suite figure moves by 2^(1/16) ≈ 4.4 %, within the suite bound: only the case rule sees it.
    off = make_payload(base_ns=120_000, gpu_uuid="GPU-bbbb", session_id="b" * 32, slow_case=5)
    second = _import(loaded_db, signed(off, other_key), keys, operator("lab-b"))
    assert abs(second.latency_ns / first.latency_ns - 1) < 0.05
    assert _evidence(loaded_db) == {first.run_name: "verified", second.run_name: "verified"}


def test_a_different_operator_agreeing_case_by_case_on_another_gpu_replicates(
    loaded_db: StoreUnderTest, key, other_key
) -> None:
    keys = approved(key, other_key)
    first = _import(loaded_db, signed(make_payload(base_ns=120_000), key), keys, operator("lab-a"))
    # Another operator, 30 % slower on every case: disagrees, nothing changes.
    slow = _import(
        loaded_db,
        signed(make_payload(base_ns=160_000, gpu_uuid="GPU-bbbb", session_id="c" * 32), other_key),
        keys,
        operator("lab-b"),
    )
    assert _evidence(loaded_db) == {first.run_name: "verified", slow.run_name: "verified"}
    agree = _import(
        loaded_db,
        signed(make_payload(base_ns=123_000, gpu_uuid="GPU-bbbb", session_id="d" * 32), other_key),
        keys,
        operator("lab-b"),
    )
    assert _evidence(loaded_db) == {
        first.run_name: "replicated",
        agree.run_name: "replicated",
        slow.run_name: "verified",
    }


@pytest.mark.parametrize(
    ("second_operator", "second_gpu", "level"),
    [
        ("lab-b", "GPU-aaaa", "verified"),  # another operator on the same GPU: only repeated, not reproduced
        (None, "GPU-bbbb", "reproduced"),  # a key whose operator is not stated: never independent
    ],
)
def test_agreeing_reruns_that_are_not_independent_only_reproduce(
    loaded_db: StoreUnderTest, key, other_key, second_operator: str | None, second_gpu: str, level: str
) -> None:
    keys = approved(key, other_key)
    first = _import(loaded_db, signed(make_payload(base_ns=120_000), key), keys, operator("lab-a"))
    second = _import(
        loaded_db,
        signed(make_payload(base_ns=120_000, gpu_uuid=second_gpu, session_id="b" * 32), other_key),
        keys,
        operator(second_operator) if second_operator else None,
    )
    assert _evidence(loaded_db) == {first.run_name: level, second.run_name: level}


def test_importing_again_with_a_stated_operator_records_it_and_derives_evidence_anew(
    loaded_db: StoreUnderTest, key, other_key
) -> None:
    keys = approved(key, other_key)
    first_data = signed(make_payload(base_ns=120_000), key)
    first = _import(loaded_db, first_data, keys, None)
    second = _import(
        loaded_db,
        signed(make_payload(base_ns=121_000, gpu_uuid="GPU-bbbb", session_id="b" * 32), other_key),
        keys,
        operator("lab-b"),
    )
    assert _evidence(loaded_db) == {first.run_name: "reproduced", second.run_name: "reproduced"}
    again = _import(loaded_db, first_data, keys, operator("lab-a"))
    assert again.already_imported
    assert _evidence(loaded_db) == {first.run_name: "replicated", second.run_name: "replicated"}
    with loaded_db.sessions() as session:
        assert set(session.scalars(select(RerunBundle.operator))) == {"lab-a", "lab-b"}


def _tamper_sample(payload: dict[str, Any]) -> None:
    payload["cases"][3]["timing"]["samplesNs"][0][0] += 1_000_000


def _fake_median(payload: dict[str, Any]) -> None:
    payload["cases"][0]["timing"]["medianNs"] //= 2


def _fake_suite(payload: dict[str, Any]) -> None:
    payload["suite"]["latencyNs"] //= 2


def _other_cases(payload: dict[str, Any]) -> None:
    payload["cases"][0]["axes"]["N"] = 9


def _other_protocol(payload: dict[str, Any]) -> None:
    payload["protocol"]["timedIterations"] = 5


def _unknown_workload(payload: dict[str, Any]) -> None:
    payload["workload"]["slug"] = "l1-999-nothing"


def _failed(payload: dict[str, Any]) -> None:
    payload["status"] = "failed"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_fake_median, "medianNs does not follow from its samples"),
        (_fake_suite, "not the geometric mean"),
        (_other_cases, "do not match the suite digest"),
        (_other_protocol, "protocol other than"),
        (_failed, "not a complete passing measurement"),
    ],
)
def test_a_signed_bundle_whose_figures_do_not_add_up_is_refused(
    key, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = resign_with_tampering(signed(make_payload(), key), key, change)
    with pytest.raises(BundleError, match=message):
        read_bundle(data, approved(key))


def test_a_suite_other_than_the_registrys_is_refused_whole(loaded_db: StoreUnderTest, key) -> None:
    payload = make_payload()
    with loaded_db.sessions.begin() as session:
        # The registry's workload changes one case (as an upstream change would): same slug, another suite.
        run_workload = session.scalar(select(Run).where(Run.evidence == "reported").limit(1))
        assert run_workload is not None
        from kernelindex.db.tables import Workload

        workload = session.scalar(select(Workload).where(Workload.name == ADAIN))
        assert workload is not None
        workload.cases[0].axes = {**workload.cases[0].axes, "N": 9}
    with pytest.raises(BundleError, match="differs from the registry's"):
        _import(loaded_db, signed(payload, key), approved(key))
    with loaded_db.sessions() as session:
        assert _rerun_rows(session) == {"rerun_bundle": 0, "rerun_result": 0, "rerun_case": 0, "run": 0}


def test_tampered_unknown_key_and_bad_files_are_refused_and_leave_nothing(
    loaded_db: StoreUnderTest, key, other_key, tmp_path: Path
) -> None:
    good = signed(make_payload(), key)
    tampered = json.loads(good)
    _tamper_sample(tampered["payload"])
    files = {
        "tampered.json": (json.dumps(tampered).encode(), "bad signature"),
        "unknown-key.json": (signed(make_payload(session_id="b" * 32), other_key), "not an approved rerun key"),
        "not-json.json": (b"{nope", "not UTF-8 JSON"),
        "unknown-workload.json": (
            resign_with_tampering(good, key, _unknown_workload),
            "no byte and FLOP model for l1-999-nothing",
        ),
    }
    for name, (data, _) in files.items():
        (tmp_path / name).write_bytes(data)
    results = import_bundle_files(
        loaded_db.sessions, [tmp_path / name for name in files], ApprovedKeys(approved(key), {})
    )
    for result, (_, message) in zip(results, files.values(), strict=True):
        assert result.outcome is None and result.error is not None and message in result.error
    with loaded_db.sessions() as session:
        assert _rerun_rows(session) == {"rerun_bundle": 0, "rerun_result": 0, "rerun_case": 0, "run": 0}


def test_approved_keys_file_is_checked(tmp_path: Path, key) -> None:
    # A file written before operators existed is read as it is: no key has an operator.
    path = write_keys_file(tmp_path / "keys.json", key)
    assert load_approved_keys(path) == ApprovedKeys(approved(key), {})
    named = load_approved_keys(write_keys_file(tmp_path / "named.json", key, operator_id="lab-a"))
    assert named.public_keys == approved(key)
    assert [(o.id, o.approved_by) for o in named.operators.values()] == [("lab-a", "maintainer")]
    document = json.loads(named_text := (tmp_path / "named.json").read_text())
    document["keys"][0]["operator"] = {"id": "lab-a"}
    path.write_text(json.dumps(document))
    with pytest.raises(KeysError, match="operator must be"):
        load_approved_keys(path)
    document = json.loads(named_text)
    document["keys"][0]["keyId"] = "ed25519:0000000000000000"
    path.write_text(json.dumps(document))
    with pytest.raises(KeysError, match="does not belong"):
        load_approved_keys(path)
    path.write_text("[]")
    with pytest.raises(KeysError, match="must be"):
        load_approved_keys(path)
    with pytest.raises(KeysError, match="cannot read"):
        load_approved_keys(tmp_path / "missing.json")


def test_both_workloads_and_a_second_implementation_share_one_environment(loaded_db: StoreUnderTest, key) -> None:
    keys = approved(key)
    a = _import(loaded_db, signed(make_payload(ADAIN, "kernelindex-039-eager"), key), keys)
    b = _import(loaded_db, signed(make_payload(CONV, "kernelindex-040-triton", session_id="b" * 32), key), keys)
    with loaded_db.sessions() as session:
        runs = {run.name: run for run in session.scalars(select(Run).where(Run.name.in_([a.run_name, b.run_name])))}
        assert runs[a.run_name].environment_id == runs[b.run_name].environment_id
        assert runs[a.run_name].implementation.project == "KernelIndex PyTorch eager"
        assert runs[b.run_name].implementation.source_available
        assert runs[b.run_name].implementation.license == "Apache-2.0"


def test_a_v2_bundle_imports_under_protocol_v2_beside_v1(loaded_db: StoreUnderTest, key) -> None:
    v1 = _import(loaded_db, signed(make_payload(), key), approved(key))
    v2 = _import(loaded_db, signed(make_payload(version=2, session_id="c" * 32), key), approved(key))
    with loaded_db.sessions() as session:
        first = session.scalar(select(Run).where(Run.name == v1.run_name))
        second = session.scalar(select(Run).where(Run.name == v2.run_name))
        assert first is not None and second is not None
        assert first.protocol.name == "kernelindex-rerun-v1" and second.protocol.name == "kernelindex-rerun-v2"
        assert second.protocol.title == "KernelIndex rerun protocol v2"
        assert first.comparison_key != second.comparison_key  # a protocol version is its own group
        assert second.evidence != "reported"


def _fake_interval(payload: dict[str, Any]) -> None:
    low, high = payload["cases"][2]["timing"]["medianIntervalNs"]
    payload["cases"][2]["timing"]["medianIntervalNs"] = [low - 500, high]


def test_a_v2_bundle_must_pass_the_noise_gate_and_carry_its_seeded_interval(key) -> None:
    with pytest.raises(BundleError, match="case 4's trials disagree by more than the noise gate's 10%"):
        read_bundle(signed(make_payload(version=2, noisy_case=4), key), approved(key))
    data = resign_with_tampering(signed(make_payload(version=2), key), key, _fake_interval)
    with pytest.raises(BundleError, match="case 2's median interval is not the seeded bootstrap"):
        read_bundle(data, approved(key))
    # the same noisy samples under v1, which has no gate, are read as before
    assert read_bundle(signed(make_payload(noisy_case=4), key), approved(key)).payload.protocol["version"] == "1"


def test_a_bundle_refused_while_writing_leaves_nothing_and_its_group_is_kept(
    loaded_db: StoreUnderTest, key, tmp_path: Path
) -> None:
    first, second = (signed(make_payload(session_id=f"{n}" * 32), key) for n in range(2))
    # The same signed payload in another file: it verifies, and is refused while the group is
    # written, because the bundle the group has just stored has other content.
    paths = [tmp_path / "first.json", tmp_path / "first-again.json", tmp_path / "second.json"]
    contents = [first, json.dumps(json.loads(first), indent=1).encode(), second]
    for path, data in zip(paths, contents, strict=True):
        path.write_bytes(data)
    results = import_bundle_files(loaded_db.sessions, paths, ApprovedKeys(approved(key), {}))
    assert [result.outcome is not None for result in results] == [True, False, True]
    assert "imported before with different content" in (results[1].error or "")
    with loaded_db.sessions() as session:
        rows = _rerun_rows(session)
        assert rows == {"rerun_bundle": 2, "rerun_result": 2, "rerun_case": 2 * 16, "run": 2}


def test_bundles_checked_in_worker_processes_come_back_in_order_with_their_refusals(
    tmp_path: Path, key, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = [tmp_path / f"good-{n}.json" for n in range(3)]
    for n, path in enumerate(good):
        path.write_bytes(signed(make_payload(session_id=f"{n}" * 32), key))
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(resign_with_tampering(good[0].read_bytes(), key, _fake_median))
    missing = tmp_path / "missing.json"
    paths = [good[0], tampered, good[1], missing, good[2]]
    sequential = list(importer._verified(paths, approved(key)))
    monkeypatch.setattr(importer, "PARALLEL_FROM", 1)
    monkeypatch.setattr(importer, "VERIFY_BATCH", 2)
    parallel = list(importer._verified(paths, approved(key)))
    assert [path for path, _ in parallel] == paths
    shown = [(p, v if isinstance(v, str) else v.payload.bundle_id) for p, v in parallel]
    assert shown == [(p, v if isinstance(v, str) else v.payload.bundle_id) for p, v in sequential]
    assert "does not follow from its samples" in shown[1][1] and "cannot read it" in shown[3][1]
