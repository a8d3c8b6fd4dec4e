"""The GPU datasheet table (``gpu_specs.json``): what NVIDIA states each GPU can do, with sources.

The rerun importer checks a bundle's GPU and measured ceilings against it, and the speed-of-light
bound is built from its peaks. A figure the cited documents do not state is ``None`` here (the
file says "not stated"), never a guess; a precision without a tensor-core path is ``None`` too
(the file says "not supported").
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl
from pydantic.alias_generators import to_camel

NOT_STATED = "not stated"
NOT_SUPPORTED = "not supported"
GIB = 2**30

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Figure = Positive | Literal["not stated"]
Rate = Positive | Literal["not stated", "not supported"]
Precision = Literal["fp64", "fp64Tensor", "fp32", "tf32Tensor", "bf16Tensor", "fp16Tensor", "fp8Tensor"]


class _Part(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=False, extra="forbid", frozen=True)


class Source(_Part):
    url: HttpUrl
    states: str


class Peaks(_Part):
    """Dense peak rates in TFLOP/s per precision, as the datasheet states them (sparsity halved)."""

    fp64: Rate
    fp64_tensor: Rate
    fp32: Rate
    tf32_tensor: Rate
    bf16_tensor: Rate
    fp16_tensor: Rate
    fp8_tensor: Rate


class GpuSpec(_Part):
    slug: str
    product: str
    device_names: list[str] = Field(min_length=1)
    compute_capability: str
    memory_gb: Figure
    memory_bandwidth_gbps: Positive
    l2_cache_mb: Figure
    sm_count: int | Literal["not stated"]
    boost_clock_mhz: Figure
    base_clock_mhz: Figure
    peak_dense_tflops: Peaks
    sources: list[Source] = Field(min_length=1)
    notes: str | None = None

    @property
    def short_name(self) -> str:
        """ "H200" for "NVIDIA H200": how messages name the GPU."""
        return self.product.removeprefix("NVIDIA ")

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gbps * 1e9

    def peak_flops_per_s(self, precision: Precision) -> float | None:
        """The dense peak of ``precision`` in FLOP/s; None where not stated or not supported."""
        value = self.peak_dense_tflops.model_dump(by_alias=True)[precision]
        return value * 1e12 if isinstance(value, float | int) else None

    def stated(self, field: str) -> float | None:
        """A scalar figure (``memory_gb``, ``l2_cache_mb``, ``sm_count``, clocks) or None when not stated."""
        value = getattr(self, field)
        return None if value == NOT_STATED else float(value)


class GpuSpecTable(_Part):
    about: str
    units: dict[str, str]
    gpus: list[GpuSpec]

    def by_device_name(self, name: str) -> GpuSpec | None:
        """The entry whose CUDA device name (or product name) is ``name``, compared without case."""
        wanted = name.strip().casefold()
        for gpu in self.gpus:
            if wanted in {n.casefold() for n in [gpu.product, *gpu.device_names]}:
                return gpu
        return None


@cache
def gpu_spec_table() -> GpuSpecTable:
    """The bundled table, read and validated once per process."""
    text = resources.files("kernelindex").joinpath("gpu_specs.json").read_text(encoding="utf-8")
    return GpuSpecTable.model_validate(json.loads(text))


# Unit roundoff of each precision a datasheet rate is stated for (2^-p, p the significand bits with
# the implicit one): a result within a relative tolerance cannot need more than a precision whose
# rounding alone stays within it, so such a precision's peak may stand in for the arithmetic.
UNIT_ROUNDOFF: dict[Precision, float] = {
    "fp64": 2.0**-53,
    "fp64Tensor": 2.0**-53,
    "fp32": 2.0**-24,
    "tf32Tensor": 2.0**-11,
    "fp16Tensor": 2.0**-11,
    "bf16Tensor": 2.0**-8,
    "fp8Tensor": 2.0**-4,
}


def admitted_precisions(rtol: float) -> list[Precision]:
    """The precisions whose unit roundoff is within ``rtol``, finest first."""
    return [precision for precision, roundoff in UNIT_ROUNDOFF.items() if roundoff <= rtol]


def fastest_admitted_peak(spec: GpuSpec, rtol: float) -> tuple[Precision, float]:
    """The highest datasheet peak among the precisions ``rtol`` admits, and which precision it is."""
    rates = [(precision, spec.peak_flops_per_s(precision)) for precision in admitted_precisions(rtol)]
    stated = [(precision, rate) for precision, rate in rates if rate is not None]
    if not stated:
        raise ValueError(f"the {spec.short_name}'s datasheet states no rate for a precision within {rtol}")
    return max(stated, key=lambda pair: pair[1])


def speed_of_light_ns(bytes_moved: int, flops: int, spec: GpuSpec, rtol: float) -> float:
    """A lower bound no implementation can beat on this GPU: the bytes at the datasheet bandwidth, or
    the FLOPs at the fastest datasheet peak the tolerance admits, whichever takes longer."""
    _, peak = fastest_admitted_peak(spec, rtol)
    return max(bytes_moved / spec.memory_bandwidth_bytes_per_s, flops / peak) * 1e9
