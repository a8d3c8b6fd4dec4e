"""The write contract an adapter fills and the store writes: upstream data already mapped to manifests.

A ``Batch`` is one workload of an upstream source with its runs; a ``RerunRecord`` is one
signed rerun bundle.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from kernelindex.figure_gate import Refusals
from kernelindex.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.manifests.types import RunStatus
from kernelindex.store.spreads import spec_uncertainty
from kernelindex.uncertainty import Uncertainty


class UnitFailure(Exception):
    """An adapter could not read or map one unit; the runner reports it and goes on."""


@dataclass(frozen=True)
class SourceInfo:
    """What the registry says about a source: its pages show the licence and attribution
    beside every figure that came from it."""

    slug: str
    name: str
    url: str
    description: str
    licence: str
    attribution: str
    # What the source calls one of its results, in sentences about how many it holds.
    run_noun: str = "runs"
    # Where the GPU names of its runs come from, shown beside each GPU it measured on.
    gpu_naming: str = ""
    # Its runs name framework versions (sourceNative metrics framework, version): after an ingest,
    # the version regressions of the workloads it wrote are computed again.
    compares_versions: bool = False


@dataclass(frozen=True)
class ReadFrom:
    """Where an ingest read its data: ``kind`` is "live" (the upstream itself), "snapshot" (a
    recorded copy), "bundled" (the recorded copy shipped with the registry) or "import" (files
    handed to the registry); a snapshot states its own date and what part of the upstream it holds."""

    kind: str
    snapshot_observed_at: datetime | None = None
    snapshot_scope: str | None = None


LIVE = ReadFrom("live")


@dataclass(frozen=True, slots=True)
class StoredRun:
    """What the store writes of a run manifest: its name, digest and stored text, and the columns
    read from it."""

    name: str
    digest: str
    text: str
    status: RunStatus
    primary_statistic: str
    latency_ns: int
    observed_at: datetime
    uncertainty: Uncertainty | None = None  # ``store.spreads.spec_uncertainty`` of the manifest

    @classmethod
    def of(cls, manifest: BenchmarkRun) -> StoredRun:
        spec = manifest.spec
        timing = spec.timing
        # The spec as its JSON names it, without reading the text again.
        written = {
            "timing": {"latencyNs": timing.latency_ns, "primaryStatistic": timing.primary_statistic},
            "sourceNative": {"metrics": spec.source_native.metrics if spec.source_native else {}},
            "caseResults": spec.case_results or [],
        }
        return cls(
            name=manifest.metadata.name,
            digest=manifest.digest,
            text=manifest.text,
            status=spec.status,
            primary_statistic=timing.primary_statistic,
            latency_ns=timing.latency_ns[timing.primary_statistic],
            observed_at=spec.observed_at,
            uncertainty=spec_uncertainty(written),
        )


@dataclass(frozen=True)
class RunRecord:
    """A run manifest with the names of the manifests it refers to and its review flags."""

    manifest: BenchmarkRun
    implementation: str
    protocol: str
    environment: str
    external_id: str
    sol_score: float | None = None
    upstream_withdrawn_reason: str | None = None
    upstream_withdrawn: bool = False
    held_for_review: bool = False

    @cached_property
    def stored(self) -> StoredRun:
        """What the store writes of the manifest (the writer reads nothing else of it)."""
        return StoredRun.of(self.manifest)


@dataclass
class Batch:
    """One workload and every usable run of it, written in one transaction.

    ``runs`` is the complete set the upstream lists for the workload, so a stored run that
    is not in it is marked missing upstream (never deleted); an adapter that could read only
    part of what the upstream holds for it (one of several files failed) sets ``complete``
    to false, and nothing is marked missing. ``upstream_total`` is what the upstream counts,
    which a snapshot may hold only part of.
    """

    unit: str
    workload: WorkloadSuite
    external_id: str
    protocols: list[BenchmarkProtocol] = field(default_factory=list)
    environments: list[ExecutionEnvironment] = field(default_factory=list)
    implementations: list[Implementation] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    anomalies: Counter[str] = field(default_factory=Counter)
    drift: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    # Rows whose figures the gate refused (``kernelindex.figure_gate``): never stored.
    refused: Refusals = field(default_factory=Refusals)
    # Runs the upstream lists for this workload but that were refused for their identity (listed
    # twice with other figures): not written, and not marked missing upstream either.
    withheld: set[str] = field(default_factory=set)
    complete: bool = True
    # The upstream's own count of results for this workload, where it publishes one, and when
    # it was read (``None``: at the ingest's observation time).
    upstream_total: int | None = None
    upstream_total_observed_at: datetime | None = None


@dataclass(frozen=True)
class RerunCaseRecord:
    """One measured case of a rerun: its case-scoped run manifest, its speed-of-light bound from
    the GPU's datasheet and the achievable bound from the ceilings the runner measured."""

    position: int
    bound_ns: int
    achievable_bound_ns: int
    manifest: BenchmarkRun


@dataclass(frozen=True)
class RerunRecord:
    """A verified rerun bundle mapped to manifests; the store writes it whole or not at all.

    ``bundle_json`` is the signed bundle as received, kept so anyone can check the signature.
    ``bound_ns`` is the suite's speed-of-light bound (datasheet peaks), ``achievable_bound_ns``
    the bound at the ceilings the runner measured. ``operator`` is the approved operator of the
    signing key, None where the key registry states none.
    """

    bundle_id: str
    key_id: str
    operator: str | None
    session_id: str
    file_sha256: str
    machine_id: str
    started_at: datetime
    finished_at: datetime
    bundle_json: str
    protocol: BenchmarkProtocol
    environment: ExecutionEnvironment
    implementation: Implementation
    suite_run: BenchmarkRun
    cases: list[RerunCaseRecord]
    bound_ns: int
    achievable_bound_ns: int
    cases_passed: int
    case_count: int
