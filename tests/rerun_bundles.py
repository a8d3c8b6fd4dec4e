"""Signed rerun bundles made up for the import tests: real runner code builds and signs them,
with synthetic samples (these are test inputs, not measurements)."""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.ingest.reruns.importer import ApprovedKeys, Operator
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.rerun import payload as runner_payload
from kernelindex.rerun import protocol, protocol_v2
from kernelindex.rerun.bundle import key_id, public_key_b64, public_key_raw, sign_payload
from kernelindex.rerun.cases import load_suite
from kernelindex.rerun.implementations import REGISTRY

ADAIN = "l1-039-adaptive-instance-normalization-2d-backward"
CONV = "l1-040-conv2d-residual-block"
CEILINGS = {
    "copyBytesPerSecond": {"value": 4.2e12, "unit": "bytes/s", "method": "test copy"},
    "fp32FmaFlops": {"value": 6.0e13, "unit": "FLOP/s", "method": "test FMA"},
}
PASSED = [{"name": "out", "passed": True, "matchedRatio": 1.0, "maxErrorOverTolerance": 0.01}]


def environment(host: str, gpu_uuid: str) -> dict[str, Any]:
    clocks = {"via": "nvidia-smi", "clocks.sm": 1980, "clocks.max.sm": 1980, "clocks.mem": 3201}
    return {
        "gpu": {
            "vendor": "nvidia",
            "name": "NVIDIA H200",
            "architecture": "sm_90",
            "computeCapability": "9.0",
            "smCount": 132,
            "memoryBytes": 150109880320,
            "l2CacheBytes": 62914560,
            "uuid": gpu_uuid,
        },
        "driverVersion": "580.159.04",
        "cudaVersion": "13.0",
        "software": {"python": "3.12.3", "torch": "2.11.0+cu130", "triton": "3.6.0"},
        "hostname": host,
        "clocksAtStart": clocks,
        "clocksAtEnd": clocks,
    }


def make_payload(
    slug: str = ADAIN,
    implementation: str = "kernelindex-039-triton",
    *,
    base_ns: int = 120_000,
    host: str = "runner-a",
    gpu_uuid: str = "GPU-aaaa",
    session_id: str = "a" * 32,
    slow_case: int | None = None,
    version: int = 1,
    noisy_case: int | None = None,
) -> dict[str, Any]:
    """A passing bundle's payload under protocol ``version``; ``slow_case`` takes twice as long as the
    others' pattern; in ``noisy_case`` the last trial is half as slow again as the others."""
    suite = load_suite(slug)
    v2: dict[str, Any] = {}
    cases = []
    for case in suite.cases:
        if version == 2:
            v2 = {"measurement": {"method": "blocking_kernel"}, "bootstrap_seed": protocol_v2.SEED + case.index}
        samples = [
            [
                (base_ns + 100 * case.index + 7 * i + trial)
                * (2 if case.index == slow_case else 1)
                * (3 if case.index == noisy_case and trial == 2 else 2)
                // 2
                for i in range(50)
            ]
            for trial in range(3)
        ]
        cases.append(runner_payload.case_record(slug, case, CEILINGS, correctness=PASSED, samples_ns=samples, **v2))
    return runner_payload.build_payload(
        suite=suite.record(),
        implementation=REGISTRY[implementation].record(),
        environment=environment(host, gpu_uuid),
        ceilings=CEILINGS,
        cases=cases,
        started_at="2026-12-02T10:00:00.000Z",
        finished_at="2026-12-02T10:05:00.000Z",
        session_id=session_id,
        protocol_spec=(protocol_v2 if version == 2 else protocol).protocol_spec(),
    )


def signed(payload: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    return json.dumps(sign_payload(payload, key)).encode()


def approved(*keys: Ed25519PrivateKey) -> dict[str, str]:
    return {key_id(public_key_raw(k.public_key())): public_key_b64(k) for k in keys}


def operator(name: str) -> Operator:
    return Operator(id=name, name=f"Operator {name}", approved_by="maintainer")


def approved_keys(**operators: tuple[Ed25519PrivateKey, ...]) -> ApprovedKeys:
    """Keys grouped by operator id: ``approved_keys(lab_a=(key,), lab_b=(other,))``."""
    keys = [key for group in operators.values() for key in group]
    named = {
        key_id(public_key_raw(key.public_key())): operator(name) for name, group in operators.items() for key in group
    }
    return ApprovedKeys(approved(*keys), named)


def write_keys_file(path: Path, *keys: Ed25519PrivateKey, operator_id: str | None = None) -> Path:
    entries: list[dict[str, Any]] = [
        {"keyId": kid, "publicKey": pub, "label": "test runner"} for kid, pub in approved(*keys).items()
    ]
    if operator_id is not None:
        for entry in entries:
            entry["operator"] = {"id": operator_id, "name": f"Operator {operator_id}", "approvedBy": "maintainer"}
    path.write_text(json.dumps({"keys": entries}), encoding="utf-8")
    return path


def resign_with_tampering(data: bytes, key: Ed25519PrivateKey, change: Any) -> bytes:
    """Change the payload with ``change(payload)`` and sign it again: a bundle whose signature is
    good but whose content is wrong, which only the figure checks can catch."""
    payload = json.loads(data)["payload"]
    change(payload)
    return signed(payload, key)


@functools.cache
def v1_reruns() -> Path:
    """The shipped dataset's 17 protocol-v1 bundles (the SOL-ExecBench workloads) as a bundled folder
    of their own, its MANIFEST.sha256 rewritten: for stores that hold the SOL-ExecBench snapshot and
    no KernelBench workloads. ``test_rerun_bundled`` imports the whole dataset."""
    folder = Path(tempfile.mkdtemp(prefix="kernelindex-v1-reruns-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "bundles").mkdir()
    shutil.copyfile(BUNDLED_RERUNS / "runner-keys.json", folder / "runner-keys.json")
    for path in sorted((BUNDLED_RERUNS / "bundles").glob("*.json")):
        if json.loads(path.read_bytes())["payload"]["protocol"]["version"] == "1":
            shutil.copyfile(path, folder / "bundles" / path.name)
    assert len(list((folder / "bundles").iterdir())) == 17
    listing = [
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(folder).as_posix()}"
        for path in [folder / "runner-keys.json", *sorted((folder / "bundles").glob("*.json"))]
    ]
    (folder / "MANIFEST.sha256").write_text("\n".join(listing) + "\n", encoding="utf-8")
    return folder
