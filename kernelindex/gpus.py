"""GPUs the registry tracks coverage for, measured or not.

A workload page says "Not measured on H100 for this workload" and a GPU page lists its
gaps, so the registry needs to know of GPUs that nobody has measured yet. GPUs seen in
environments are added to this list at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    slug: str
    product: str
    vendor: str
    architecture: str


B200 = Gpu("b200", "NVIDIA B200", "nvidia", "sm_100")
B300 = Gpu("b300", "NVIDIA B300", "nvidia", "sm_103")
GB200 = Gpu("gb200", "NVIDIA GB200", "nvidia", "sm_100")
GB300 = Gpu("gb300", "NVIDIA GB300", "nvidia", "sm_103")
H200 = Gpu("h200", "NVIDIA H200", "nvidia", "sm_90")
RTX_PRO_6000_SERVER = Gpu(
    "rtx-pro-6000-blackwell-server", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "nvidia", "sm_120"
)
ARC_PRO_B60 = Gpu("arc-pro-b60", "Intel Arc Pro B60", "intel", "Xe2 (Battlemage)")
H100_SXM = Gpu("h100-sxm", "NVIDIA H100 SXM", "nvidia", "sm_90")
H100_PCIE = Gpu("h100-pcie", "NVIDIA H100 PCIe", "nvidia", "sm_90")
A100_80 = Gpu("a100-sxm4-80gb", "NVIDIA A100 SXM4 80GB", "nvidia", "sm_80")
A100_40 = Gpu("a100-sxm4-40gb", "NVIDIA A100 SXM4 40GB", "nvidia", "sm_80")
L40S = Gpu("l40s", "NVIDIA L40S", "nvidia", "sm_89")
L4 = Gpu("l4", "NVIDIA L4", "nvidia", "sm_89")
A10G = Gpu("a10g", "NVIDIA A10G", "nvidia", "sm_86")
A10 = Gpu("a10", "NVIDIA A10", "nvidia", "sm_86")
RTX_A6000 = Gpu("rtx-a6000", "NVIDIA RTX A6000", "nvidia", "sm_86")
RTX_3090_TI = Gpu("rtx-3090-ti", "NVIDIA RTX 3090 Ti", "nvidia", "sm_86")
RTX_3090 = Gpu("rtx-3090", "NVIDIA RTX 3090", "nvidia", "sm_86")
RTX_4090 = Gpu("rtx-4090", "NVIDIA RTX 4090", "nvidia", "sm_89")
T4 = Gpu("t4", "NVIDIA T4", "nvidia", "sm_75")
# AMD sources (aiter's tuned tables) name a GPU by architecture and compute-unit count, not by
# product: each pair is a class of products, and the product name says so wherever it is shown.
MI300X = Gpu("mi300x", "AMD Instinct MI300X class: gfx942, 304 CUs", "amd", "gfx942")
MI308X = Gpu("mi308x", "AMD Instinct MI308X class: gfx942, 80 CUs", "amd", "gfx942")
MI355X = Gpu("mi350x-mi355x", "AMD Instinct MI350X/MI355X class: gfx950, 256 CUs", "amd", "gfx950")
# gfx1250 is an architecture target of LLVM's AMDGPU backend (GFX12.5); no source names the
# product it ships in, so each compute-unit count is a class of its own.
GFX1250_256 = Gpu("gfx1250-256cu", "AMD gfx1250, 256 CUs (product not named)", "amd", "gfx1250")
GFX1250_96 = Gpu("gfx1250-96cu", "AMD gfx1250, 96 CUs (product not named)", "amd", "gfx1250")
AMD_CLASSES = {
    ("gfx942", 304): MI300X,
    ("gfx942", 80): MI308X,
    ("gfx950", 256): MI355X,
    ("gfx1250", 256): GFX1250_256,
    ("gfx1250", 96): GFX1250_96,
}

TRACKED_GPUS = (
    B300,
    GB300,
    B200,
    GB200,
    H200,
    H100_SXM,
    H100_PCIE,
    A100_80,
    A100_40,
    L40S,
    L4,
    A10G,
    A10,
    RTX_PRO_6000_SERVER,
    RTX_A6000,
    RTX_3090_TI,
    RTX_3090,
    RTX_4090,
    T4,
    ARC_PRO_B60,
    MI300X,
    MI308X,
    MI355X,
    GFX1250_256,
    GFX1250_96,
)

# Device names as ``torch.cuda.get_device_name()`` reports them (the form sources publish),
# each to one GPU of the list above. A name not here is an unknown GPU: an adapter reports it
# rather than guess which product it is.
DEVICE_NAMES = {
    "NVIDIA B200": B200,
    "NVIDIA B300 SXM6 AC": B300,
    "NVIDIA GB200": GB200,
    "NVIDIA GB300": GB300,
    "NVIDIA H200": H200,
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": RTX_PRO_6000_SERVER,
    "Intel(R) Arc(TM) Pro B60 Graphics": ARC_PRO_B60,
    "NVIDIA H100 80GB HBM3": H100_SXM,
    "NVIDIA H100 PCIe": H100_PCIE,
    "NVIDIA A100-SXM4-80GB": A100_80,
    "NVIDIA A100-SXM4-40GB": A100_40,
    "NVIDIA L40S": L40S,
    "NVIDIA L4": L4,
    "NVIDIA A10G": A10G,
    "NVIDIA A10": A10,
    "NVIDIA RTX A6000": RTX_A6000,
    "NVIDIA GeForce RTX 3090 Ti": RTX_3090_TI,
    "NVIDIA GeForce RTX 3090": RTX_3090,
    "NVIDIA GeForce RTX 4090": RTX_4090,
    "Tesla T4": T4,
}


def gpu_for_device_name(name: str) -> Gpu | None:
    """The GPU a reported device name stands for, or ``None`` if it is not one we know."""
    return DEVICE_NAMES.get(name.strip())


def amd_gpu_class(gfx: str | None, cu_num: int | None) -> Gpu:
    """The product class of an AMD GPU named by architecture (``gfx942``) and compute-unit count.

    A pair not known here, or a missing half, is never completed by guessing: it becomes a GPU
    of its own that states exactly what is known ("gfx unknown, 304 CUs").
    """
    if gfx is not None and cu_num is not None and (gfx, cu_num) in AMD_CLASSES:
        return AMD_CLASSES[(gfx, cu_num)]
    arch = gfx or "gfx unknown"
    cus = f"{cu_num} CUs" if cu_num is not None else "CU count unknown"
    product = f"AMD GPU, {arch}, {cus}"
    return Gpu(_unclassed_amd_slug(product) or "amd-gpu", product, "amd", gfx or "unknown")


_UNCLASSED_AMD = re.compile(
    r"amd gpu, (gfx[0-9a-z]+|gfx unknown), (\d+) cus|amd gpu, (gfx[0-9a-z]+|gfx unknown), cu count unknown"
)


def _unclassed_amd_slug(product: str) -> str | None:
    """``amd-gfx-unknown-304cu`` for "AMD GPU, gfx unknown, 304 CUs": a plain slug for a URL."""
    match = _UNCLASSED_AMD.fullmatch(product.lower())
    if match is None:
        return None
    arch = (match[1] or match[3]).replace(" ", "-")
    return f"amd-{arch}-{match[2]}cu" if match[2] else f"amd-{arch}-cu-unknown"


_BY_PRODUCT = {gpu.product.lower(): gpu for gpu in TRACKED_GPUS}
# Product names other sources report for a tracked class.
_BY_PRODUCT["amd instinct mi300x"] = MI300X


def gpu_slug(vendor: str, product: str) -> str:
    """The slug of a GPU product: the tracked GPU's own (also for a device name the driver reports,
    such as a rerun's "NVIDIA H100 80GB HBM3"), else derived from the product name (vendor
    prefix dropped, lower case, spaces as dashes)."""
    if tracked := _BY_PRODUCT.get(product.lower()) or gpu_for_device_name(product):
        return tracked.slug
    if unclassed := _unclassed_amd_slug(product):
        return unclassed
    return product.lower().removeprefix(f"{vendor.lower()} ").replace(" ", "-")
