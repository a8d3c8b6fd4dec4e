"""Importing source-faithful KernelBench bundles: filed under the problem's workload in a comparison group
(and comparability family) of their own, never with strict v2 reruns of the same program; refused when a
case did not record the protocol's settings or the program is not KernelBench's; the protocol's page lists
what differs from strict v2 and why."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.ingest.reruns import read_bundle
from kernelindex.ingest.reruns.importer import import_bundle
from kernelindex.ingest.sources import ingest
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.rerun import protocol_faithful
from kernelindex.rerun.bundle import BundleError
from kernelindex.settings import Settings
from tests.conftest import StoreUnderTest
from tests.kernelbench_slice import make_slice
from tests.rerun_bundles import approved, make_payload, signed

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
RELU = "kernelbench-l1-19-relu-cbbfc940"
FAITHFUL = "kernelindex-rerun-kernelbench-faithful-v1"


@pytest.fixture
def kernelbench_db(db: StoreUnderTest, tmp_path: Path) -> StoreUnderTest:
    settings = Settings(database_url=db.url, github_token=None)
    summary = ingest(db.sessions, settings, "kernelbench", snapshot=make_slice(tmp_path), sleep=lambda _: None)
    assert summary.status == "succeeded", summary.errors
    return db


def _strict_payload() -> dict[str, Any]:
    path = next(iter(sorted((BUNDLED_RERUNS / "bundles").glob(f"{RELU}--pytorch-eager--*.json"))))
    payload: dict[str, Any] = json.loads(path.read_bytes())["payload"]
    return payload


def _faithful(payload: dict[str, Any]) -> dict[str, Any]:
    """The same measurement as if made under the source-faithful protocol (ReLU has no convolution)."""
    result = copy.deepcopy(payload)
    result["protocol"] = protocol_faithful.protocol_spec()
    result["bundleId"] = "f" * 32
    for case in result["cases"]:
        case["measurement"]["settings"] = dict(protocol_faithful.SETTINGS)
    return result


def _import(store: StoreUnderTest, payload: dict[str, Any], key: Ed25519PrivateKey) -> Any:
    bundle = read_bundle(signed(payload, key), approved(key))
    with store.sessions.begin() as session:
        return import_bundle(session, bundle, NOW)


def test_a_faithful_bundle_is_its_own_group_beside_the_strict_one(kernelbench_db: StoreUnderTest) -> None:
    key = Ed25519PrivateKey.generate()
    strict = _import(kernelbench_db, _strict_payload(), key)
    faithful = _import(kernelbench_db, _faithful(_strict_payload()), key)
    with kernelbench_db.sessions() as session:
        runs = {
            r.name: r for r in session.scalars(select(Run).where(Run.name.in_([strict.run_name, faithful.run_name])))
        }
        one, other = runs[strict.run_name], runs[faithful.run_name]
        assert other.protocol.name == FAITHFUL and one.protocol.name == "kernelindex-rerun-v2"
        assert other.comparison_key != one.comparison_key and other.workload_id == one.workload_id
        assert other.environment_id == one.environment_id  # same GPU and stack: only the protocol differs
        manifest = json.loads(other.protocol.manifest_json)
        assert manifest["spec"]["comparability"]["family"] == "kernelindex_rerun_faithful"
        assert manifest["metadata"]["title"] == protocol_faithful.TITLE
        assert "torch.backends.cudnn.allow_tf32" in manifest["spec"]["comparability"]["notes"]
        assert other.evidence == "verified"


def _no_settings(payload: dict[str, Any]) -> None:
    del payload["cases"][0]["measurement"]["settings"]


def _tf32_off(payload: dict[str, Any]) -> None:
    payload["cases"][0]["measurement"]["settings"]["torch.backends.cudnn.allow_tf32"] = False


def _noisy(payload: dict[str, Any]) -> None:
    samples = payload["cases"][0]["timing"]["samplesNs"]
    samples[2] = [s * 2 for s in samples[2]]


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_no_settings, "did not record the source-faithful protocol's settings"),
        (_tf32_off, "did not record the source-faithful protocol's settings"),
        (_noisy, "does not follow from its samples|noise gate"),
    ],
)
def test_a_faithful_bundle_that_did_not_run_as_published_is_refused(tamper: Any, message: str) -> None:
    key = Ed25519PrivateKey.generate()
    payload = _faithful(_strict_payload())
    tamper(payload)
    with pytest.raises(BundleError, match=message):
        read_bundle(signed(payload, key), approved(key))


def test_the_faithful_protocol_measures_kernelbench_programs_only() -> None:
    key = Ed25519PrivateKey.generate()
    payload = make_payload(version=2)
    payload["protocol"] = protocol_faithful.protocol_spec()
    for case in payload["cases"]:
        case["measurement"]["settings"] = dict(protocol_faithful.SETTINGS)
    with pytest.raises(BundleError, match="measures KernelBench programs only, not sol-execbench"):
        read_bundle(signed(payload, key), approved(key))


def test_the_protocol_page_lists_what_differs_from_strict_v2_and_why(client: TestClient) -> None:
    from bs4 import BeautifulSoup

    response = client.get(f"/protocols/{FAITHFUL}")
    assert response.status_code == 200
    page = BeautifulSoup(response.text, "html.parser")
    assert page.find("h1").get_text(strip=True) == protocol_faithful.TITLE
    rules = page.select_one("#rules").get_text(" ", strip=True)
    for words in ("torch.backends.cudnn.allow_tf32 = True", "False under strict v2", "TF32 tensor cores",
                  "training mode", "torch.no_grad()", "blocking kernel", "noise gate", "never against strict v2",
                  "confirms or contradicts"):  # fmt: skip
        assert words in rules, words
    twin = client.get(f"/protocols/{FAITHFUL}.json").json()
    assert twin["manifest"]["spec"]["comparability"]["family"] == "kernelindex_rerun_faithful"
    assert twin["digest"] != client.get("/protocols/kernelindex-rerun-v2.json").json()["digest"]
