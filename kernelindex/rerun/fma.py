"""A compute-bound Triton kernel for the fp32 FMA ceiling: four independent FMA chains per element."""

from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl

BLOCK = 1024
ITERS = 256
UNROLL = 8
CHAINS = 4
PROGRAMS_PER_SM = 32

FMA_METHOD = (
    f"Triton kernel: each element runs {CHAINS} independent chains of x = x * a + b (fused multiply-add), "
    f"{UNROLL} unrolled x {ITERS} iterations, {PROGRAMS_PER_SM} programs of {BLOCK} elements per SM; "
    "2 FLOPs per FMA"
)


@triton.jit
def _fma_kernel(out_ptr, a, b, ITERS: tl.constexpr, UNROLL: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x0 = offs.to(tl.float32) * 1e-7
    x1 = x0 + 0.25
    x2 = x0 + 0.5
    x3 = x0 + 0.75
    for _ in range(ITERS):
        for _ in tl.static_range(UNROLL):
            x0 = x0 * a + b
            x1 = x1 * a + b
            x2 = x2 * a + b
            x3 = x3 * a + b
    tl.store(out_ptr + offs, x0 + x1 + x2 + x3)


def launch_fma(device: torch.device) -> tuple[torch.Tensor, int, Callable[[], None]]:
    """(output buffer, FLOPs per launch, a zero-argument launcher)."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    programs = sms * PROGRAMS_PER_SM
    out = torch.empty(programs * BLOCK, dtype=torch.float32, device=device)
    flops = 2 * CHAINS * UNROLL * ITERS * programs * BLOCK

    def launch() -> None:
        _fma_kernel[(programs,)](out, 0.999, 0.001, ITERS=ITERS, UNROLL=UNROLL, BLOCK=BLOCK, num_warps=4)

    return out, flops, launch
