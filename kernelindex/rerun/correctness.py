"""Correctness of one case: every output against the float64 reference, under the protocol's tolerance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from kernelindex.rerun import protocol


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


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
    got = out.detach().to(device=ref.device, dtype=torch.float64)
    ref = ref.to(torch.float64)
    diff = (got - ref).abs()
    allowed = atol + rtol * ref.abs()
    matched = diff <= allowed  # NaN compares False: a NaN never matches
    total = ref.numel()
    ratio = matched.sum().item() / total if total else 1.0
    nonfinite = int((~torch.isfinite(got)).sum().item())
    ref_norm = torch.linalg.vector_norm(ref).item()
    rel_l2 = torch.linalg.vector_norm(got - ref).item() / ref_norm if ref_norm > 0 else math.inf
    max_abs = diff.max().item() if total else 0.0
    worst = (diff / allowed).max().item() if total else 0.0
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
