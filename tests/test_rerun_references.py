"""The rerun references against independent derivations, in float64 on the CPU."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from kernelindex.rerun.inputs import adain_bwd_inputs, conv_residual_inputs
from kernelindex.rerun.references import ADAIN_EPS, adain_bwd_reference, conv_residual_reference

CONV_AXES = {"in_channels": 3, "hidden_channels": 32, "out_channels": 3, "kernel_size": 3, "padding": 1}


def _adain_forward(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The published forward with mean and std computed from x inside the graph."""
    mean = x.mean(dim=(2, 3), keepdim=True)
    std = torch.sqrt(((x - mean) ** 2).mean(dim=(2, 3), keepdim=True) + ADAIN_EPS)
    return gamma.view(1, -1, 1, 1) * (x - mean) / std + beta.view(1, -1, 1, 1)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 4, 1, 9), (3, 2, 6, 6)])
def test_adain_reference_matches_autograd_of_the_forward(shape: tuple[int, int, int, int]) -> None:
    n, c, h, w = shape
    go, x, weight, mean, std = (t.double() for t in adain_bwd_inputs({"N": n, "C": c, "H": h, "W": w}, 7))
    # mean and std as the forward computes them, in float64, so the comparison is exact to rounding
    mean = x.mean(dim=(2, 3), keepdim=True)
    std = torch.sqrt(x.var(dim=(2, 3), unbiased=False, keepdim=True) + ADAIN_EPS)
    xg = x.clone().requires_grad_(True)
    gamma = weight.clone().requires_grad_(True)
    beta = torch.randn(c, dtype=torch.float64).requires_grad_(True)
    _adain_forward(xg, gamma, beta).backward(go)

    grad_input, grad_weight, grad_bias = adain_bwd_reference(go, x, weight, mean, std)

    torch.testing.assert_close(grad_input, xg.grad, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(grad_weight, gamma.grad, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(grad_bias, beta.grad, rtol=1e-10, atol=1e-10)


def _conv_by_loops(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """A 3x3, stride 1, zero-padding 1 convolution written as plain loops over taps."""
    b, cin, h, w = x.shape
    cout = weight.shape[0]
    padded = torch.zeros((b, cin, h + 2, w + 2), dtype=x.dtype)
    padded[:, :, 1:-1, 1:-1] = x
    out = bias.view(1, cout, 1, 1).expand(b, cout, h, w).clone()
    for o, i, dy, dx in itertools.product(range(cout), range(cin), range(3), range(3)):
        out[:, o] += weight[o, i, dy, dx] * padded[:, i, dy : dy + h, dx : dx + w]
    return out


def _conv_by_unfold(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The same convolution as im2col (unfold) and an einsum."""
    b, _, h, w = x.shape
    cols = F.unfold(x, kernel_size=3, padding=1)  # [B, Cin*9, H*W]
    out = torch.einsum("ok,bkp->bop", weight.reshape(weight.shape[0], -1), cols) + bias.view(1, -1, 1)
    return out.reshape(b, -1, h, w)


@pytest.mark.parametrize("conv", [_conv_by_loops, _conv_by_unfold])
@pytest.mark.parametrize(("b", "h", "w"), [(1, 5, 6), (2, 3, 4), (1, 1, 7)])
def test_conv_residual_reference_matches_an_independent_formulation(conv, b: int, h: int, w: int) -> None:
    x, w_in, b_in, w_out, b_out = (
        t.double() for t in conv_residual_inputs(CONV_AXES | {"batch_size": b, "height": h, "width": w}, 3)
    )
    expected = x + conv(conv(x, w_in, b_in), w_out, b_out)

    (output,) = conv_residual_reference(x, w_in, b_in, w_out, b_out)

    torch.testing.assert_close(output, expected, rtol=1e-10, atol=1e-10)


def test_conv_residual_reference_pads_the_hidden_tensor_with_zeros() -> None:
    """At a border, conv_out sees zeros beyond the image, not conv_in evaluated on padding."""
    x, w_in, b_in, w_out, b_out = (
        t.double() for t in conv_residual_inputs(CONV_AXES | {"batch_size": 1, "height": 4, "width": 4}, 5)
    )
    hidden_full = F.conv2d(F.pad(x, (2, 2, 2, 2)), w_in, b_in)  # conv_in also evaluated on the padding ring
    wrong = x + F.conv2d(hidden_full, w_out, b_out)
    (output,) = conv_residual_reference(x, w_in, b_in, w_out, b_out)
    assert not torch.allclose(output[..., 0, 0], wrong[..., 0, 0])
    torch.testing.assert_close(output[..., 1:-1, 1:-1], wrong[..., 1:-1, 1:-1], rtol=1e-10, atol=1e-10)
