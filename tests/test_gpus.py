"""The GPU table: every reported device name maps to one tracked GPU, and slugs are stable."""

from __future__ import annotations

from kernelindex.gpus import DEVICE_NAMES, TRACKED_GPUS, gpu_for_device_name, gpu_slug


def test_every_device_name_maps_to_a_tracked_gpu() -> None:
    assert set(DEVICE_NAMES.values()) <= set(TRACKED_GPUS)


def test_tracked_slugs_and_products_are_unique() -> None:
    assert len({gpu.slug for gpu in TRACKED_GPUS}) == len(TRACKED_GPUS)
    assert len({gpu.product.lower() for gpu in TRACKED_GPUS}) == len(TRACKED_GPUS)


def test_a_tracked_product_keeps_its_own_slug() -> None:
    assert gpu_slug("amd", "AMD Instinct MI300X") == "mi300x"
    assert gpu_slug("nvidia", "NVIDIA H100 SXM") == "h100-sxm"


def test_an_untracked_product_gets_a_derived_slug() -> None:
    assert gpu_slug("nvidia", "NVIDIA GH200 480GB") == "gh200-480gb"


def test_device_names_as_torch_reports_them() -> None:
    assert gpu_for_device_name("NVIDIA H100 80GB HBM3").slug == "h100-sxm"  # type: ignore[union-attr]
    assert gpu_for_device_name(" Tesla T4 ").slug == "t4"  # type: ignore[union-attr]
    assert gpu_for_device_name("NVIDIA H100 NVL") is None
