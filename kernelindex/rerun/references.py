"""Reference implementations in PyTorch, written from the published semantics of each workload.

Both take the workload's inputs in definition order and return its outputs in definition order. They are
computed in whatever dtype the inputs have; the runner calls them on float64 copies.
"""

from __future__ import annotations

import torch

ADAIN_EPS = 1e-5


def adain_bwd_reference(
    grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Backward of y = gamma * (x - mean) / std + beta, mean and std per (n, c) over H, W.

    std = sqrt(var + eps) with the biased variance and eps = 1e-5, and the backward treats mean and std
    as functions of x (the full instance-norm backward), with the given mean and std as their values:
      xhat = (x - mean) / std,  g = gamma * grad_output
      grad_input = (g - mean_hw(g) - xhat * mean_hw(g * xhat)) / std
      grad_weight[c] = sum_{n,h,w} grad_output * xhat,  grad_bias[c] = sum_{n,h,w} grad_output
    """
    xhat = (x - mean) / std
    g = grad_output * weight.view(1, -1, 1, 1)
    g_mean = g.mean(dim=(2, 3), keepdim=True)
    gx_mean = (g * xhat).mean(dim=(2, 3), keepdim=True)
    grad_input = (g - g_mean - xhat * gx_mean) / std
    grad_weight = (grad_output * xhat).sum(dim=(0, 2, 3))
    grad_bias = grad_output.sum(dim=(0, 2, 3))
    return grad_input, grad_weight, grad_bias


def conv_residual_reference(
    x: torch.Tensor,
    conv_in_weight: torch.Tensor,
    conv_in_bias: torch.Tensor,
    conv_out_weight: torch.Tensor,
    conv_out_bias: torch.Tensor,
) -> tuple[torch.Tensor]:
    """output = x + conv_out(conv_in(x)), both 3x3 convolutions with stride 1 and zero padding 1.

    No activation between the two convolutions: the published description names only "input
    convolution (3->32 channels), output convolution (32->3 channels), and residual skip connection",
    and that is the reading implemented here. conv_out's zero padding applies to the hidden tensor.
    """
    hidden = torch.nn.functional.conv2d(x, conv_in_weight, conv_in_bias, stride=1, padding=1)
    return (x + torch.nn.functional.conv2d(hidden, conv_out_weight, conv_out_bias, stride=1, padding=1),)


REFERENCES = {
    "l1-039-adaptive-instance-normalization-2d-backward": adain_bwd_reference,
    "l1-040-conv2d-residual-block": conv_residual_reference,
}
