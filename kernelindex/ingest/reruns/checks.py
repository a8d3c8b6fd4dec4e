"""Rechecking what a signed bundle claims about its GPU, clocks, ceilings and bounds.

A valid signature says who wrote a bundle, not that what it says is possible. Before a bundle
is stored, every claim is held against something it cannot choose: the GPU it names against
that GPU's datasheet (``kernelindex/gpu_specs.json``), its measured ceilings against the
datasheet's peaks (a copy faster than the memory can move bytes is impossible), its clocks
against the GPU's stated range, and its roofline bounds against the workload's byte and FLOP
model at its own ceilings. Every disagreement is collected, so a refusal names each figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from kernelindex.gpu_specs import GIB, GpuSpec, Precision, gpu_spec_table
from kernelindex.ingest.reruns.payload import Payload
from kernelindex.rerun import roofline
from kernelindex.rerun.bundle import BundleError

# CUDA reports somewhat less memory than the datasheet's size (ECC and reserved memory: an H200's
# 141 GB shows as 139.8 GiB, an L40S's 48 GB as about 45 GiB); less than this share is another GPU.
MEMORY_REPORTED_SHARE = 0.9
# Bounds are floats computed from the same integers on another machine: equal up to rounding.
BOUND_RELATIVE_TOLERANCE = 1e-6

# The measured ceilings a bundle may carry, and the datasheet peak none of them can exceed. The
# fp32 matmul runs with TF32 off, so it is held to the fp32 (CUDA-core) peak.
FLOP_CEILINGS: dict[str, tuple[str, Precision]] = {
    "fp32FmaFlops": ("fp32 FMA ceiling", "fp32"),
    "fp32MatmulFlops": ("fp32 matmul ceiling", "fp32"),
    "bf16MatmulFlops": ("bf16 matmul ceiling", "bf16Tensor"),
}
COPY_CEILING = "copyBytesPerSecond"


def check_claims(payload: Payload) -> GpuSpec:
    """The datasheet entry of the bundle's GPU, once every claim checks out; ``BundleError`` naming
    each figure that does not."""
    gpu = payload.environment.gpu
    spec = gpu_spec_table().by_device_name(gpu.name)
    if spec is None:
        raise BundleError(
            f"bundle {payload.bundle_id}: GPU {gpu.name!r} is not in KernelIndex's datasheet table, "
            "so its ceilings and bounds cannot be checked"
        )
    problems = [
        *_identity_problems(payload, spec),
        *_clock_problems(payload, spec),
        *_ceiling_problems(payload.ceilings, spec),
        *_bound_problems(payload),
    ]
    if problems:
        raise BundleError(f"bundle {payload.bundle_id} claims what cannot be: " + "; ".join(problems))
    return spec


def _identity_problems(payload: Payload, spec: GpuSpec) -> list[str]:
    gpu, name = payload.environment.gpu, spec.short_name
    problems = []
    if gpu.compute_capability != spec.compute_capability:
        problems.append(f"compute capability {gpu.compute_capability} is not the {name}'s {spec.compute_capability}")
    if gpu.architecture != "sm_" + spec.compute_capability.replace(".", ""):
        problems.append(f"architecture {gpu.architecture} is not the {name}'s compute capability")
    memory_gb = spec.stated("memory_gb")
    if memory_gb is not None and not MEMORY_REPORTED_SHARE <= gpu.memory_bytes / (memory_gb * GIB) <= 1:
        problems.append(
            f"GPU memory {gpu.memory_bytes / GIB:,.1f} GiB does not fit the {name}'s {memory_gb:,.0f} GB datasheet size"
        )
    sm_count = spec.stated("sm_count")
    if sm_count is not None and gpu.sm_count != sm_count:
        problems.append(f"{gpu.sm_count} SMs is not the {name}'s {sm_count:,.0f}")
    l2_mb = spec.stated("l2_cache_mb")
    if l2_mb is not None and gpu.l2_cache_bytes != round(l2_mb * 2**20):
        problems.append(f"L2 cache {gpu.l2_cache_bytes / 2**20:,.1f} MB is not the {name}'s {l2_mb:,.0f} MB")
    for when, clocks in _clock_readings(payload):
        reported = clocks.get("name")
        if isinstance(reported, str) and reported.strip().casefold() != gpu.name.strip().casefold():
            problems.append(f"nvidia-smi named the GPU {reported!r} {when}, not {gpu.name!r}")
        uuid = clocks.get("uuid")
        if isinstance(uuid, str) and gpu.uuid is not None and uuid != gpu.uuid:
            problems.append(f"nvidia-smi read GPU {uuid} {when}, not the measured {gpu.uuid}")
    return problems


def _clock_readings(payload: Payload) -> list[tuple[str, Mapping[str, Any]]]:
    env = payload.environment
    return [("at the start", env.clocks_at_start), ("at the end", env.clocks_at_end)]


def _clock_problems(payload: Payload, spec: GpuSpec) -> list[str]:
    boost = spec.stated("boost_clock_mhz")
    problems = []
    for when, clocks in _clock_readings(payload):
        sm, max_sm = clocks.get("clocks.sm"), clocks.get("clocks.max.sm")
        if not _positive(sm) or not _positive(max_sm):
            problems.append(f"the SM clock read {when} is missing or not a positive number")
            continue
        if sm > max_sm:
            problems.append(f"SM clock {sm:,.0f} MHz {when} is above the maximum {max_sm:,.0f} MHz read beside it")
        if boost is not None and max_sm > boost:
            problems.append(
                f"maximum SM clock {max_sm:,.0f} MHz {when} exceeds the {spec.short_name}'s {boost:,.0f} MHz "
                "datasheet boost clock"
            )
    return problems


def _positive(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def ceiling_value(ceilings: Mapping[str, Any], key: str) -> float | None:
    """A measured ceiling's value (bytes/s or FLOP/s), or None when the bundle has none or it is not a number."""
    entry = ceilings.get(key)
    value = entry.get("value") if isinstance(entry, Mapping) else None
    return float(value) if _positive(value) else None


