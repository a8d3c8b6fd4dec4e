"""The parts of a rerun bundle's payload that the importer relies on, validated.

The runner (``kernelindex.rerun``) writes the payload; nothing in it is trusted before the
signature checks out, and even then every field the registry stores is validated here,
so a malformed bundle gets a message naming the field instead of a half-written import.
Fields the importer neither stores nor checks (the ceilings' raw samples, …) are kept
verbatim in the stored bundle and not modelled.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

PositiveNs = Annotated[int, Field(strict=True, gt=0, le=10**15)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Label = Annotated[str, StringConstraints(min_length=1, max_length=300)]


class Part(BaseModel):
    """camelCase in JSON; fields the importer does not use are ignored (they stay in the bundle)."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=False, extra="ignore", frozen=True)


class SuiteRef(Part):
    slug: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]{1,200}$")]
    cases_sha256: Sha256Hex
    case_count: Annotated[int, Field(strict=True, gt=0)]
    # The content digest of the program measured, where the workload is a program file (KernelBench).
    fixture_sha256: Sha256Hex | None = None
    # Whose program it is: ``kernelbench``, ``sol-execbench``.
    source: Label | None = None


class ImplementationRef(Part):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9.-]{0,120}[a-z0-9])?$")]
    project: Label
    revision: Label
    language: Label
    runtime: Label
    license: Label
    source_available: bool
    source_path: Label
    source_sha256: Sha256Hex
    description: Annotated[str, StringConstraints(max_length=2000)]
    install_recipe: Annotated[str, StringConstraints(min_length=1, max_length=2000)]


class Gpu(Part):
    """The device as CUDA described it: what the importer holds against the GPU's datasheet."""

    vendor: Label
    name: Label
    architecture: Label
    compute_capability: Annotated[str, StringConstraints(pattern=r"^[0-9]{1,2}\.[0-9]$")]
    sm_count: Annotated[int, Field(strict=True, gt=0)]
    memory_bytes: Annotated[int, Field(strict=True, gt=0)]
    l2_cache_bytes: Annotated[int, Field(strict=True, gt=0)]
    uuid: Label | None = None


class Software(Part):
    python: Label
    torch: Label
    triton: Label | None = None


class EnvironmentRecord(Part):
    gpu: Gpu
    driver_version: Label | None
    cuda_version: Label | None
    software: Software
    hostname: Label
    # nvidia-smi's readings (clocks, name, uuid) before the first and after the last measurement.
    clocks_at_start: dict[str, Any]
    clocks_at_end: dict[str, Any]


class Timing(Part):
    median_ns: PositiveNs
    min_ns: PositiveNs
    max_ns: PositiveNs
    p10_ns: PositiveNs
    p90_ns: PositiveNs
    iqr_ns: Annotated[int, Field(strict=True, ge=0)]
    samples_ns: list[list[PositiveNs]] = Field(min_length=1)
    # A confidence interval of the median, [low, high], where the runner computes one.
    median_interval_ns: tuple[PositiveNs, PositiveNs] | None = None


class Roofline(Part):
    bytes: Annotated[int, Field(strict=True, gt=0)]
    flops: Annotated[int, Field(strict=True, gt=0)]
    bound_ns: PositiveFloat
    limiter: Literal["memory", "compute"]
    assumption: Annotated[str, StringConstraints(max_length=2000)]


class CaseRecord(Part):
    index: Annotated[int, Field(strict=True, ge=0)]
    axes: dict[str, int]
    status: Literal["passed", "failed", "error"]
    message: str | None = None
    correctness: list[dict[str, Any]] | None
    timing: Timing | None
    roofline: Roofline | None
    # v2's record of how the case was measured; the source-faithful protocol's settings are read from it.
    measurement: dict[str, Any] | None = None


class SuiteFigure(Part):
    latency_ns: PositiveNs | None
    bound_ns: PositiveFloat | None
    cases_passed: int
    suite_case_count: int
    complete: bool


class Payload(Part):
    bundle_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
    session_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
    runner_version: Label
    started_at: AwareDatetime
    finished_at: AwareDatetime
    workload: SuiteRef
    implementation: ImplementationRef
    protocol: dict[str, Any]
    environment: EnvironmentRecord
    ceilings: dict[str, Any]
    status: Literal["passed", "failed", "error"]
    message: str | None = None
    suite: SuiteFigure
    cases: list[CaseRecord] = Field(min_length=1)

    @property
    def observed_at(self) -> datetime:
        return self.finished_at
