"""Per-case lower bounds on run time from bytes that must move and operations that must run (no torch).

bound_ns = max(bytes / copy_rate, flops / fp32_rate). The compute rate is the plain float32 CUDA-core
(FMA) rate measured in the same run, because both workloads are float32 and the reference precision is
float32 (the runner switches TF32 off). Were TF32 or bf16 tensor-core arithmetic allowed, the compute
term would shrink by the ratio of the measured fp32 rate to the TF32 / bf16 matrix rate (about 7x / 15x
on an H200 by its datasheet): `bound_ns_at_rate` gives that alternative from the same counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FP32_BYTES = 4

ASSUMPTION = (
    "Bytes: each input read once and each output written once at their dtypes (float32). "
    "FLOPs: the arithmetic the definition needs (multiply-add = 2 FLOPs). "
    "bound = max(bytes / measured device-to-device copy rate (read+write bytes per second), "
    "FLOPs / measured fp32 CUDA-core FMA rate): float32 workload, float32 reference precision, TF32 off. "
    "With TF32 or bf16 tensor cores the compute term would scale by fp32_rate / matrix_rate instead."
)

# AdaIN-2d backward, per element of the [N, C, H, W] tensors: two reductions (sum g, sum g*xhat: 1 add +
# 1 FMA = 3 FLOPs after xhat), xhat = (x - mean) * inv_std (2 FLOPs), and
# grad_input = gamma*inv_std * (g - a - xhat*b) (4 FLOPs): 9 FLOPs per element, a small constant.
ADAIN_BWD_FLOPS_PER_ELEMENT = 9


def _axis(axes: Mapping[str, int], name: str) -> int:
    value = axes[name]
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"axis {name} must be a positive integer, got {value!r}")
    return value


def adain_bwd_counts(axes: Mapping[str, int]) -> tuple[int, int]:
    """(bytes, flops) for l1-039: inputs grad_output, x [N,C,H,W], weight [C], mean, std [N,C,1,1];
    outputs grad_input [N,C,H,W], grad_weight [C], grad_bias [C]."""
    n, c, h, w = (_axis(axes, k) for k in ("N", "C", "H", "W"))
    elements = n * c * h * w
    read = (2 * elements + c + 2 * n * c) * FP32_BYTES
    written = (elements + 2 * c) * FP32_BYTES
    return read + written, ADAIN_BWD_FLOPS_PER_ELEMENT * elements


def conv_residual_counts(axes: Mapping[str, int]) -> tuple[int, int]:
    """(bytes, flops) for l1-040: x [B,3,H,W] + weights in, output [B,3,H,W] out; FLOPs of
    conv_in (3->32, 3x3) and conv_out (32->3, 3x3) as multiply-adds x 2, plus the two bias adds
    and the residual add."""
    b, h, w = (_axis(axes, k) for k in ("batch_size", "height", "width"))
    cin, hid, cout, k = (_axis(axes, n) for n in ("in_channels", "hidden_channels", "out_channels", "kernel_size"))
    pixels = b * h * w
    weights = hid * cin * k * k + hid + cout * hid * k * k + cout
    read = (pixels * cin + weights) * FP32_BYTES
    written = pixels * cout * FP32_BYTES
    macs = pixels * (hid * cin * k * k + cout * hid * k * k)
    adds = pixels * (hid + cout + cout)
    return read + written, 2 * macs + adds


COUNTERS = {
    "l1-039-adaptive-instance-normalization-2d-backward": adain_bwd_counts,
    "l1-040-conv2d-residual-block": conv_residual_counts,
}


def bound_ns_at_rate(bytes_moved: int, flops: int, bytes_per_s: float, flops_per_s: float) -> float:
    """max(bytes / bytes_per_s, flops / flops_per_s) in nanoseconds."""
    if bytes_per_s <= 0 or flops_per_s <= 0:
        raise ValueError("rates must be positive")
    return max(bytes_moved / bytes_per_s, flops / flops_per_s) * 1e9


def case_roofline(
    slug: str, axes: Mapping[str, int], copy_bytes_per_s: float, fp32_flops_per_s: float
) -> dict[str, Any]:
    """The roofline record of one case: bytes, FLOPs, the two times, the bound and which term limits."""
    bytes_moved, flops = COUNTERS[slug](axes)
    memory_ns = bytes_moved / copy_bytes_per_s * 1e9
    compute_ns = flops / fp32_flops_per_s * 1e9
    return {
        "bytes": bytes_moved,
        "flops": flops,
        "memoryNs": memory_ns,
        "computeNs": compute_ns,
        "boundNs": max(memory_ns, compute_ns),
        "limiter": "memory" if memory_ns >= compute_ns else "compute",
        "assumption": ASSUMPTION,
    }
