"""The SOL-ExecBench leaderboard adapter (PRODUCT.md §9).

Reads ``/kernels``, ``/kernels/{id}`` and the paginated ``/submissions`` through a
``Fetcher`` and maps them to manifests:

- kernel → ``WorkloadSuite`` (cases from ``workloads`` with per-case T_b and T_SOL);
- ``evaluation_stack_version`` → one ``BenchmarkProtocol`` per version;
- ``gpu_type`` + stack → ``ExecutionEnvironment``;
- ``username`` + ``submission-<id>`` → ``Implementation``;
- submission → ``BenchmarkRun`` (evidence ``reported``).

Upstream data is parsed leniently about *extra* fields (recorded as drift) and strictly
about the fields the mapping uses.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from kernelindex.figure_gate import Reason, Refused, count, latency_ns, positive, score
from kernelindex.ingest.http import Fetcher, UpstreamError
from kernelindex.ingest.reading import Opened, Reading
from kernelindex.ingest.runner import Discovery
from kernelindex.ingest.snapshot import SNAPSHOT_BASE_URL, snapshot_facts, snapshot_transport
from kernelindex.ingest.values import first_error, holds_control_characters, utc
from kernelindex.manifests import (
    API_VERSION,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.ranking import geometric_mean, is_faster_than_bound
from kernelindex.slugs import slugify
from kernelindex.store.batch import Batch, RunRecord, SourceInfo, UnitFailure

SOURCE = SourceInfo(
    slug="sol-execbench",
    name="NVIDIA SOL-ExecBench",
    url="https://research.nvidia.com/benchmarks/sol-execbench",
    description=(
        "NVIDIA's public leaderboard of 235 GPU-kernel problems drawn from production AI models, "
        "scored on a B200 by SOL score: how close a submission comes to the speed-of-light bound "
        "of each case, relative to a scoring baseline."
    ),
    licence=(
        "Facts served by the public leaderboard API, under the NVIDIA website Terms of Service. "
        "Attribution: NVIDIA SOL-ExecBench. No reference code, submission code or dataset files "
        "are redistributed."
    ),
    attribution="Data: NVIDIA SOL-ExecBench leaderboard, under the NVIDIA website Terms of Service.",
    run_noun="submissions",
    gpu_naming="the leaderboard's GPU type (gpu_type, such as B200), read as NVIDIA's product of that name",
)
SOURCE_KEY = "sol-execbench"
PAGE_LIMIT = 100
COLLECTIONS = ("L1", "L2", "Quant", "FlashInfer-Bench")
# Collections by kernel id, for a kernel whose tags do not name one.
COLLECTION_ID_RANGES = ((1, 94, "L1"), (95, 176, "L2"), (177, 209, "Quant"), (210, 235, "FlashInfer-Bench"))
GPU_ARCHITECTURES = {
    "B200": "sm_100",
    "GB200": "sm_100",
    "B300": "sm_103",
    "H100": "sm_90",
    "H200": "sm_90",
    "H20": "sm_90",
    "A100": "sm_80",
    "L40S": "sm_89",
}
PROTOCOL_NOTES = (
    "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
    "Comparable only within one definition, GPU type, and evaluation stack version."
)


# --- Upstream shapes ---------------------------------------------------------------


class Upstream(BaseModel):
    """Extra fields are allowed (and reported as drift); the fields we use are checked."""

    model_config = ConfigDict(extra="allow")

    def extra_fields(self, where: str) -> set[str]:
        return {f"{where}.{name}" for name in (self.model_extra or {})}


class KernelSummary(Upstream):
    id: int = Field(gt=0)
    name: str = Field(min_length=1)
    # Known and not needed here: the detail response carries the same facts.
    title: str | None = None
    gpu_types: list[str] | None = None
    tags: list[str] | None = None
    submission_count: int | None = None


class KernelList(Upstream):
    kernels: list[KernelSummary]


class UpstreamAxis(Upstream):
    type: str
    value: int | float | None = None
    expression: str | None = None
    description: str | None = None


class UpstreamTensor(Upstream):
    dtype: str
    shape: list[str | int] | None = None
    description: str | None = None


# A case's bound in ms: positive, at most an hour. Not a measured latency, so not held to 1 ns:
# the speed-of-light bound of a small case is well below (kernel 190's is 8e-08 ms).
CASE_BOUND_MAX_MS = 3_600_000


def _case_latency(value: Any, info: ValidationInfo) -> Any:
    """A case's T_b or T_SOL through the figure gate: a boolean or 1e308 fails its kernel with a
    sentence (they define the workload; no part of it is stored without them)."""
    if value is not None:
        positive(str(info.field_name), value, high=CASE_BOUND_MAX_MS)
    return value


class UpstreamCase(Upstream):
    axes: dict[str, int | float | str | bool]
    baseline_latency_ms: float | None = None
    sol_ms: float | None = None

    _figures = field_validator("baseline_latency_ms", "sol_ms", mode="before")(_case_latency)


class KernelDetail(Upstream):
    id: int
    name: str = Field(min_length=1)
    title: str | None = None
    description: str = ""
    gpu_types: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    axes: dict[str, UpstreamAxis]
    inputs: dict[str, UpstreamTensor]
    outputs: dict[str, UpstreamTensor]
    baseline_latency_ms: float | None = None
    latency_unit: str | None = None

    _figures = field_validator("baseline_latency_ms", mode="before")(_case_latency)
    sol_is_dummy: bool | None = None
    workloads: list[UpstreamCase] = Field(min_length=1)


class Submission(Upstream):
    id: int = Field(gt=0)
    username: str | None = None
    kernel_id: int
    kernel_name: str | None = None
    status: str
    is_correct: bool | None = None
    # The figures, as published: checked by the figure gate (``sol_figures``), which refuses a
    # boolean, a string or a nested value where Pydantic's lax mode would read ``true`` as 1.
    sol_score: Any = None
    latency_ms: Any = None
    fast_1_count: Any = None
    fast_1_total: Any = None
    avg_speedup: Any = None
    gpu_type: str = Field(min_length=1)
    worker_id: str | None = None
    evaluation_stack_version: str = Field(min_length=1)
    is_disqualified: bool = False
    disqualification_reason: str | None = None
    disqualification_source: str | None = None
    disqualified_at: datetime | None = None
    submitted_at: datetime | None = None
    finished_at: datetime | None = None
    # Known fields the mapping does not use; listed so that only new fields count as drift.
    type: str | None = None
    user_id: int | None = None
    kernel_title: str | None = None
    collection_id: int | None = None
    collection_submission_id: int | None = None
    collection_title: str | None = None
    submission_mode: str | None = None
    benchmark_results: Any = None
    error_log: str | None = None
    original_filename: str | None = None


class SubmissionPage(Upstream):
    submissions: list[dict[str, Any]]
    total: int = Field(ge=0)
    offset: int = Field(ge=0)
    limit: int = Field(ge=0)


# --- Names -------------------------------------------------------------------------


def collection_of(kernel_id: int, tags: list[str]) -> str:
    for tag in tags:
        if tag in COLLECTIONS:
            return tag
    for low, high, collection in COLLECTION_ID_RANGES:
        if low <= kernel_id <= high:
            return collection
    return "Other"


def workload_slug(collection: str, name: str) -> str:
    """``{collection}-{NNN}-{name}``: problem numbers repeat across collections."""
    return f"{slugify(collection)}-{slugify(name)}"[:200].rstrip("-")


def workload_title(name: str) -> str:
    """``040_conv2d_residual_block`` → ``Conv2d residual block``."""
    words = re.sub(r"^\d+_", "", name).replace("_", " ").strip()
    return (words[:1].upper() + words[1:]) if words else name


def stack_slug(version: str) -> str:
    return slugify(version).removeprefix("v")


# --- Mapping -----------------------------------------------------------------------


def protocol_manifest(stack: str) -> BenchmarkProtocol:
    return BenchmarkProtocol.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkProtocol",
            "metadata": {
                "name": f"sol-execbench-leaderboard-v{stack_slug(stack)}",
                "title": f"SOL-ExecBench evaluation stack {stack}",
            },
            "spec": {
                "harness": {"name": "SOL-ExecBench evaluation stack", "version": stack},
                "correctness": {
                    "reference": "definition reference implementation",
                    "comparator": "sol_execbench_eval",
                },
                "measurement": {"timer": "harness_reported", "primaryStatistic": "mean"},
                "comparability": {"notes": PROTOCOL_NOTES, "family": "sol_execbench_leaderboard"},
            },
        }
    )


def environment_manifest(gpu_type: str, stack: str) -> ExecutionEnvironment:
    hardware: dict[str, str] = {"vendor": "nvidia", "product": f"NVIDIA {gpu_type}"}
    if gpu_type in GPU_ARCHITECTURES:
        hardware["architecture"] = GPU_ARCHITECTURES[gpu_type]
    return ExecutionEnvironment.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "ExecutionEnvironment",
            "metadata": {
                "name": f"sol-execbench-{slugify(gpu_type)}-v{stack_slug(stack)}",
                "title": f"SOL-ExecBench NVIDIA {gpu_type}, stack {stack}",
            },
            "spec": {"hardware": hardware, "software": {"libraries": {"evaluation_stack": stack}}},
        }
    )


def workload_manifest(kernel: KernelDetail) -> WorkloadSuite:
    collection = collection_of(kernel.id, kernel.tags)
    models = [tag.removeprefix("model:") for tag in kernel.tags if tag.startswith("model:")]
    topics = [tag for tag in kernel.tags if tag not in COLLECTIONS and not tag.startswith("model:")]
    native = {
        key: value
        for key, value in {
            "baseline_latency_ms": kernel.baseline_latency_ms,
            "latency_unit": kernel.latency_unit,
            "sol_is_dummy": kernel.sol_is_dummy,
        }.items()
        if value is not None
    }
    spec: dict[str, Any] = {
        "definition": {
            "name": kernel.name,
            "description": kernel.description,
            "axes": {
                name: axis.model_dump(include={"type", "value", "expression", "description"}, exclude_none=True)
                for name, axis in kernel.axes.items()
            },
            "inputs": {
                name: t.model_dump(include={"dtype", "shape", "description"}, exclude_none=True)
                for name, t in kernel.inputs.items()
            },
            "outputs": {
                name: t.model_dump(include={"dtype", "shape", "description"}, exclude_none=True)
                for name, t in kernel.outputs.items()
            },
        },
        "collection": collection,
        "tags": topics,
        "cases": [
            {
                "axes": case.axes,
                **({"baselineLatencyMs": case.baseline_latency_ms} if case.baseline_latency_ms else {}),
                **({"solLatencyMs": case.sol_ms} if case.sol_ms else {}),
            }
            for case in kernel.workloads
        ],
        "sourceNative": {"source": SOURCE_KEY, "externalId": str(kernel.id), "metrics": native},
    }
    if models:
        spec["originModel"] = models[0]
    return WorkloadSuite.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadSuite",
            "metadata": {
                "name": workload_slug(collection, kernel.name),
                "title": workload_title(kernel.name),
            },
            "spec": spec,
        }
    )


def sol_aggregate_ms(kernel: KernelDetail) -> float | None:
    """The suite's SOL bound: the geometric mean of the per-case ``sol_ms``."""
    bounds = [case.sol_ms for case in kernel.workloads if case.sol_ms]
    return geometric_mean(bounds) if len(bounds) == len(kernel.workloads) else None


