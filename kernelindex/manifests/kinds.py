"""The manifest kinds of ``kernelindex.dev/v1alpha1``: the registry's public contract.

Every record is ``{apiVersion, kind, metadata, spec}``. Optional fields that are not set
are left out of the JSON (never ``null``), so adding an optional field later does not
change the digest of any existing manifest.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal, NotRequired, Self

from pydantic import ConfigDict, Field, HttpUrl, StringConstraints, field_validator, model_validator

# Pydantic reads a TypedDict's fields only from typing_extensions' TypedDict before Python 3.12.
from typing_extensions import TypedDict

from kernelindex.manifests.digest import sha256_digest
from kernelindex.manifests.types import (
    AttestationType,
    AttestationTypeField,
    AxisValue,
    Count,
    Digest,
    JsonNumber,
    LatencyNs,
    LongText,
    Name,
    NativeValue,
    PositiveMs,
    RunStatusField,
    ShortText,
    Strict,
    UtcDatetime,
)

API_VERSION = "kernelindex.dev/v1alpha1"
ApiVersion = Literal["kernelindex.dev/v1alpha1"]
LabelKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._/-]{1,63}$")]


class Metadata(Strict):
    name: Name
    title: ShortText | None = None
    labels: dict[LabelKey, Annotated[str, StringConstraints(max_length=300)]] | None = None


class Manifest(Strict):
    """Fields and behaviour common to every kind."""

    KIND: ClassVar[str]
    api_version: ApiVersion = Field(alias="apiVersion")
    # Narrowed to one literal by each kind; declared here so JSON reads apiVersion, kind, metadata, spec.
    kind: str
    metadata: Metadata

    def to_json(self) -> dict[str, Any]:
        """The manifest as plain JSON, exactly as the registry serves it (a new copy each call)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @cached_property
    def _served(self) -> dict[str, Any]:
        # The model is frozen: its JSON, text and digest are computed from one dump, once.
        return self.to_json()

    def identity(self) -> dict[str, Any]:
        data = self._served
        return {"apiVersion": data["apiVersion"], "kind": data["kind"], "spec": data["spec"]}

    @cached_property
    def text(self) -> str:
        """The stored (and served) JSON: compact, UTF-8, in model field order (computed once)."""
        return json.dumps(self._served, ensure_ascii=False, separators=(",", ":"))

    @cached_property
    def digest(self) -> str:
        """``sha256:<hex>`` of the RFC 8785 form of ``{apiVersion, kind, spec}`` (computed once)."""
        return sha256_digest(self.identity())


# --- WorkloadSuite -----------------------------------------------------------------


class Axis(Strict):
    type: Literal["var", "const", "expr"]
    value: JsonNumber | None = None
    expression: ShortText | None = None
    description: LongText | None = None

    @model_validator(mode="after")
    def _value_matches_type(self) -> Self:
        if self.type == "const" and self.value is None:
            raise ValueError("a const axis needs a value")
        if self.type == "expr" and self.expression is None:
            raise ValueError("an expr axis needs an expression")
        return self


class Tensor(Strict):
    dtype: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    shape: list[str | int] | None = None
    description: LongText | None = None


class ReferenceSource(Strict):
    """The program that defines the workload, as the source published it (part of its identity)."""

    path: ShortText
    url: HttpUrl | None = None
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    language: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_+-]{1,32}$")]
    code: Annotated[str, StringConstraints(min_length=1, max_length=200_000)]


class Definition(Strict):
    name: ShortText
    description: LongText
    axes: dict[str, Axis]
    inputs: dict[str, Tensor]
    outputs: dict[str, Tensor] = Field(min_length=1)
    constraints: list[ShortText] | None = None
    determinism: ShortText | None = None
    reference: ReferenceSource | None = None


class WorkloadCase(Strict):
    axes: dict[str, AxisValue]
    baseline_latency_ms: PositiveMs | None = None
    sol_latency_ms: PositiveMs | None = None


class SourceRef(Strict):
    source: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]{1,64}$")]
    external_id: ShortText
    metrics: dict[str, NativeValue] | None = None


class WorkloadSuiteSpec(Strict):
    definition: Definition
    collection: ShortText
    tags: list[ShortText] = Field(default_factory=list)
    origin_model: ShortText | None = None
    cases: list[WorkloadCase] = Field(min_length=1)
    source_native: SourceRef | None = None


class WorkloadSuite(Manifest):
    KIND: ClassVar[str] = "WorkloadSuite"
    kind: Literal["WorkloadSuite"]
    spec: WorkloadSuiteSpec


# --- Implementation ----------------------------------------------------------------


class Project(Strict):
    name: ShortText
    url: HttpUrl | None = None


class SourceAvailability(Strict):
    available: bool
    url: HttpUrl | None = None


class InstallRecipe(Strict):
    recipe: LongText


class ImplementationSpec(Strict):
    project: Project
    revision: ShortText
    runtime: ShortText | None = None
    language: ShortText | None = None
    license: ShortText | None = None
    source: SourceAvailability
    install: InstallRecipe | None = None


class Implementation(Manifest):
    KIND: ClassVar[str] = "Implementation"
    kind: Literal["Implementation"]
    spec: ImplementationSpec


