"""The importer rechecks what a validly signed bundle claims: shipped H200 bundles, re-signed by a
key made here after one claim was changed, are refused whole with a message naming the figure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import func, select

from kernelindex.db.rerun_tables import RerunBundle
from kernelindex.ingest.reruns import read_bundle
from kernelindex.ingest.reruns.importer import ApprovedKeys, import_bundle_files
from kernelindex.rerun.bundle import BundleError
from tests.conftest import StoreUnderTest
from tests.rerun_bundles import approved, resign_with_tampering, v1_reruns

# The protocol-v1 bundles, of the SOL-ExecBench workloads: they have a byte and FLOP model, so every
# claim below applies (``test_rerun_kernelbench_import`` tampers with KernelBench bundles).
SHIPPED = sorted((v1_reruns() / "bundles").glob("*.json"))


@pytest.fixture(scope="module")
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def _impossible_copy_ceiling(payload: dict[str, Any]) -> None:
    payload["ceilings"]["copyBytesPerSecond"]["value"] = 40e12


def _bounds_cut_100x(payload: dict[str, Any]) -> None:
    for case in payload["cases"]:
        case["roofline"]["boundNs"] /= 100
    payload["suite"]["boundNs"] /= 100


def _relabelled_b200(payload: dict[str, Any]) -> None:
    payload["environment"]["gpu"]["name"] = "NVIDIA B200"


def _fma_faster_than_the_datasheet(payload: dict[str, Any]) -> None:
    payload["ceilings"]["fp32FmaFlops"]["value"] = 90e12


def _more_sms(payload: dict[str, Any]) -> None:
    payload["environment"]["gpu"]["smCount"] = 148


def _other_gpu_in_the_clock_reading(payload: dict[str, Any]) -> None:
    payload["environment"]["clocksAtEnd"]["uuid"] = "GPU-00000000"


def _clock_above_its_maximum(payload: dict[str, Any]) -> None:
    payload["environment"]["clocksAtStart"]["clocks.sm"] = 2500


def _bytes_halved(payload: dict[str, Any]) -> None:
    payload["cases"][2]["roofline"]["bytes"] //= 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_impossible_copy_ceiling, "copy ceiling 40,000 GB/s exceeds the H200's 4,800 GB/s datasheet bandwidth"),
        (_bounds_cut_100x, "case 0's roofline bound 2,254 ns is not the 225,405 ns its workload's byte and FLOP model"),
        (_bounds_cut_100x, "at the bundle's own ceilings (16 of 16 cases disagree)"),
        (_relabelled_b200, "compute capability 9.0 is not the B200's 10.0"),
        (_relabelled_b200, "GPU memory 139.8 GiB does not fit the B200's 180 GB datasheet size"),
        (_relabelled_b200, "nvidia-smi named the GPU 'NVIDIA H200' at the start, not 'NVIDIA B200'"),
        (_fma_faster_than_the_datasheet, "fp32 FMA ceiling 90.0 TFLOP/s exceeds the H200's 67.0 TFLOP/s"),
        (_other_gpu_in_the_clock_reading, "nvidia-smi read GPU GPU-00000000 at the end"),
        (_clock_above_its_maximum, "SM clock 2,500 MHz at the start is above the maximum 1,980 MHz"),
        (_bytes_halved, "case 2 claims"),
    ],
)
def test_a_resigned_shipped_bundle_with_an_impossible_claim_is_refused(
    key, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = resign_with_tampering(SHIPPED[0].read_bytes(), key, change)
    with pytest.raises(BundleError) as refused:
        read_bundle(data, approved(key))
    assert message in str(refused.value)


def test_gpu_checks_use_only_what_the_datasheet_states(key) -> None:
    # The H200 datasheet states no SM count: another count is not held against it, a B200's name is.
    read_bundle(resign_with_tampering(SHIPPED[0].read_bytes(), key, _more_sms), approved(key))
    with pytest.raises(BundleError, match="not in KernelIndex's datasheet table"):
        read_bundle(
            resign_with_tampering(
                SHIPPED[0].read_bytes(), key, lambda p: p["environment"]["gpu"].update(name="NVIDIA H300")
            ),
            approved(key),
        )


def test_every_shipped_bundle_passes_the_checks_resigned_unchanged(key) -> None:
    for path in SHIPPED:
        read_bundle(resign_with_tampering(path.read_bytes(), key, lambda payload: None), approved(key))


def test_a_refused_claim_leaves_nothing_behind(loaded_db: StoreUnderTest, key, tmp_path: Path) -> None:
    files = []
    for number, change in enumerate((_impossible_copy_ceiling, _bounds_cut_100x, _relabelled_b200)):
        path = tmp_path / f"{number}.json"
        path.write_bytes(resign_with_tampering(SHIPPED[number].read_bytes(), key, change))
        files.append(path)
    results = import_bundle_files(loaded_db.sessions, files, ApprovedKeys(approved(key), {}))
    assert all(result.outcome is None and "claims what cannot be" in (result.error or "") for result in results)
    with loaded_db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(RerunBundle)) == 0