def implementation_manifest(submission: Submission) -> Implementation:
    project = submission.username or "unknown submitter"
    revision = f"submission-{submission.id}"
    name = f"sol-{slugify(project, fallback='user')[:120]}-{revision}"
    return Implementation.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "Implementation",
            "metadata": {"name": name, "title": project[:300]},
            "spec": {
                "project": {"name": project[:300]},
                "revision": revision,
                "source": {"available": False},
            },
        }
    )


# The SOL score is 1 at the speed-of-light bound and 0.5 at the baseline (§9): the range the
# source defines is 0 to 1. A score above 1 says the kernel beat its bound, which no correct
# kernel does: up to SOL_SCORE_HELD_UP_TO it is stored and held for review, as a latency below
# the bound is; beyond, or below 0, it is no score the formula gives and is refused.
SOL_SCORE_RANGE = (0.0, 1.0)
SOL_SCORE_HELD_UP_TO = 2.0


@dataclass(frozen=True)
class SolFigures:
    """A submission's figures, through the gate: ``metrics`` as published (numbers, verbatim)."""

    latency_ns: int
    metrics: dict[str, int | float]
    beyond_bound: bool


def sol_figures(submission: Submission) -> SolFigures:
    """The submission's figures checked (``Refused`` names the first that is not a figure):
    latency in ms, ``sol_score`` within the source's range, counts, a positive speed-up."""
    ns = latency_ns("latency_ms", submission.latency_ms, "ms")
    # Floats, as the source declares them (and as they were stored before the gate: 1 is 1.0).
    metrics: dict[str, int | float] = {"latency_ms": float(submission.latency_ms)}
    beyond = False
    if submission.sol_score is not None:
        metrics["sol_score"] = score(
            "sol_score", submission.sol_score, SOL_SCORE_RANGE[0], SOL_SCORE_HELD_UP_TO, held_above=SOL_SCORE_RANGE[1]
        )
        beyond = metrics["sol_score"] > SOL_SCORE_RANGE[1]
    if submission.avg_speedup is not None:
        metrics["avg_speedup"] = positive("avg_speedup", submission.avg_speedup)
    for name in ("fast_1_count", "fast_1_total"):
        if (value := getattr(submission, name)) is not None:
            metrics[name] = count(name, value)
    fast, total = metrics.get("fast_1_count"), metrics.get("fast_1_total")
    if fast is not None and total is not None and fast > total:
        raise Refused(Reason.OUT_OF_RANGE, f"fast_1_count is {fast}, more than fast_1_total ({total})")
    # In the order the source lists them, as before the gate: the manifest keeps it.
    order = ("sol_score", "latency_ms", "avg_speedup", "fast_1_count", "fast_1_total")
    return SolFigures(ns, {key: metrics[key] for key in order if key in metrics}, beyond)


