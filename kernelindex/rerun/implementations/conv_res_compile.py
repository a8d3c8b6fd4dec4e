"""l1-040 conv2d residual block: the eager formulation through torch.compile (Inductor, default mode,
dynamic shapes)."""

from __future__ import annotations

import torch

from kernelindex.rerun.implementations import conv_res_eager
from kernelindex.rerun.implementations._compile import compiled

_compiled = compiled(conv_res_eager.run)


def run(
    x: torch.Tensor,
    conv_in_weight: torch.Tensor,
    conv_in_bias: torch.Tensor,
    conv_out_weight: torch.Tensor,
    conv_out_bias: torch.Tensor,
) -> tuple[torch.Tensor]:
    return _compiled()(x, conv_in_weight, conv_in_bias, conv_out_weight, conv_out_bias)
