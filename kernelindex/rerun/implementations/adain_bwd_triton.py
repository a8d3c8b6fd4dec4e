"""l1-039 AdaIN-2d backward in Triton: two passes over the [N, C, H, W] tensors.

Pass 1 (`_stats`): each program reads one CHUNK of one (n, c) plane of grad_output and x and writes two
partial sums, sum(go) and sum(go * xhat). Pass 2 (`_apply`): each program reduces its plane's partials
and writes grad_input = gamma / std * (go - mean(go) - xhat * mean(go * xhat)) for its chunk. A tiny
third launch (`_channels`) sums the partials over n and chunks into grad_weight and grad_bias.
Bytes moved: go and x twice, grad_input once (5 tensor passes against the minimum 3). Planes of up to
PLANE_MAX elements take a one-pass path instead (`_plane`, then `_channels`): 3 tensor passes. No
atomics: the result is deterministic.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl


def _interpreting() -> bool:
    """True under the Triton interpreter (TRITON_INTERPRET=1), where tensors live on the CPU."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _autotune(configs: list[triton.Config], key: list[str]) -> Callable[[Any], Any]:
    """triton.autotune over a handful of configs; only the first under the interpreter."""
    return triton.autotune(configs=configs[:1] if _interpreting() else configs, key=key)


CHUNK = 8192
# Planes of up to PLANE_MAX elements are done in one pass by one program each (`_plane`): go and x are
# read once, so the bytes moved are the minimum. 8192 float32 x 2 over 8 warps is 64 registers a thread.
PLANE_MAX = 8192