def run_name(submission: Submission) -> str:
    return f"sol-submission-{submission.id}"


def run_record(
    submission: Submission,
    kernel: KernelDetail,
    digests: dict[str, str],
    names: dict[str, str],
    bound_ms: float | None,
    figures: SolFigures,
) -> RunRecord:
    observed = submission.finished_at or submission.submitted_at
    assert observed is not None
    metrics = figures.metrics
    native: dict[str, Any] = {
        "source": SOURCE_KEY,
        "benchmark": submission.kernel_name or kernel.name,
        "externalId": str(submission.id),
        "metrics": metrics,
    }
    if submission.is_disqualified:
        native["disqualification"] = {
            key: value
            for key, value in {
                "reason": submission.disqualification_reason,
                "source": submission.disqualification_source,
                "at": utc(submission.disqualified_at) if submission.disqualified_at else None,
            }.items()
            if value is not None
        }
    labels = {"worker": submission.worker_id[:300]} if submission.worker_id else None
    submitter = submission.username or "unknown submitter"
    latency = figures.latency_ns
    manifest = BenchmarkRun.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {
                "name": run_name(submission),
                "title": f"{submitter} · {kernel.name} · {submission.gpu_type}"[:300],
                **({"labels": labels} if labels else {}),
            },
            "spec": {
                "status": "passed",
                "timing": {"latencyNs": {"mean": latency}, "primaryStatistic": "mean"},
                "observedAt": utc(observed),
                "sourceNative": native,
                **digests,
            },
        }
    )
    return RunRecord(
        manifest=manifest,
        implementation=names["implementation"],
        protocol=names["protocol"],
        environment=names["environment"],
        external_id=str(submission.id),
        sol_score=float(metrics["sol_score"]) if "sol_score" in metrics else None,
        upstream_withdrawn=submission.is_disqualified,
        upstream_withdrawn_reason=(submission.disqualification_reason or "disqualified by the source")
        if submission.is_disqualified
        else None,
        held_for_review=figures.beyond_bound or is_faster_than_bound(latency, bound_ms),
    )