def _ceiling_problems(ceilings: Mapping[str, Any], spec: GpuSpec) -> list[str]:
    name = spec.short_name
    problems = []
    copy = ceiling_value(ceilings, COPY_CEILING)
    bandwidth = spec.memory_bandwidth_bytes_per_s
    if copy is None:
        problems.append("there is no copy ceiling")
    elif copy > bandwidth:
        problems.append(
            f"copy ceiling {copy / 1e9:,.0f} GB/s exceeds the {name}'s {bandwidth / 1e9:,.0f} GB/s datasheet bandwidth"
        )
    if ceiling_value(ceilings, "fp32FmaFlops") is None:
        problems.append("there is no fp32 FMA ceiling")
    for key, (label, precision) in FLOP_CEILINGS.items():
        measured, peak = ceiling_value(ceilings, key), spec.peak_flops_per_s(precision)
        if key in ceilings and measured is None:
            problems.append(f"the {label} is not a positive number")
        elif measured is not None and peak is not None and measured > peak:
            problems.append(
                f"{label} {measured / 1e12:,.1f} TFLOP/s exceeds the {name}'s {peak / 1e12:,.1f} TFLOP/s "
                f"datasheet {precision} peak"
            )
    return problems


def _bound_problems(payload: Payload) -> list[str]:
    """Each case's bytes, FLOPs and bound as the workload's model gives them at the bundle's ceilings."""
    counter = roofline.COUNTERS.get(payload.workload.slug)
    if counter is None:
        # An arbitrary program (a KernelBench problem) has no byte and FLOP model: a bound it claims
        # could not be rechecked, so it may claim none.
        if payload.suite.bound_ns is not None or any(case.roofline is not None for case in payload.cases):
            slug = payload.workload.slug
            return [f"it claims a roofline bound, but KernelIndex has no byte and FLOP model for {slug}"]
        return []
    copy = ceiling_value(payload.ceilings, COPY_CEILING)
    fma = ceiling_value(payload.ceilings, "fp32FmaFlops")
    if copy is None or fma is None:
        return []  # already named among the ceilings
    counts: list[str] = []
    case_bounds: list[str] = []
    bounds: list[float] = []
    for case in payload.cases:
        if case.roofline is None:
            counts.append(f"case {case.index} has no roofline bound")
            continue
        claimed = case.roofline
        bytes_moved, flops = counter(case.axes)
        if (claimed.bytes, claimed.flops) != (bytes_moved, flops):
            counts.append(
                f"case {case.index} claims {claimed.bytes:,} bytes and {claimed.flops:,} FLOPs where the workload's "
                f"model gives {bytes_moved:,} and {flops:,}"
            )
        expected = roofline.bound_ns_at_rate(bytes_moved, flops, copy, fma)
        if not math.isclose(claimed.bound_ns, expected, rel_tol=BOUND_RELATIVE_TOLERANCE):
            case_bounds.append(
                f"case {case.index}'s roofline bound {claimed.bound_ns:,.0f} ns is not the {expected:,.0f} ns its "
                "workload's byte and FLOP model gives at the bundle's own ceilings"
            )
        bounds.append(expected)
    firsts = (_first_of(counts, len(payload.cases)), _first_of(case_bounds, len(payload.cases)))
    problems = [problem for problem in firsts if problem is not None]
    suite_bound = payload.suite.bound_ns
    if bounds and len(bounds) == len(payload.cases):
        expected = math.exp(sum(math.log(b) for b in bounds) / len(bounds))
        if suite_bound is None or not math.isclose(suite_bound, expected, rel_tol=BOUND_RELATIVE_TOLERANCE):
            shown = "none" if suite_bound is None else f"{suite_bound:,.0f} ns"
            problems.append(f"the suite bound {shown} is not the {expected:,.0f} ns geometric mean of its cases")
    return problems


def _first_of(problems: list[str], cases: int) -> str | None:
    """The first of several per-case problems, with how many cases share it: one line, not sixteen."""
    if not problems:
        return None
    return problems[0] + (f" ({len(problems)} of {cases} cases disagree)" if len(problems) > 1 else "")
