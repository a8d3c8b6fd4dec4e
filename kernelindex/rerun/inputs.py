"""Seeded random inputs for a case: deterministic for a (workload, case, seed, device), never zeros."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import torch

from kernelindex.rerun.references import ADAIN_EPS


class _Float32(TypedDict):
    """The keyword arguments of every torch.randn and torch.rand call here."""

    device: torch.device | str
    dtype: torch.dtype
    generator: torch.Generator


def _generator(device: torch.device | str, seed: int) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def adain_bwd_inputs(axes: Mapping[str, int], seed: int, device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """grad_output, x, weight, mean, std. x has a different offset and scale in every (n, c) plane;
    mean and std are computed from x (in float64, then rounded to float32) so that they are consistent:
    std = sqrt(biased var + 1e-5)."""
    n, c, h, w = axes["N"], axes["C"], axes["H"], axes["W"]
    gen = _generator(device, seed)
    f32: _Float32 = {"device": device, "dtype": torch.float32, "generator": gen}
    grad_output = torch.randn((n, c, h, w), **f32)
    offset = torch.randn((n, c, 1, 1), **f32) * 2.0
    scale = torch.rand((n, c, 1, 1), **f32) * 1.5 + 0.25
    x = torch.randn((n, c, h, w), **f32) * scale + offset
    weight = torch.randn((c,), **f32) * 0.5 + 1.0
    x64 = x.double()
    mean = x64.mean(dim=(2, 3), keepdim=True)
    std = torch.sqrt(x64.var(dim=(2, 3), unbiased=False, keepdim=True) + ADAIN_EPS)
    del x64
    return [grad_output, x, weight, mean.float(), std.float()]


def conv_residual_inputs(axes: Mapping[str, int], seed: int, device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """x, conv_in_weight, conv_in_bias, conv_out_weight, conv_out_bias. Weights are scaled by
    1/sqrt(fan_in) so that the hidden and output values stay of order one."""
    b, h, w = axes["batch_size"], axes["height"], axes["width"]
    cin, hid, cout, k = axes["in_channels"], axes["hidden_channels"], axes["out_channels"], axes["kernel_size"]
    gen = _generator(device, seed)
    f32: _Float32 = {"device": device, "dtype": torch.float32, "generator": gen}
    x = torch.randn((b, cin, h, w), **f32)
    w_in = torch.randn((hid, cin, k, k), **f32) / (cin * k * k) ** 0.5
    b_in = torch.randn((hid,), **f32) * 0.1
    w_out = torch.randn((cout, hid, k, k), **f32) / (hid * k * k) ** 0.5
    b_out = torch.randn((cout,), **f32) * 0.1
    return [x, w_in, b_in, w_out, b_out]


GENERATORS = {
    "l1-039-adaptive-instance-normalization-2d-backward": adain_bwd_inputs,
    "l1-040-conv2d-residual-block": conv_residual_inputs,
}


def make_inputs(
    slug: str, axes: Mapping[str, int], seed: int, device: torch.device | str = "cpu"
) -> list[torch.Tensor]:
    """The inputs of one case, in the workload's definition order."""
    return GENERATORS[slug](axes, seed, device)
