"""Correctness of one case: every output against the float64 reference, under the protocol's tolerance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from kernelindex.rerun import protocol

# Elements compared at once: four float64 temporaries of 2**26 elements are 2 GiB.
CHUNK_ELEMENTS = 1 << 26


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _nan_max(a: float, b: float) -> float:
    """max that keeps a NaN, as torch's max does: an error that is NaN anywhere is NaN."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


def check_output(
    name: str,
    out: Any,
    ref: torch.Tensor,
    *,
    dtype: torch.dtype | None = torch.float32,
    atol: float = protocol.ATOL,
    rtol: float = protocol.RTOL,
) -> dict[str, Any]:
    """Compare one output with its reference. Errors are None when not finite (a NaN output fails).
    `dtype` is the dtype the output must have (None: any; the record names it)."""
    record: dict[str, Any] = {"name": name, "shape": list(ref.shape)}
    if not isinstance(out, torch.Tensor):
        return record | {"passed": False, "message": f"output {name} is a {type(out).__name__}, not a tensor"}
    if tuple(out.shape) != tuple(ref.shape):
        return record | {
            "passed": False,
            "message": f"output {name} has shape {list(out.shape)}, expected {list(ref.shape)}",
        }
    if dtype is not None and out.dtype != dtype:
        return record | {"passed": False, "message": f"output {name} has dtype {out.dtype}, expected {dtype}"}
    if dtype is None:
        record["dtype"] = str(out.dtype).removeprefix("torch.")
    total = ref.numel()
    matched_count = nonfinite = 0
    diff_sq = ref_sq = 0.0
    max_abs = worst = 0.0
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    for begin in range(0, total, CHUNK_ELEMENTS):
        # float64 copies of one chunk at a time: a check never needs more than a few chunks of memory
        got = flat_out[begin : begin + CHUNK_ELEMENTS].to(device=ref.device, dtype=torch.float64)
        want = flat_ref[begin : begin + CHUNK_ELEMENTS].to(torch.float64)
        diff = (got - want).abs()
        allowed = atol + rtol * want.abs()
        matched_count += int((diff <= allowed).sum().item())  # NaN compares False: a NaN never matches
        nonfinite += int((~torch.isfinite(got)).sum().item())
        diff_sq += float(diff.square().sum().item())
        ref_sq += float(want.square().sum().item())
        max_abs = _nan_max(max_abs, float(diff.max().item()))
        worst = _nan_max(worst, float((diff / allowed).max().item()))
    ratio = matched_count / total if total else 1.0
    rel_l2 = math.sqrt(diff_sq) / math.sqrt(ref_sq) if ref_sq > 0 else math.inf
    passed = nonfinite == 0 and ratio >= protocol.MATCHED_RATIO
    return record | {
        "passed": passed,
        "matchedRatio": ratio,
        "maxAbsError": _finite_or_none(max_abs),
        "maxErrorOverTolerance": _finite_or_none(worst),
        "relativeL2Error": _finite_or_none(rel_l2),
        "nonFiniteCount": nonfinite,
    }


def check_outputs(
    names: Sequence[str], outs: Any, refs: Sequence[torch.Tensor], **tolerance: Any
) -> list[dict[str, Any]]:
    """Check every output (`tolerance`: check_output's dtype, atol, rtol); a wrong number of outputs is one
    failed record."""
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    if not isinstance(outs, (tuple, list)) or len(outs) != len(refs):
        count = len(outs) if isinstance(outs, (tuple, list)) else type(outs).__name__
        return [{"name": ",".join(names), "passed": False, "message": f"expected {len(refs)} outputs, got {count}"}]
    return [check_output(n, o, r, **tolerance) for n, o, r in zip(names, outs, refs, strict=True)]
