"""l1-040 conv2d residual block in Triton, fused: the 32-channel hidden tensor never touches device memory.

Each program owns a BH x BW tile of output pixels of one image. For each of conv_out's nine taps it
computes the 32 hidden channels at the tile's pixels shifted by that tap, in registers, as 27 outer
products of conv_in's weights with shifted loads of x (zeroed where the shifted pixel lies outside the
image: conv_out pads the hidden tensor with zeros), then contracts them with conv_out's weights for that
tap. The output adds conv_out's bias and x. Device memory traffic is the minimum (x read, output
written); the price is arithmetic: conv_in runs nine times per pixel (about 17.3 kFLOP per pixel against
the 3.5 kFLOP the definition needs), so this kernel is compute-bound well above the roofline bound.
Float32 FMAs throughout (no tensor cores, no TF32).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernelindex.rerun.implementations._triton_util import autotune

HIDDEN = 32


@autotune(
    configs=[
        triton.Config({"BH": 8, "BW": 32}, num_warps=4),
        triton.Config({"BH": 4, "BW": 32}, num_warps=4),
        triton.Config({"BH": 8, "BW": 32}, num_warps=8),
    ],
    key=["H", "W"],
)
@triton.jit(do_not_specialize=["H", "W"])  # one compile per config for the whole suite
def _fused(x_ptr, wi_ptr, bi_ptr, wo_ptr, bo_ptr, out_ptr, H, W, HID: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):
    pw = tl.program_id(0)
    ph = tl.program_id(1)
    b = tl.program_id(2)
    i = tl.arange(0, BH * BW)
    r = ph * BH + i // BW
    col = pw * BW + i % BW
    hw = H * W
    x_img = x_ptr + b.to(tl.int64) * 3 * hw
    kk = tl.arange(0, HID)
    bias_in = tl.load(bi_ptr + kk)
    acc0 = tl.zeros([BH * BW], dtype=tl.float32)
    acc1 = tl.zeros([BH * BW], dtype=tl.float32)
    acc2 = tl.zeros([BH * BW], dtype=tl.float32)
    for tap in range(9):  # a run-time loop: one copy of the body keeps the code (and compile time) small
        qr = r + (tap // 3 - 1)
        qc = col + (tap % 3 - 1)
        q_in = (qr >= 0) & (qr < H) & (qc >= 0) & (qc < W)
        h = tl.zeros([HID, BH * BW], dtype=tl.float32) + bias_in[:, None]
        for ci in tl.static_range(3):
            for ey in tl.static_range(3):
                for ex in tl.static_range(3):
                    sr = qr + (ey - 1)
                    sc = qc + (ex - 1)
                    m = (sr >= 0) & (sr < H) & (sc >= 0) & (sc < W)
                    xv = tl.load(x_img + ci * hw + sr * W + sc, mask=m, other=0.0)
                    wv = tl.load(wi_ptr + kk * 27 + (ci * 9 + ey * 3 + ex))
                    h += wv[:, None] * xv[None, :]
        h = tl.where(q_in[None, :], h, 0.0)
        acc0 += tl.sum(tl.load(wo_ptr + kk * 9 + tap)[:, None] * h, axis=0)
        acc1 += tl.sum(tl.load(wo_ptr + HID * 9 + kk * 9 + tap)[:, None] * h, axis=0)
        acc2 += tl.sum(tl.load(wo_ptr + 2 * HID * 9 + kk * 9 + tap)[:, None] * h, axis=0)
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

    def grid(meta):
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
        HID=HIDDEN,
    )
    return (out,)
