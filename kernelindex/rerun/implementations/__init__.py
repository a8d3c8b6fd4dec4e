"""The open implementations the runner measures, with their metadata.

Each implementation is one self-contained module with `run(*inputs) -> tuple(outputs)`, inputs and
outputs in the workload's definition order: the sha256 of that file covers all of its own code. The
registry names them and says where their source is; `load` imports a module only when it is measured,
so the metadata is readable without torch or triton.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelindex.rerun import RUNNER_VERSION

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parents[2]

ADAIN = "l1-039-adaptive-instance-normalization-2d-backward"
CONV = "l1-040-conv2d-residual-block"


@dataclass(frozen=True)
class Implementation:
    name: str
    workload: str
    module: str
    language: str
    runtime: str
    description: str
    needs: str  # the pip requirements of the install recipe

    @property
    def source_path(self) -> Path:
        return PACKAGE_DIR / f"{self.module}.py"

    def source_sha256(self) -> str:
        return hashlib.sha256(self.source_path.read_bytes()).hexdigest()

    def load(self) -> Callable[..., Any]:
        return importlib.import_module(f"{__name__}.{self.module}").run

    def record(self, versions: dict[str, str] | None = None) -> dict[str, Any]:
        """The implementation as written into a bundle; `versions` pins the recipe to what was run."""
        versions = versions or {}
        pins = " ".join(f"{pkg}=={versions[pkg]}" if pkg in versions else pkg for pkg in self.needs.split())
        return {
            "name": self.name,
            "project": "KernelIndex",
            "revision": f"rerun-{RUNNER_VERSION}+sha256.{self.source_sha256()[:12]}",
            "language": self.language,
            "runtime": self.runtime,
            "license": "Apache-2.0",
            "sourceAvailable": True,
            "sourcePath": str(self.source_path.relative_to(REPO_ROOT)),
            "sourceSha256": self.source_sha256(),
            "description": self.description,
            "installRecipe": (
                f"pip install {pins} cryptography rfc8785; "
                f"python3 -m kernelindex.rerun measure --key KEYFILE --out DIR --workload {self.workload} "
                f"--implementation {self.name}"
            ),
        }


_ALL = [
    Implementation(
        "kernelindex-039-eager", ADAIN, "adain_bwd_eager", "Python", "PyTorch eager",
        "Framework kernels: two reductions over H, W and an elementwise grad_input.", "torch",
    ),
    Implementation(
        "kernelindex-039-compile", ADAIN, "adain_bwd_compile", "Python", "PyTorch torch.compile (Inductor)",
        "The eager formulation compiled by torch.compile, default mode, dynamic shapes.", "torch triton",
    ),
    Implementation(
        "kernelindex-039-triton", ADAIN, "adain_bwd_triton", "Triton", "Triton",
        "Hand-written Triton: per-(n, c) partial sums in one pass, grad_input in a second; "
        "planes of up to 8192 elements in a single pass.", "torch triton",
    ),
    Implementation(
        "kernelindex-040-eager", CONV, "conv_res_eager", "Python", "PyTorch eager",
        "Two cuDNN convolutions and an add; the hidden tensor goes through device memory.", "torch",
    ),
    Implementation(
        "kernelindex-040-compile", CONV, "conv_res_compile", "Python", "PyTorch torch.compile (Inductor)",
        "The eager formulation compiled by torch.compile, default mode, dynamic shapes.", "torch triton",
    ),
    Implementation(
        "kernelindex-040-triton", CONV, "conv_res_triton", "Triton", "Triton",
        "Hand-written fused Triton: the 32 hidden channels live in registers, recomputed per conv_out tap.",
        "torch triton",
    ),
]  # fmt: skip

REGISTRY: dict[str, Implementation] = {impl.name: impl for impl in _ALL}


def for_workload(slug: str) -> list[Implementation]:
    return [impl for impl in _ALL if impl.workload == slug]
