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
    Gpu("mi300x", "AMD Instinct MI300X", "amd", "gfx942"),
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


_BY_PRODUCT = {gpu.product.lower(): gpu for gpu in TRACKED_GPUS}


def gpu_slug(vendor: str, product: str) -> str:
    """The slug of a GPU product: the tracked GPU's own, else derived from the product name
    (vendor prefix dropped, lower case, spaces as dashes)."""
    if tracked := _BY_PRODUCT.get(product.lower()):
        return tracked.slug
    return product.lower().removeprefix(f"{vendor.lower()} ").replace(" ", "-")
