"""l1-039 AdaIN-2d backward in PyTorch eager: a handful of framework kernels, no fusion."""

from __future__ import annotations

import torch


def run(
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
