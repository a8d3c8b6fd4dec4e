"""The submission document: what ``POST /api/v1/submissions``, ``/submit`` and ``kernelindex submit``
send. One JSON object holding the four manifests of the run (run, implementation, environment,
protocol), the digests the submitter computed for them, the registry's workload it measured (its
slug and digest) with the cases it measured (each by index and digest), an evidence URL and artifacts.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, HttpUrl, StringConstraints, field_validator

from kernelindex.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    sha256_digest,
)
from kernelindex.manifests.types import Count, Digest, Name, ShortText, Strict

SUBMISSION_KIND = "Submission"
# The whole document as sent: room for a sweep of a few thousand cases, far below what a
# request may hold (``request_guard``), so that the size refusal names this check.
MAX_BYTES = 512 * 1024
MAX_CASES = 5000
MAX_ARTIFACTS = 20


def case_digest(axes: dict[str, Any]) -> str:
    """The digest of one case of a workload: ``sha256`` of the RFC 8785 form of ``{"axes": …}``, the
    case's axis values as the workload's manifest gives them (``spec.cases[i].axes``)."""
    return sha256_digest({"axes": axes})


def _https(value: HttpUrl) -> HttpUrl:
    if value.scheme != "https":
        raise ValueError("the URL must start with https://")
    return value


class WorkloadRef(Strict):
    """The registry's workload the run measured: its slug (``/workloads/{slug}``) and its digest."""

    slug: Name
    digest: Digest


class MeasuredCase(Strict):
    """A case the run measured: its index in the workload's ``spec.cases`` and its ``case_digest``."""

    case_index: Count
    case_digest: Digest


class Artifact(Strict):
    """A file that backs the figures (raw timings, a log, a profile): where to fetch it and its sha256."""

    name: ShortText
    url: HttpUrl
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None

    @field_validator("url")
    @classmethod
    def _https_url(cls, value: HttpUrl) -> HttpUrl:
        return _https(value)


class SubmittedDigests(Strict):
    """The digest the submitter computed for each manifest (``kernelindex verify`` recomputes them)."""

    run: Digest
    implementation: Digest
    environment: Digest
    protocol: Digest


class Submission(Strict):
    """A run submitted for review. The run's ``caseResults`` hold its per-case figures; every index
    they use is listed in ``cases`` with the case's digest, so a figure cannot land on another case."""

    KIND: ClassVar[str] = SUBMISSION_KIND
    api_version: Literal["kernelindex.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Submission"]
    workload: WorkloadRef
    cases: list[MeasuredCase] = Field(min_length=1, max_length=MAX_CASES)
    run: BenchmarkRun
    implementation: Implementation
    environment: ExecutionEnvironment
    protocol: BenchmarkProtocol
    digests: SubmittedDigests
    evidence_url: HttpUrl
    artifacts: list[Artifact] = Field(default_factory=list, max_length=MAX_ARTIFACTS)

    @field_validator("evidence_url")
    @classmethod
    def _https_evidence(cls, value: HttpUrl) -> HttpUrl:
        return _https(value)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
