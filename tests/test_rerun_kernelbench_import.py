"""Importing KernelBench rerun bundles: a real bundle measured on an H200, re-signed with a test key
(so that the tests can also tamper with it), is filed under the problem's workload with no bound,
and one that claims what it cannot is refused whole. (Every shipped bundle, problems with float
constants among them, is imported in ``test_rerun_bundled``.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import func, select

from kernelindex.db.rerun_tables import RerunBundle, RerunCase, RerunResult
from kernelindex.db.tables import Run
from kernelindex.ingest.reruns import read_bundle
from kernelindex.ingest.reruns.importer import import_bundle
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.rerun.bundle import BundleError
from kernelindex.settings import Settings
from tests.conftest import StoreUnderTest
from tests.kernelbench_slice import make_slice
from tests.rerun_bundles import approved, signed

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
# ReLU, level 1 problem 19 at the newest bundled commit.
RELU = "kernelbench-l1-19-relu-cbbfc940"


@pytest.fixture
def kernelbench_db(db: StoreUnderTest, tmp_path: Path) -> StoreUnderTest:
    """A store holding a small real slice of KernelBench, ReLU's newest revision among it."""
    settings = Settings(database_url=db.url, github_token=None)
    summary = ingest(db.sessions, settings, "kernelbench", snapshot=make_slice(tmp_path), sleep=lambda _: None)
    assert summary.status == "succeeded", summary.errors
    return db


def _shipped_payload(slug: str, mode: str) -> dict[str, Any]:
    path = next(iter(sorted((BUNDLED_RERUNS / "bundles").glob(f"{slug}--{mode}--*.json"))))
    return json.loads(path.read_bytes())["payload"]


def _import(store: StoreUnderTest, payload: dict[str, Any], key: Ed25519PrivateKey) -> Any:
    bundle = read_bundle(signed(payload, key), approved(key))
    with store.sessions.begin() as session:
        return import_bundle(session, bundle, NOW)


def test_a_kernelbench_bundle_is_a_verified_run_of_its_problem_with_no_bound(kernelbench_db: StoreUnderTest) -> None:
    key = Ed25519PrivateKey.generate()
    payload = _shipped_payload(RELU, "pytorch-eager")
    outcome = _import(kernelbench_db, payload, key)
    with kernelbench_db.sessions() as session:
        run = session.scalar(select(Run).where(Run.name == outcome.run_name))
        assert run is not None and run.workload.name == RELU
        assert run.evidence == "verified" and run.protocol.name == "kernelindex-rerun-v2"
        assert run.latency_ns == payload["suite"]["latencyNs"]
        # Reported KernelBench runs of the same problem sit in other comparison groups.
        reported = session.scalars(select(Run.comparison_key).where(Run.workload_id == run.workload_id)).all()
        assert len(set(reported)) > 1
        result = session.scalar(select(RerunResult).where(RerunResult.run_id == run.id))
        assert result is not None and (result.bound_ns, result.achievable_bound_ns) == (0, 0)
        metrics = json.loads(run.manifest_json)["spec"]["sourceNative"]["metrics"]
        assert "sol_bound_ns" not in metrics


def _claims_a_bound(payload: dict[str, Any]) -> None:
    payload["cases"][0]["roofline"] = {
        "bytes": 1 << 20,
        "flops": 1 << 20,
        "boundNs": 1000.0,
        "limiter": "memory",
        "assumption": "made up",
    }


def _other_program(payload: dict[str, Any]) -> None:
    payload["workload"]["fixtureSha256"] = "0" * 64


def _relabelled_gpu(payload: dict[str, Any]) -> None:
    payload["environment"]["gpu"]["name"] = "NVIDIA B200"


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_claims_a_bound, "claims a roofline bound, but KernelIndex has no byte and FLOP model"),
        (_other_program, "measured a program .* other than"),
        (_relabelled_gpu, "is not the B200's"),
    ],
)
def test_a_kernelbench_bundle_that_claims_what_it_cannot_is_refused_whole(
    kernelbench_db: StoreUnderTest, tamper: Callable[[dict[str, Any]], None], message: str
) -> None:
    payload = _shipped_payload(RELU, "pytorch-eager")
    tamper(payload)
    with pytest.raises(BundleError, match=message):
        _import(kernelbench_db, payload, Ed25519PrivateKey.generate())
    with kernelbench_db.sessions() as session:
        for table in (RerunBundle, RerunResult, RerunCase):
            assert session.scalar(select(func.count()).select_from(table)) == 0
