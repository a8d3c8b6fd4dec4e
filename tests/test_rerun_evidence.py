"""The evidence rules between controlled reruns, as pure functions: who ran them, where, and
whether they agree case by case."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kernelindex.gpu_specs import admitted_precisions, gpu_spec_table, speed_of_light_ns
from kernelindex.ranking import CaseFigure, RerunFacts, case_figures_agree, rerun_agreements, rerun_evidence

BASE = RerunFacts(
    run_id=1,
    operator="lab-a",
    key_id="ed25519:a",
    machine_id="GPU-a",
    session_id="s1",
    latency_ns=100_000,
    cases=(CaseFigure(50_000), CaseFigure(200_000)),
)


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        (CaseFigure(100_000), CaseFigure(110_000), True),  # 10 % of the smaller: on the bound
        (CaseFigure(100_000), CaseFigure(110_001), False),
        (CaseFigure(100, (95, 105)), CaseFigure(150, (104, 160)), True),  # intervals overlap, medians 50 % apart
        (CaseFigure(100, (95, 105)), CaseFigure(101, (106, 110)), True),  # close medians, disjoint intervals
        (CaseFigure(100, (99, 101)), CaseFigure(111, (110, 112)), False),  # 11 % apart, disjoint intervals
        (CaseFigure(100, (95, 105)), CaseFigure(108), True),  # one without an interval: medians decide
    ],
)
def test_case_figures_agree_by_interval_overlap_or_median(a: CaseFigure, b: CaseFigure, agree: bool) -> None:
    assert case_figures_agree(a, b) is agree
    assert case_figures_agree(b, a) is agree


@pytest.mark.parametrize(
    ("changes", "level"),
    [
        ({"operator": "lab-b", "key_id": "ed25519:b", "machine_id": "GPU-b", "session_id": "s2"}, "replicated"),
        ({"key_id": "ed25519:b", "machine_id": "GPU-b", "session_id": "s2"}, "reproduced"),  # same operator
        ({"session_id": "s2"}, "verified"),  # another lease of the same operator, key and GPU: repeated only
        ({"key_id": "ed25519:b", "session_id": "s2"}, "verified"),  # another key on the same GPU: repeated only
        ({"operator": "lab-b", "key_id": "ed25519:b", "session_id": "s2"}, "verified"),  # another operator, same GPU
        ({"operator": None, "key_id": "ed25519:b", "machine_id": "GPU-b", "session_id": "s2"}, "reproduced"),
        ({"run_id": 2}, "verified"),  # same lease, key and GPU: not a second run
        ({"operator": "lab-b", "key_id": "ed25519:b", "machine_id": "GPU-b", "counts": False}, "verified"),
    ],
)
def test_rerun_evidence_depends_on_who_ran_the_agreeing_rerun(changes: dict[str, object], level: str) -> None:
    other = replace(BASE, **{"run_id": 2, **changes})  # type: ignore[arg-type]
    assert rerun_evidence(BASE, [BASE, other]) == level


def test_agreements_name_reproductions_on_other_gpus_apart_from_repetitions_on_the_same() -> None:
    same_gpu = replace(BASE, run_id=2, key_id="ed25519:b", session_id="s2")
    other_gpu = replace(BASE, run_id=3, machine_id="GPU-b", session_id="s3")
    disagreeing = replace(BASE, run_id=4, machine_id="GPU-c", session_id="s4", latency_ns=200_000)
    found = rerun_agreements(BASE, [BASE, same_gpu, other_gpu, disagreeing])
    assert (found.reproduced_by, found.repeated_by, found.independent) == ((3,), (2,), False)
    assert rerun_evidence(BASE, [same_gpu]) == "verified" and rerun_evidence(BASE, [other_gpu]) == "reproduced"
    assert rerun_agreements(replace(BASE, counts=False), [other_gpu]).reproduced_by == ()


def test_one_case_off_by_2x_keeps_a_different_operator_from_replicating() -> None:
    other = replace(
        BASE,
        run_id=2,
        operator="lab-b",
        key_id="ed25519:b",
        machine_id="GPU-b",
        session_id="s2",
        latency_ns=104_000,  # the suite figure alone would agree
        cases=(CaseFigure(50_000), CaseFigure(400_000)),
    )
    assert rerun_evidence(BASE, [other]) == "verified"


def test_speed_of_light_takes_the_fastest_precision_the_tolerance_admits() -> None:
    h200 = gpu_spec_table().by_device_name("NVIDIA H200")
    assert h200 is not None
    # rtol 1e-3 admits TF32 and FP16 (rounding 2^-11), not BF16 (2^-8) or FP8.
    assert admitted_precisions(1e-3) == ["fp64", "fp64Tensor", "fp32", "tf32Tensor", "fp16Tensor"]
    assert "bf16Tensor" in admitted_precisions(1e-2)
    # 4.8e9 bytes take 1 ms at 4.8 TB/s; 9.895e11 FLOPs take 1 ms at the FP16 tensor peak.
    assert speed_of_light_ns(4_800_000_000, 1, h200, 1e-3) == pytest.approx(1e6)
    assert speed_of_light_ns(1, 989_500_000_000, h200, 1e-3) == pytest.approx(1e6)
    # At a tolerance only FP32 meets, the compute term is at the FP32 CUDA-core peak of 67 TFLOP/s.
    assert speed_of_light_ns(1, 67_000_000_000, h200, 1e-6) == pytest.approx(1e6)
