"""l1-040 conv2d residual block in Triton, fused: the 32-channel hidden tensor never touches device memory.

Each program owns a BH x BW tile of output pixels of one image. For each row of conv_out's 3x3 taps it
computes the 32 hidden channels at the tile's pixels shifted by the row's three taps, in registers, as
outer products of conv_in's weights with shifted loads of x (zeroed where the shifted hidden pixel lies
outside the image: conv_out pads the hidden tensor with zeros), then contracts them with conv_out's
weights for those taps. The output adds conv_out's bias and x. Device memory traffic is the minimum (x read, output
written); the price is arithmetic: conv_in runs nine times per pixel (about 17.3 kFLOP per pixel against
the 3.5 kFLOP the definition needs), so this kernel is compute-bound well above the roofline bound.
Float32 FMAs throughout (no tensor cores, no TF32). Compiled for sm_90 (Triton 3.8, without a GPU) it
uses 255 registers and no local memory, about 2.3 FMAs per global load (the weight loads are uniform
across a warp and hit L1).
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


HIDDEN = 32


@_autotune(
    # One output pixel per thread (with two, ptxas spills: seen in the sm_90 resource report); the
    # two-warp tile keeps more of the chip busy on the suite's small images.
    configs=[
        triton.Config({"BH": 4, "BW": 32}, num_warps=4),
        triton.Config({"BH": 8, "BW": 32}, num_warps=8),
        triton.Config({"BH": 2, "BW": 32}, num_warps=2),
    ],
    key=["H", "W"],
)
@triton.jit(do_not_specialize=["H", "W", "zero"])  # one compile per config for the whole suite
def _fused(
    x_ptr, wi_ptr, bi_ptr, wo_ptr, bo_ptr, out_ptr, H, W, zero,
    HID: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
):  # fmt: skip
    pw = tl.program_id(0)
    ph = tl.program_id(1)
    b = tl.program_id(2)
    i = tl.arange(0, BH * BW)
    r = ph * BH + i // BW
    col = pw * BW + i % BW
    hw = H * W
    x_img = x_ptr + b.to(tl.int64) * 3 * hw
    kk = tl.arange(0, HID)
    bias = tl.zeros([HID, BH * BW], dtype=tl.float32) + tl.load(bi_ptr + kk)[:, None]
    # the three columns of conv_out taps: hidden pixel (r + dy - 1, col + dx - 1), dx = 0, 1, 2
    c_in0 = (col - 1 >= 0) & (col - 1 < W)
    c_in1 = col < W
    c_in2 = col + 1 < W
    acc0 = tl.zeros([BH * BW], dtype=tl.float32)
    acc1 = tl.zeros([BH * BW], dtype=tl.float32)
    acc2 = tl.zeros([BH * BW], dtype=tl.float32)
    # A run-time loop over conv_out's tap rows keeps the code (and compile time) small. Each iteration
    # computes the hidden channels for the three taps of that row together, so every conv_in weight is
    # loaded once per row for three taps. `dy * zero` keeps those loads inside the loop: hoisted, the
    # 864 weights would not fit in registers.
    for dy in range(3):
        qr = r + (dy - 1)
        r_in = (qr >= 0) & (qr < H)
        h0 = bias
        h1 = bias
        h2 = bias
        for ci in tl.static_range(3):
            for ey in tl.static_range(3):
                sr = qr + (ey - 1)
                row = x_img + ci * hw + sr * W + col
                rm = (sr >= 0) & (sr < H)
                xm2 = tl.load(row - 2, mask=rm & (col - 2 >= 0) & (col - 2 < W), other=0.0)[None, :]
                xm1 = tl.load(row - 1, mask=rm & (col - 1 >= 0) & (col - 1 < W), other=0.0)[None, :]
                x00 = tl.load(row, mask=rm & (col < W), other=0.0)[None, :]
                xp1 = tl.load(row + 1, mask=rm & (col + 1 < W), other=0.0)[None, :]
                xp2 = tl.load(row + 2, mask=rm & (col + 2 < W), other=0.0)[None, :]
                w_row = wi_ptr + kk * 27 + (ci * 9 + ey * 3) + dy * zero
                w0 = tl.load(w_row)[:, None]
                w1 = tl.load(w_row + 1)[:, None]
                w2 = tl.load(w_row + 2)[:, None]
                # hidden column dx reads x at col + dx - 1 + ex - 1
                h0 = h0 + w0 * xm2
                h0 = h0 + w1 * xm1
                h0 = h0 + w2 * x00
                h1 = h1 + w0 * xm1
                h1 = h1 + w1 * x00
                h1 = h1 + w2 * xp1
                h2 = h2 + w0 * x00
                h2 = h2 + w1 * xp1
                h2 = h2 + w2 * xp2
        # conv_out pads the hidden tensor with zeros: a hidden pixel outside the image contributes nothing
        h0 = tl.where((r_in & c_in0)[None, :], h0, 0.0)
        h1 = tl.where((r_in & c_in1)[None, :], h1, 0.0)
        h2 = tl.where((r_in & c_in2)[None, :], h2, 0.0)
        wo = wo_ptr + kk * 9 + dy * 3
        acc0 += tl.sum(tl.load(wo)[:, None] * h0 + tl.load(wo + 1)[:, None] * h1 + tl.load(wo + 2)[:, None] * h2, 0)
        wo += HID * 9
        acc1 += tl.sum(tl.load(wo)[:, None] * h0 + tl.load(wo + 1)[:, None] * h1 + tl.load(wo + 2)[:, None] * h2, 0)
        wo += HID * 9
        acc2 += tl.sum(tl.load(wo)[:, None] * h0 + tl.load(wo + 1)[:, None] * h1 + tl.load(wo + 2)[:, None] * h2, 0)
    inside = (r < H) & (col < W)
    pix = r * W + col
    out_img = out_ptr + b.to(tl.int64) * 3 * hw
    x0 = tl.load(x_img + pix, mask=inside, other=0.0)
    x1 = tl.load(x_img + hw + pix, mask=inside, other=0.0)
    x2 = tl.load(x_img + 2 * hw + pix, mask=inside, other=0.0)
    tl.store(out_img + pix, acc0 + tl.load(bo_ptr) + x0, mask=inside)
    tl.store(out_img + hw + pix, acc1 + tl.load(bo_ptr + 1) + x1, mask=inside)
    tl.store(out_img + 2 * hw + pix, acc2 + tl.load(bo_ptr + 2) + x2, mask=inside)


def run(
    x: torch.Tensor,
    conv_in_weight: torch.Tensor,
    conv_in_bias: torch.Tensor,
    conv_out_weight: torch.Tensor,
    conv_out_bias: torch.Tensor,
) -> tuple[torch.Tensor]:
    b, cin, h, w = x.shape
    if cin != 3 or conv_in_weight.shape != (HIDDEN, 3, 3, 3) or conv_out_weight.shape != (3, HIDDEN, 3, 3):
        raise ValueError("this kernel is specialised to 3 -> 32 -> 3 channels with 3x3 kernels")
    xc = x.contiguous()
    out = torch.empty_like(xc)

    def grid(meta: dict[str, int]) -> tuple[int, int, int]:
        return (triton.cdiv(w, meta["BW"]), triton.cdiv(h, meta["BH"]), b)

    _fused[grid](
        xc,
        conv_in_weight.contiguous(),
        conv_in_bias.contiguous(),
        conv_out_weight.contiguous(),
        conv_out_bias.contiguous(),
        out,
        h,
        w,
        0,
        HID=HIDDEN,
    )
    return (out,)