# --- BenchmarkProtocol -------------------------------------------------------------


class Harness(Strict):
    name: ShortText
    version: ShortText


class Tolerance(Strict):
    atol: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    rtol: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    matched_ratio: Annotated[float, Field(gt=0, le=1)] | None = None


class Correctness(Strict):
    reference: ShortText
    comparator: ShortText
    tolerance: Tolerance | None = None


class Measurement(Strict):
    timer: ShortText
    primary_statistic: ShortText
    warmup_iterations: Count | None = None
    timed_iterations: Count | None = None
    trials: Count | None = None
    l2_flush: bool | None = None


class Comparability(Strict):
    family: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,64}$")]
    notes: LongText | None = None


class BenchmarkProtocolSpec(Strict):
    harness: Harness
    correctness: Correctness
    measurement: Measurement
    comparability: Comparability


class BenchmarkProtocol(Manifest):
    KIND: ClassVar[str] = "BenchmarkProtocol"
    kind: Literal["BenchmarkProtocol"]
    spec: BenchmarkProtocolSpec


# --- ExecutionEnvironment ----------------------------------------------------------


class Hardware(Strict):
    vendor: ShortText
    product: ShortText
    architecture: ShortText | None = None


class Software(Strict):
    libraries: dict[str, ShortText] = Field(default_factory=dict)
    driver: ShortText | None = None


class ExecutionEnvironmentSpec(Strict):
    hardware: Hardware
    software: Software
    # The machine setup as the source names it (a cloud provider, a lab cluster): two setups
    # with the same GPU are two environments.
    provider: ShortText | None = None


class ExecutionEnvironment(Manifest):
    KIND: ClassVar[str] = "ExecutionEnvironment"
    kind: Literal["ExecutionEnvironment"]
    spec: ExecutionEnvironmentSpec


# --- BenchmarkRun ------------------------------------------------------------------


class Timing(Strict):
    latency_ns: dict[Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,32}$")], LatencyNs] = Field(min_length=1)
    primary_statistic: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,32}$")]

    @model_validator(mode="after")
    def _primary_is_measured(self) -> Self:
        if self.primary_statistic not in self.latency_ns:
            raise ValueError(f"latencyNs has no value for the primary statistic {self.primary_statistic!r}")
        return self


class Disqualification(Strict):
    reason: LongText | None = None
    source: ShortText | None = None
    at: UtcDatetime | None = None


class RunSourceNative(Strict):
    source: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]{1,64}$")]
    benchmark: ShortText
    external_id: ShortText
    metrics: dict[str, NativeValue] = Field(default_factory=dict)
    disqualification: Disqualification | None = None


# A validated plain dict under its JSON names, not a model: a sweep's run holds thousands of cases,
# and making an instance of each made validating them 3.7 times slower (the full AIConfigurator
# package holds 12.6 million). Its JSON, schema and checks are those a model would have; like the
# models it is shared once read, so read it, never change it.
class CaseResult(TypedDict):
    """One case of a suite run: its latencies and any second metric (never ranked as a time)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    caseIndex: Count
    latencyNs: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,32}$")], LatencyNs], Field(min_length=1)
    ]
    metrics: NotRequired[dict[str, NativeValue] | None]


class BenchmarkRunSpec(Strict):
    status: RunStatusField = Field(title="Status")
    case_index: Count | None = None
    timing: Timing
    case_results: list[CaseResult] | None = None
    observed_at: UtcDatetime
    source_native: RunSourceNative | None = None
    protocol_digest: Digest
    workload_digest: Digest
    environment_digest: Digest
    implementation_digest: Digest


class BenchmarkRun(Manifest):
    KIND: ClassVar[str] = "BenchmarkRun"
    kind: Literal["BenchmarkRun"]
    spec: BenchmarkRunSpec


# --- Attestation -------------------------------------------------------------------

ATTESTATION_TYPES = tuple(AttestationType)


class Author(Strict):
    handle: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{2,32}$")]


class AttestationSpec(Strict):
    run_digest: Digest
    type: AttestationTypeField = Field(title="Type")
    body: Annotated[str, StringConstraints(min_length=1, max_length=2000)]
    body_format: Literal["plain", "markdown"] = "plain"
    evidence_url: HttpUrl | None = None
    measured_latency_ns: LatencyNs | None = None
    environment_summary: Annotated[str, StringConstraints(max_length=500)] | None = None
    author: Author
    created_at: UtcDatetime

    @field_validator("evidence_url")
    @classmethod
    def _https_only(cls, value: HttpUrl | None) -> HttpUrl | None:
        if value is not None and value.scheme != "https":
            raise ValueError("the evidence URL must start with https://")
        return value


class Attestation(Manifest):
    KIND: ClassVar[str] = "Attestation"
    kind: Literal["Attestation"]
    spec: AttestationSpec


KINDS: dict[str, type[Manifest]] = {
    model.KIND: model
    for model in (
        WorkloadSuite,
        Implementation,
        BenchmarkProtocol,
        ExecutionEnvironment,
        BenchmarkRun,
        Attestation,
    )
}
