"""l1-039 AdaIN-2d backward: the eager formulation through torch.compile (Inductor, default mode,
dynamic shapes so that the suite's cases share compiled code)."""

from __future__ import annotations

import torch

from kernelindex.rerun.implementations import adain_bwd_eager
from kernelindex.rerun.implementations._compile import compiled

_compiled = compiled(adain_bwd_eager.run)


def run(
    grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _compiled()(grad_output, x, weight, mean, std)
