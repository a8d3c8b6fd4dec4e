"""l1-039 AdaIN-2d backward through torch.compile (Inductor): the eager formulation, compiled lazily on the
first call (never at import) with dynamic shapes so that the suite's cases share compiled code, in the
default mode (no max-autotune, to keep compile time small). Self-contained, so that the sha256 of this
file covers everything the implementation runs besides torch."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

RECOMPILE_LIMIT = 64


def _backward(
    grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    inv_std = std.reciprocal()
    xhat = (x - mean) * inv_std
    sum_g = grad_output.sum(dim=(2, 3), keepdim=True)
    sum_gx = (grad_output * xhat).sum(dim=(2, 3), keepdim=True)
    hw = x.shape[2] * x.shape[3]
    scale = weight.view(1, -1, 1, 1) * inv_std
    grad_input = scale * (grad_output - sum_g / hw - xhat * (sum_gx / hw))
    return grad_input, sum_gx.sum(dim=(0, 2, 3)), sum_g.sum(dim=(0, 2, 3))


@functools.cache
def _compiled() -> Callable[..., Any]:
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):  # renamed across torch versions
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), RECOMPILE_LIMIT))
    return torch.compile(_backward, dynamic=True)


def run(
    grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _compiled()(grad_output, x, weight, mean, std)