@_autotune(
    configs=[triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 2048}, num_warps=8)],
    key=["HW"],
)
@triton.jit
def _stats(go_ptr, x_ptr, mean_ptr, std_ptr, part_ptr, HW, S, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    s = tl.program_id(0)
    p = tl.program_id(1)
    base = p.to(tl.int64) * HW
    mu = tl.load(mean_ptr + p)
    inv = 1.0 / tl.load(std_ptr + p)
    acc_g = tl.zeros([BLOCK], dtype=tl.float32)
    acc_gx = tl.zeros([BLOCK], dtype=tl.float32)
    start = s * CHUNK
    for off in tl.static_range(0, CHUNK, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        m = idx < HW
        go = tl.load(go_ptr + base + idx, mask=m, other=0.0)
        xv = tl.load(x_ptr + base + idx, mask=m, other=0.0)
        acc_g += go
        acc_gx += go * ((xv - mu) * inv)
    out = part_ptr + (p.to(tl.int64) * S + s) * 2
    tl.store(out, tl.sum(acc_g, axis=0))
    tl.store(out + 1, tl.sum(acc_gx, axis=0))


@_autotune(
    configs=[triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 2048}, num_warps=8)],
    key=["HW"],
)
@triton.jit
def _apply(
    go_ptr,
    x_ptr,
    w_ptr,
    mean_ptr,
    std_ptr,
    part_ptr,
    gi_ptr,
    C,
    HW,
    S,
    inv_hw,
    CHUNK: tl.constexpr,
    S_POW2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    s = tl.program_id(0)
    p = tl.program_id(1)
    sidx = tl.arange(0, S_POW2)
    sm = sidx < S
    parts = part_ptr + (p.to(tl.int64) * S + sidx) * 2
    mean_g = tl.sum(tl.load(parts, mask=sm, other=0.0), axis=0) * inv_hw
    mean_gx = tl.sum(tl.load(parts + 1, mask=sm, other=0.0), axis=0) * inv_hw
    mu = tl.load(mean_ptr + p)
    inv = 1.0 / tl.load(std_ptr + p)
    scale = tl.load(w_ptr + p % C) * inv
    base = p.to(tl.int64) * HW
    start = s * CHUNK
    for off in tl.static_range(0, CHUNK, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        m = idx < HW
        go = tl.load(go_ptr + base + idx, mask=m, other=0.0)
        xv = tl.load(x_ptr + base + idx, mask=m, other=0.0)
        xh = (xv - mu) * inv
        tl.store(gi_ptr + base + idx, scale * (go - mean_g - xh * mean_gx), mask=m)


@triton.jit
def _plane(
    go_ptr, x_ptr, w_ptr, mean_ptr, std_ptr, part_ptr, gi_ptr, C, HW, inv_hw, BLOCK: tl.constexpr,
):  # fmt: skip
    """A whole (n, c) plane in one program, held in registers: one pass (go and x read once)."""
    p = tl.program_id(0)
    base = p.to(tl.int64) * HW
    idx = tl.arange(0, BLOCK)
    m = idx < HW
    go = tl.load(go_ptr + base + idx, mask=m, other=0.0)
    xv = tl.load(x_ptr + base + idx, mask=m, other=0.0)
    mu = tl.load(mean_ptr + p)
    inv = 1.0 / tl.load(std_ptr + p)
    xh = (xv - mu) * inv
    sum_g = tl.sum(go, axis=0)
    sum_gx = tl.sum(go * xh, axis=0)  # masked lanes: go = 0
    scale = tl.load(w_ptr + p % C) * inv
    tl.store(gi_ptr + base + idx, scale * (go - sum_g * inv_hw - xh * (sum_gx * inv_hw)), mask=m)
    tl.store(part_ptr + p.to(tl.int64) * 2, sum_g)
    tl.store(part_ptr + p.to(tl.int64) * 2 + 1, sum_gx)


@triton.jit
def _channels(part_ptr, gw_ptr, gb_ptr, N, C, S, S_POW2: tl.constexpr):
    c = tl.program_id(0)
    sidx = tl.arange(0, S_POW2)
    sm = sidx < S
    acc_g = tl.zeros([S_POW2], dtype=tl.float32)
    acc_gx = tl.zeros([S_POW2], dtype=tl.float32)
    for n in range(0, N):
        parts = part_ptr + ((n * C + c).to(tl.int64) * S + sidx) * 2
        acc_g += tl.load(parts, mask=sm, other=0.0)
        acc_gx += tl.load(parts + 1, mask=sm, other=0.0)
    tl.store(gb_ptr + c, tl.sum(acc_g, axis=0))
    tl.store(gw_ptr + c, tl.sum(acc_gx, axis=0))


def run(
    grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n, c, h, w = x.shape
    hw = h * w
    planes = n * c
    go = grad_output.contiguous()
    xc = x.contiguous()
    s = triton.cdiv(hw, CHUNK)
    s_pow2 = triton.next_power_of_2(s)
    part = torch.empty((planes, s, 2), dtype=torch.float32, device=x.device)
    grad_input = torch.empty_like(xc)
    grad_weight = torch.empty((c,), dtype=torch.float32, device=x.device)
    grad_bias = torch.empty((c,), dtype=torch.float32, device=x.device)
    mean_c, std_c, w_c = mean.contiguous(), std.contiguous(), weight.contiguous()
    if hw <= PLANE_MAX:
        _plane[(planes,)](go, xc, w_c, mean_c, std_c, part, grad_input, c, hw, 1.0 / hw, BLOCK=PLANE_MAX, num_warps=8)
        _channels[(c,)](part, grad_weight, grad_bias, n, c, 1, S_POW2=1)
        return grad_input, grad_weight, grad_bias
    _stats[(s, planes)](go, xc, mean_c, std_c, part, hw, s, CHUNK=CHUNK)
    _apply[(s, planes)](go, xc, w_c, mean_c, std_c, part, grad_input, c, hw, s, 1.0 / hw, CHUNK=CHUNK, S_POW2=s_pow2)
    _channels[(c,)](part, grad_weight, grad_bias, n, c, s, S_POW2=s_pow2)
    return grad_input, grad_weight, grad_bias