def skip_reason(submission: Submission, kernel_id: int) -> str | None:
    """Why a submission is not a usable result, or ``None`` if it is."""
    if submission.kernel_id != kernel_id:
        return "wrong_kernel"
    if submission.status != "COMPLETED":
        return "not_completed"
    if submission.is_correct is not True:
        return "incorrect"
    latency = submission.latency_ms
    # A latency of zero or less is no result (counted, as ever); any other value goes to the gate.
    if latency is None or (isinstance(latency, int | float) and not isinstance(latency, bool) and latency <= 0):
        return "non_positive_latency"
    if submission.finished_at is None and submission.submitted_at is None:
        return "no_timestamp"
    return None


# --- The adapter -------------------------------------------------------------------


class KernelError(UnitFailure):
    """One kernel could not be read; the ingest reports it and goes on with the others."""


@dataclass
class KernelReading:
    """One kernel as read from the API: its detail and its submissions, with what paging found."""

    kernel: KernelDetail
    submissions: list[Submission] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    anomalies: Counter[str] = field(default_factory=Counter)
    drift: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)


class SolExecBench:
    """Reads the SOL-ExecBench API through a ``Fetcher`` and yields one batch per kernel."""

    source = SOURCE

    def __init__(
        self,
        fetcher: Fetcher,
        page_limit: int = PAGE_LIMIT,
        counted: frozenset[str] | None = None,
        counted_at: datetime | None = None,
    ):
        """``counted``: the kernels whose ``submission_count`` is the upstream's own (``None``:
        every kernel's, as on the live API; a snapshot may hold counts of its own files), read at
        ``counted_at`` (``None``: at the ingest's observation time)."""
        self.fetcher = fetcher
        self.page_limit = page_limit
        self.counted = counted
        self.counted_at = counted_at
        self.totals: dict[str, int] = {}
        self.names: dict[str, str] = {}
        self.drift: set[str] = set()

    def _data(self, path: str, params: dict[str, str | int] | None = None) -> Any:
        body = self.fetcher.get(path, params)
        if not isinstance(body, dict) or "data" not in body:
            raise UpstreamError(f'{self.fetcher.url(path, params)}: expected an object wrapped as {{"data": …}}')
        return body["data"]

    def _label(self, unit: str) -> str:
        """How errors name a kernel: its id, and its name where the listing gave one."""
        name = self.names.get(unit)
        return f"kernel {unit} ({name})" if name else f"kernel {unit}"

    def discover(self) -> Discovery:
        """Every kernel id the upstream lists (raises ``UpstreamError`` if it cannot be read)."""
        data = self._data("kernels")
        listed = data.get("kernels") if isinstance(data, dict) else None
        cap = self.fetcher.budget.bounds.max_listed
        if isinstance(listed, list) and len(listed) > cap:
            # Refused before a model is built for each: a listing of millions must not fill memory.
            raise UpstreamError(
                f"{self.fetcher.url('kernels')}: lists {len(listed)} kernels, more than the {cap} an ingest reads "
                "(KERNELINDEX_INGEST_MAX_LISTED); nothing was read: check the upstream, or raise the cap"
            )
        try:
            listing = KernelList.model_validate(data)
        except ValidationError as exc:
            raise UpstreamError(f"{self.fetcher.url('kernels')}: unexpected shape ({first_error(exc)})") from None
        self.drift |= listing.extra_fields("kernels")
        for kernel in listing.kernels:
            self.drift |= kernel.extra_fields("kernels[]")
            unit = str(kernel.id)
            if not holds_control_characters(kernel.name):
                self.names[unit] = kernel.name
            counted = self.counted is None or unit in self.counted
            if kernel.submission_count is not None and kernel.submission_count >= 0 and counted:
                self.totals[unit] = kernel.submission_count
        return Discovery(units=[str(kernel.id) for kernel in sorted(listing.kernels, key=lambda kernel: kernel.id)])

    def fetch(self, unit: str) -> KernelReading:
        """Read one kernel and all its submissions; raises ``KernelError`` naming the kernel and the URL."""
        label, url = self._label(unit), self.fetcher.url(f"kernels/{unit}")
        try:
            data = self._data(f"kernels/{unit}")
            if holds_control_characters(data):
                raise KernelError(f"{label}: {url}: a text field holds control characters")
            kernel = KernelDetail.model_validate(data)
        except UpstreamError as exc:
            raise KernelError(f"{label}: {exc}") from None
        except ValidationError as exc:
            raise KernelError(f"{label}: {url}: unexpected shape ({first_error(exc)})") from None
        if str(kernel.id) != unit:
            raise KernelError(f"{label}: {url}: the detail answers for kernel {kernel.id}")
        reading = KernelReading(kernel)
        reading.drift |= kernel.extra_fields("kernel")
        for case in kernel.workloads:
            reading.drift |= case.extra_fields("kernel.workloads[]")
        reading.submissions = list(self._submissions(kernel, reading))
        return reading

    def map(self, unit: str, fetched: KernelReading) -> Batch:
        """Map a kernel and its usable submissions to manifests; raises ``KernelError``."""
        kernel = fetched.kernel
        try:
            workload = workload_manifest(kernel)
        except ValidationError as exc:
            url = self.fetcher.url(f"kernels/{unit}")
            raise KernelError(f"{self._label(unit)}: {url}: cannot be mapped ({first_error(exc)})") from None
        batch = Batch(
            unit=self._label(unit),
            workload=workload,
            external_id=unit,
            skipped=fetched.skipped,
            anomalies=fetched.anomalies,
            drift=fetched.drift,
            warnings=fetched.warnings,
            upstream_total=self.totals.get(unit),
            upstream_total_observed_at=self.counted_at if unit in self.totals else None,
        )
        bound = sol_aggregate_ms(kernel)
        protocols: dict[str, BenchmarkProtocol] = {}
        environments: dict[str, ExecutionEnvironment] = {}
        for submission in fetched.submissions:
            reason = skip_reason(submission, kernel.id)
            if reason:
                batch.skipped[reason] += 1
                continue
            protocol = protocols.setdefault(
                submission.evaluation_stack_version, protocol_manifest(submission.evaluation_stack_version)
            )
            env_key = f"{submission.gpu_type}/{submission.evaluation_stack_version}"
            environment = environments.setdefault(
                env_key, environment_manifest(submission.gpu_type, submission.evaluation_stack_version)
            )
            figures = batch.refused.admit(f"submission {submission.id}", partial(sol_figures, submission))
            if figures is None:
                # Still listed upstream: a stored copy keeps its figures and is not marked missing.
                batch.withheld.add(run_name(submission))
                continue
            try:
                implementation = implementation_manifest(submission)
                record = run_record(
                    submission,
                    kernel,
                    digests={
                        "protocolDigest": protocol.digest,
                        "workloadDigest": workload.digest,
                        "environmentDigest": environment.digest,
                        "implementationDigest": implementation.digest,
                    },
                    names={
                        "implementation": implementation.metadata.name,
                        "protocol": protocol.metadata.name,
                        "environment": environment.metadata.name,
                    },
                    bound_ms=bound,
                    figures=figures,
                )
            except ValidationError as exc:
                batch.skipped["invalid"] += 1
                batch.warnings.append(f"submission {submission.id}: {first_error(exc)}")
                continue
            batch.implementations.append(implementation)
            batch.runs.append(record)
        batch.protocols = list(protocols.values())
        batch.environments = list(environments.values())
        return batch

    def _submissions(self, kernel: KernelDetail, batch: KernelReading) -> Iterator[Submission]:
        """Every submission of a kernel across pages, each once, in upstream order."""
        seen: dict[int, dict[str, Any]] = {}
        offset, total = 0, None
        # Bounds on pages and on submissions listed, so an upstream that ignores offset, or whose
        # total keeps moving ahead, cannot loop us forever nor fill memory.
        bounds = self.fetcher.budget.bounds
        label = f"kernel {kernel.id} ({kernel.name})"
        for number in range(bounds.max_pages + 1):
            if number == bounds.max_pages or len(seen) > bounds.max_listed:
                reached = (
                    f"more than {bounds.max_pages} pages (KERNELINDEX_INGEST_MAX_PAGES)"
                    if number == bounds.max_pages
                    else f"more than {bounds.max_listed} submissions (KERNELINDEX_INGEST_MAX_LISTED)"
                )
                raise KernelError(
                    f"{label}: its submissions: {self.fetcher.url('submissions', {'kernel_id': kernel.id})}: "
                    f"{reached}, the upstream's total now {total}; stopped there, nothing of it stored: "
                    "check the upstream, or raise the cap"
                )
            params: dict[str, str | int] = {"kernel_id": kernel.id, "offset": offset, "limit": self.page_limit}
            try:
                page = SubmissionPage.model_validate(self._data("submissions", params))
            except UpstreamError as exc:
                raise KernelError(f"{label}: its submissions: {exc}") from None
            except ValidationError as exc:
                url = self.fetcher.url("submissions", params)
                raise KernelError(f"{label}: its submissions: {url}: unexpected shape ({first_error(exc)})") from None
            batch.drift |= page.extra_fields("submissions")
            total = page.total
            new = 0
            for raw in page.submissions:
                try:
                    submission = Submission.model_validate(raw)
                except ValidationError as exc:
                    batch.skipped["invalid"] += 1
                    batch.warnings.append(f"kernel {kernel.id}: a submission is malformed ({first_error(exc)})")
                    continue
                if submission.id in seen and seen[submission.id] == raw:
                    batch.skipped["duplicate"] += 1
                    continue
                # Listed again with other figures, both copies go on, and the ingest refuses both
                # (``kernelindex.ingest.identities``).
                if submission.id not in seen:
                    seen[submission.id] = raw
                    new += 1
                if holds_control_characters(raw):
                    batch.skipped["control_characters"] += 1
                    continue
                batch.drift |= submission.extra_fields("submission")
                yield submission
            offset += len(page.submissions)
            if not page.submissions or new == 0 or offset >= total:
                break
        listed = len(seen) + batch.skipped["invalid"]
        if total is not None and listed != total:
            batch.anomalies["total_mismatch"] += 1
            batch.warnings.append(f"kernel {kernel.id}: upstream total says {total}, the pages held {listed}")


def open_source(reading: Reading) -> Opened:
    """The adapter on a recorded snapshot (served by a mock transport) or on the live API
    (``--base-url`` option, else ``KERNELINDEX_SOL_EXECBENCH_URL``)."""
    if reading.snapshot is not None:
        client = httpx.Client(transport=snapshot_transport(reading.snapshot), base_url=SNAPSHOT_BASE_URL)
        origin, observed = reading.snapshot_origin()
        facts = snapshot_facts(reading.snapshot)
        adapter = SolExecBench(
            reading.fetcher(client), counted=facts.upstream_total_units, counted_at=facts.upstream_totals_observed_at
        )
    else:
        url = (reading.options.get("base_url") or reading.settings.sol_execbench_url).rstrip("/") + "/"
        client, origin, observed = reading.client(url), url, None
        adapter = SolExecBench(reading.fetcher(client))
    return Opened(adapter, origin, observed, [client])
