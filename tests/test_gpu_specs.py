"""The GPU datasheet table: every entry is sourced, figures are read as stated, and lookups
by CUDA device name find the GPUs the bundled reruns were measured on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelindex.gpu_specs import gpu_spec_table

BUNDLES = Path(__file__).resolve().parents[1] / "fixtures" / "reruns" / "bundles"


def test_gpu_specs_cover_the_required_gpus_each_with_an_nvidia_source() -> None:
    table = gpu_spec_table()
    slugs = {gpu.slug for gpu in table.gpus}
    assert {"h100-sxm", "h200", "b200", "a100-sxm4-80gb", "l40s"} <= slugs
    for gpu in table.gpus:
        assert all(source.url.host and source.url.host.endswith("nvidia.com") for source in gpu.sources), gpu.slug


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("NVIDIA H200", "h200"),
        ("nvidia b200", "b200"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("AMD MI300X", None),
    ],
)
def test_gpu_specs_find_a_gpu_by_its_cuda_device_name(name: str, slug: str | None) -> None:
    found = gpu_spec_table().by_device_name(name)
    assert (found.slug if found else None) == slug


def test_gpu_specs_read_not_stated_as_none_and_tensor_rates_as_dense() -> None:
    h200 = gpu_spec_table().by_device_name("NVIDIA H200")
    assert h200 is not None
    assert h200.stated("sm_count") is None and h200.stated("l2_cache_mb") is None
    assert h200.memory_bandwidth_bytes_per_s == 4.8e12
    # The datasheet prints 1,979 TFLOPS BF16 with sparsity: dense is half.
    assert h200.peak_flops_per_s("bf16Tensor") == pytest.approx(989.5e12)
    a100 = gpu_spec_table().by_device_name("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.peak_flops_per_s("fp8Tensor") is None
    assert a100.stated("boost_clock_mhz") == 1410


def test_every_bundled_rerun_gpu_is_in_the_table() -> None:
    names = {json.loads(path.read_text())["payload"]["environment"]["gpu"]["name"] for path in BUNDLES.glob("*.json")}
    assert names and all(gpu_spec_table().by_device_name(name) for name in names)
