"""GPUs the registry tracks coverage for, measured or not.

A workload page says "Not measured on H100 for this workload" and a GPU page lists its
gaps, so the registry needs to know of GPUs that nobody has measured yet. GPUs seen in
environments are added to this list at run time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    slug: str
    product: str
    vendor: str
    architecture: str


TRACKED_GPUS = (
    Gpu("b200", "NVIDIA B200", "nvidia", "sm_100"),
    Gpu("h200", "NVIDIA H200", "nvidia", "sm_90"),
    Gpu("h100", "NVIDIA H100", "nvidia", "sm_90"),
    Gpu("a100", "NVIDIA A100", "nvidia", "sm_80"),
    Gpu("mi300x", "AMD Instinct MI300X", "amd", "gfx942"),
)
