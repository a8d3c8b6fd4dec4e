"""The public schemas of the JSON API: exactly what ``/api/v1`` serves, field by field.

They are Pydantic models of their own, separate from the ORM tables, so the OpenAPI
document describes what is served; manifests inside them are passed through byte for
byte (their digests must recompute) but documented with the schema of their kind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import core_schema

from kernelindex.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    WorkloadSuite,
)
from kernelindex.manifests import Implementation as ImplementationKind
from kernelindex.manifests.digest import DIGEST_PATTERN
from kernelindex.manifests.types import EvidenceLevelField, RunStatusField

REPORTS_SHOWN = 50


class ApiModel(BaseModel):
    """Base of every API schema: camelCase JSON names, immutable."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class ManifestOf:
    """A manifest passed through as stored (so its digest recomputes), documented as its kind."""

    def __init__(self, kind: type[BaseModel]):
        self.kind = kind

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        return handler(self.kind.__pydantic_core_schema__)


DigestText = Annotated[
    str,
    Field(
        pattern=DIGEST_PATTERN.pattern,
        description="sha256 of the RFC 8785 canonical form of {apiVersion, kind, spec}",
    ),
]


class WorkloadManifest(ApiModel):
    digest: DigestText
    manifest: Annotated[dict[str, Any], ManifestOf(WorkloadSuite)]


class RunManifest(ApiModel):
    digest: DigestText
    manifest: Annotated[dict[str, Any], ManifestOf(BenchmarkRun)]


class ImplementationManifest(ApiModel):
    digest: DigestText
    manifest: Annotated[dict[str, Any], ManifestOf(ImplementationKind)]


class ProtocolManifest(ApiModel):
    digest: DigestText
    manifest: Annotated[dict[str, Any], ManifestOf(BenchmarkProtocol)]


class EnvironmentManifest(ApiModel):
    digest: DigestText
    manifest: Annotated[dict[str, Any], ManifestOf(ExecutionEnvironment)]


class FigureChange(ApiModel):
    """A figure the source published differently from one version of a run to the next."""

    figure: str = Field(description='"latencyNs.<statistic>" or the source-native metric\'s name')
    was: int | float | None = Field(description="as the earlier version held it (latencies in ns); null: absent")
    now: int | float | None = Field(description="as this version holds it; null: absent")


class ManifestVersionItem(ApiModel):
    """One digest a record has had; the current one has no ``supersededAt``. A run's version
    after its first lists the figures that changed from the version before (``figureChanges``)."""

    digest: DigestText
    recorded_at: datetime
    superseded_at: datetime | None
    figure_changes: list[FigureChange] = Field(default_factory=list)


class SourceRefItem(ApiModel):
    slug: str
    name: str
    api_url: str


class UncertaintyItem(ApiModel):
    """The interval around a ranked figure and what it rests on (/figures#interval)."""

    kind: str = Field(description="samples, reported-std, reported-percentiles or source-noise")
    low: int = Field(description="ns, as latencyNs")
    high: int = Field(description="ns, as latencyNs")


class GroupBest(ApiModel):
    run: str
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    implementation: str = Field(description="the project's slug, for /api/v1/implementations/{slug}")
    project: str
    observed_at: datetime
    # The #1 as the intervals allow (/figures#rank-range); null where not worked out for this answer.
    rank_range: list[int] | None = Field(
        default=None, description="[1, hi]: hi − 1 other runs of its group are not distinct from it beyond the noise"
    )
    tied_with: int | None = Field(
        default=None, description="other eligible runs of its group it is not distinct from; 0: distinct from #2"
    )
    uncertainty: UncertaintyItem | None = Field(default=None, description="its figure's interval; null where unknown")


class FastestRun(GroupBest):
    gpu: str
    gpu_product: str
    environment: str
    environment_title: str
    environment_label: str = Field(description="the environment as the pages name it: GPU · setup · stack")
    stack: str | None = Field(description="the evaluation stack the environment names, e.g. v1.1")
    evidence: EvidenceLevelField = Field(title="Evidence")
    comparison_key: DigestText = Field(description="the comparison group it leads")


class WorkloadItem(ApiModel):
    slug: str = Field(description="{collection}-{NNN}-{name}, e.g. l1-040-conv2d-residual-block")
    title: str
    source_slug: str = Field(description="the slug of the source it comes from, for /api/v1/sources/{slug}")
    collection: str
    tags: list[str]
    origin_model: str | None
    model_slug: str | None = Field(description="the origin model's slug, for /api/v1/models/{slug}")
    case_count: int
    eligible_runs: int = Field(description="runs that may be ranked (PRODUCT.md §5), across comparison groups")
    best_sol_score: float | None = Field(
        description="highest SOL score of an eligible run: SOL-ExecBench's own sol_score (0–1), "
        "not a share of the speed of light (/figures#sol-score)"
    )
    fastest: FastestRun | None = Field(
        description="the fastest eligible run over every comparison group (the leaderboard's headline), "
        "with the GPU and environment it was measured in"
    )
    last_record_at: datetime | None = Field(description="when the #1 of one of its comparison groups last changed")
    gpu: str | None = Field(
        description="filtered by GPU (?gpu=), its slug: every figure above is of the runs on that GPU alone; "
        "null: of every GPU",
    )
    runs_on_gpu: int | None = Field(
        description="filtered by GPU, its runs there, eligible or not (0: not measured on it); else null"
    )
    digest: DigestText
    url: str = Field(
        description="its leaderboard; filtered by GPU, opened on the comparison group of its fastest run there"
    )
    api_url: str


class ComparisonGroupItem(ApiModel):
    """One comparison group: one workload × protocol (family and harness version) × environment."""

    comparison_key: DigestText
    gpu: str
    gpu_product: str
    environment: str
    environment_title: str
    environment_label: str = Field(description="the environment as the pages name it: GPU · setup · stack")
    stack: str
    protocol: str
    protocol_title: str
    runs: int
    eligible_runs: int
    best: GroupBest | None = Field(description="the #1: fastest eligible run of the group")
    runs_url: str


class CrossGpuFigure(ApiModel):
    """One eligible run, as the cross-GPU view shows it: the fastest of a GPU, or of one implementation on it."""

    run: str
    latency_ns: int
    primary_statistic: str
    implementation: str = Field(description="the implementation's manifest name")
    implementation_title: str
    project: str
    environment: str
    environment_title: str
    environment_label: str = Field(description="the environment as the pages name it: GPU · setup · stack")
    provider: str | None = Field(description="the machine setup the environment names, if it names one")
    comparison_key: DigestText
    observed_at: datetime
    url: str


class GpuFigure(ApiModel):
    gpu: str
    gpu_product: str
    environments: int = Field(description="its environments (setups, stacks) holding an eligible run of the workload")
    eligible_runs: int
    best: CrossGpuFigure = Field(description="the fastest eligible run on this GPU, over its environments")


class ImplementationOnGpus(ApiModel):
    """One implementation across its revisions (one line for a submitter's several submissions)."""

    implementation: str = Field(description="the manifest name of its fastest revision here")
    implementation_title: str
    project: str
    best_by_gpu: dict[str, CrossGpuFigure] = Field(
        description="its fastest eligible run per GPU slug; a GPU it has no eligible run on is left out"
    )


class CrossGpuView(ApiModel):
    """A workload's figures side by side over the GPUs it was measured on; never a ranking of GPUs."""

    note: str
    gpus: list[GpuFigure] = Field(description="in the registry's GPU order, never by speed")
    implementations: list[ImplementationOnGpus] = Field(description="by title; on a page, one page of them")
    implementation_count: int = Field(description="every implementation with an eligible run on these GPUs")
    first_implementation: int = Field(description="the 1-based position of the first one listed")


class WorkloadRevision(ApiModel):
    """One revision of a problem: the workloads of a source whose external ids share the part up to "@"."""

    slug: str
    title: str
    external_id: str
    content_sha256: str = Field(description="sha256 of the problem file's content (or its first 16 hex digits)")
    first_published_at: datetime | None = Field(
        description="the earliest observation date of its runs: when the source first published figures for it"
    )
    current: bool = Field(description="true for the workload this answer is about")
    superseded: bool = Field(
        description="false for the problem's current revision (the one its source published last), "
        "true for the older ones"
    )
    changes: str | None = Field(description="for an older revision: what the current revision changed")
    url: str
    api_url: str


ReadFromKind = Literal["live", "snapshot", "bundled", "import"]


class SnapshotItem(ApiModel):
    """A recorded copy of an upstream, as it describes itself."""

    observed_at: datetime | None = Field(description="when the snapshot was recorded")
    scope: str | None = Field(description="what part of the upstream it holds, in its own words")
    partial: bool = Field(description="it holds part of what the upstream held then, not all of it")
    bundled: bool = Field(description="the snapshot shipped with the registry, loaded on a first start")


class Completeness(ApiModel):
    """How much of the upstream is stored, and where it was read: the figures behind ``summary``."""

    stored: int = Field(description="results stored from the source")
    noun: str = Field(description="what the source calls a result", examples=["submissions"])
    upstream_total: int | None = Field(
        description="the upstream's own count of results, where it publishes one and it was recorded"
    )
    upstream_total_observed_at: datetime | None = Field(description="when the upstream's count was read")
    read_from: ReadFromKind | None = Field(
        description="where the newest ingest that stored anything read: the live upstream, a snapshot, the bundled "
        "snapshot, or imported files; null when no ingest is recorded"
    )
    live: bool = Field(description="the newest ingest read the live upstream")
    read_at: datetime | None = Field(description="when the data was read: a snapshot's date, or a live ingest's")
    snapshot: SnapshotItem | None = Field(description="the snapshot it was read from; null when read live")
    refresh_command: str | None = Field(
        description="the command that reads the live upstream, when the data is not from it",
        examples=["kernelindex ingest sol-execbench"],
    )
    summary: str = Field(description="the same facts in one sentence, as the pages state them")


class SourceCompleteness(Completeness):
    """A source's completeness: ``upstream_total`` sums the workloads whose count was recorded, and
    ``upstream_total_observed_at`` is when the newest of those counts was read."""

    workloads: int = Field(description="workloads the source defines")
    counted_workloads: int = Field(description="of them, those whose upstream count was recorded")
    stored_in_counted: int = Field(description="results stored for the counted workloads (of upstream_total)")


class WorkloadDetail(WorkloadItem):
    description: str
    sol_aggregate_ms: float | None = Field(description="geometric mean of the per-case speed-of-light bounds")
    source: SourceRefItem
    external_id: str
    missing_since: datetime | None = Field(description="set when the source stopped listing it; nothing is deleted")
    groups: list[ComparisonGroupItem]
    default_group: DigestText | None = Field(
        description="the comparison key of the group the leaderboard opens on: the group of its fastest run"
    )
    manifest: WorkloadManifest
    history: list[ManifestVersionItem]
    cross_gpu: CrossGpuView | None = Field(description="its figures per GPU, when measured on two or more GPUs")
    revisions: list[WorkloadRevision] = Field(
        description="every revision of the same problem, this one included; empty when there is no other"
    )
    completeness: Completeness = Field(description="how many of the upstream's results for it are stored")


class ShareOfBoundItem(ApiModel):
    """A share of a named bound the run's latency reaches, computed by the registry (/figures#share-of-bound)."""

    percent: float = Field(description="the bound's latency over the run's, × 100 (T_SOL ÷ T × 100)")
    bound: str = Field(description="the bound: datasheet, sol-execbench (its own T_SOL) or measured-ceilings")
    label: str = Field(description="how the pages head it, e.g. '% of SOL bound (datasheet)'")


class RunItem(ApiModel):
    name: str = Field(examples=["sol-submission-16893"])
    digest: DigestText
    status: RunStatusField = Field(title="Status", description="correctness status: passed, failed or error")
    evidence: EvidenceLevelField = Field(
        title="Evidence",
        description="derived evidence level: reported, reproducible, verified, reproduced or replicated",
    )
    eligible: bool = Field(description="may be ranked: passed, not withdrawn, not disqualified, not held for review")
    latency_ns: int = Field(description="the primary statistic's latency, in integer nanoseconds")
    primary_statistic: str
    sol_score: float | None = Field(
        description="SOL-ExecBench's own SOL score (0–1; 0.5 at its baseline, 1 at its bound), as published; "
        "not a share of the speed of light (/figures#sol-score)"
    )
    share_of_bound: ShareOfBoundItem | None = Field(
        default=None, description="the share of a known bound the latency reaches; null where no bound is known"
    )
    observed_at: datetime
    comparison_key: DigestText
    workload: str = Field(description="the workload's slug")
    implementation: str = Field(description="the project's slug")
    project: str
    revision: str
    gpu: str = Field(description="the GPU's slug")
    environment: str
    protocol: str
    url: str
    api_url: str


class RankedRunItem(RunItem):
    rank: int | None = Field(description="rank in its comparison group; null when not eligible")
    rank_range: list[int] | None = Field(
        default=None, description="[lo, hi]: the places it could hold given the intervals (/figures#rank-range)"
    )
    distinct_from_best: bool | None = Field(
        default=None, description="slower than the group's #1 beyond both intervals; null when not eligible"
    )
    uncertainty: UncertaintyItem | None = Field(
        default=None, description="the figure's interval; null where unknown or not eligible"
    )


class Availability(ApiModel):
    license: str | None
    source_available: bool
    install_recipe: bool
    text: str = Field(examples=["license unknown · no source · no install recipe"])


class Withdrawal(ApiModel):
    at: datetime
    reason: str | None


class Review(ApiModel):
    """A maintainer's decision on a run held for review."""

    state: Literal["released", "rejected"] = Field(
        description="released: ranked like any eligible run; rejected: kept, shown, never ranked"
    )
    at: datetime
    note: str | None


class RunManifests(ApiModel):
    run: RunManifest
    workload: WorkloadManifest
    implementation: ImplementationManifest
    protocol: ProtocolManifest
    environment: EnvironmentManifest


class RunDetail(RunItem):
    rank: int | None = Field(description="rank in its comparison group; null when not eligible")
    rank_range: list[int] | None = Field(
        default=None, description="[lo, hi]: the places it could hold given the intervals (/figures#rank-range)"
    )
    distinct_from_best: bool | None = Field(
        default=None, description="slower than the group's #1 beyond both intervals; null when not eligible"
    )
    uncertainty: UncertaintyItem | None = Field(default=None, description="the figure's interval; null where unknown")
    group_size: int = Field(description="number of eligible runs in its comparison group")
    vs_best: float | None = Field(description="latency ÷ the group's best latency (1.0 for #1)")
    ineligibility_reasons: list[str]
    held_for_review: bool
    review: Review | None = Field(description="the maintainers' decision, once a held run has been reviewed")
    disqualified_upstream: str | None = Field(description="the source's reason, when the source disqualified it")
    withdrawn: Withdrawal | None
    missing_since: datetime | None
    metrics: dict[str, int | float | str | bool] = Field(description="source-native metrics, verbatim")
    availability: Availability
    source: SourceRefItem | None
    external_id: str | None
    manifests: RunManifests
    history: list[ManifestVersionItem]


class ImplementationItem(ApiModel):
    slug: str
    project: str
    revisions: int
    runs: int
    eligible_runs: int
    workloads: int
    gpus: int = Field(description="GPUs it has runs on")
    last_observed_at: datetime | None
    url: str
    api_url: str


class ImplementationRun(RankedRunItem):
    environment_title: str
    environment_label: str = Field(description="the environment as the pages name it: GPU · setup · stack")
    availability: str = Field(examples=["license unknown · no source · no install recipe"])
    group_size: int = Field(description="number of eligible runs in its comparison group")


class ImplementationWorkload(ApiModel):
    """One workload on one GPU as the implementation's runs there stand."""

    workload: str = Field(description="the workload's slug")
    title: str
    gpu: str = Field(description="the GPU's slug")
    gpu_product: str
    runs: int = Field(description="its runs of the workload on this GPU, eligible or not")
    best: ImplementationRun | None = Field(
        description="its fastest eligible run of the workload on this GPU, across revisions and stacks, with its "
        "rank in its own comparison group; null when none of those runs is eligible"
    )
    url: str
    api_url: str


class ImplementationGpu(ApiModel):
    """The implementation's runs on one GPU."""

    gpu: str = Field(description="the GPU's slug")
    gpu_product: str
    runs: int
    workloads: int


class ImplementationSource(ApiModel):
    """The implementation's runs one source published."""

    source: str = Field(description="the source's slug")
    source_name: str
    runs: int
    workloads: int


class RevisionRuns(ApiModel):
    revision: str = Field(examples=["submission-16893", "rerun-1+sha256.3f0a9c2e1b4d"])
    implementation: str = Field(description="the Implementation manifest's name")
    title: str | None = Field(description="the Implementation manifest's title")
    runs: int


class SourceRevisions(ApiModel):
    """An implementation's revisions as one source means them."""

    source: str | None = Field(description="the source's slug; null for runs no source published")
    source_name: str | None
    unit: Literal["submission", "revision"] = Field(
        description="submission: each label names one upload to the source's board, which publishes no code "
        "revisions (SOL-ExecBench's submission-<id>); revision: a version of the code the source publishes"
    )
    revisions: list[RevisionRuns]


class ImplementationDetail(ImplementationItem):
    runs_url: str
    revision_list: list[str] = Field(
        description="its revision labels as its manifests name them, e.g. submission-16893 (a SOL-ExecBench "
        "submission); revisions_by_source says what each label is"
    )
    revisions_by_source: list[SourceRevisions]
    first_places: int = Field(description="comparison groups in which one of its runs ranks #1")
    by_gpu: list[ImplementationGpu] = Field(description="its runs and workloads per GPU, by GPU slug")
    by_source: list[ImplementationSource] = Field(description="its runs and workloads per source, by source name")


class GpuSourceCoverage(ApiModel):
    """How many of one source's workloads (by origin: where the problem comes from) were measured
    on one GPU, by anyone; current revisions only. Runs are credited in ``GpuProducerRuns``."""

    source: str = Field(description="the source's slug: the workloads' origin")
    source_name: str
    workloads: int = Field(description="the source's current workloads with at least one run on this GPU")
    gaps: int = Field(description="the source's current workloads with no run on this GPU")
    source_workloads: int = Field(description="the source's current workloads: workloads + gaps")
    superseded_workloads: int = Field(
        description="older revisions of the source's problems with a run on this GPU, counted apart"
    )


class GpuProducerRuns(ApiModel):
    """The runs one producer (the source that published the figures, or the registry's own
    reruns) holds on one GPU, whoever's workloads they measured."""

    source: str = Field(description="the producer's slug")
    source_name: str
    runs: int
    gpu_naming: str = Field(description="where the producer's name for this GPU comes from")


class GpuItem(ApiModel):
    slug: str
    product: str
    vendor: str
    architecture: str | None
    environments: int
    runs: int
    workloads: int = Field(description="current workloads with at least one run on this GPU")
    gaps: int = Field(description="current workloads with no run on this GPU")
    by_source: list[GpuSourceCoverage] = Field(
        description="the coverage per source of workloads (every source that has workloads), by source name"
    )
    by_producer: list[GpuProducerRuns] = Field(
        description="the runs per producer with runs on this GPU, by source name; they add up to runs"
    )
    url: str
    api_url: str


class EnvironmentItem(ApiModel):
    name: str
    title: str
    stack: str
    digest: DigestText
    runs: int


class BestOnGpu(FastestRun):
    """A workload's fastest eligible run on one GPU, across its stacks and protocols."""

    availability: str = Field(examples=["license unknown · no source · no install recipe"])
    group_eligible_runs: int = Field(
        description="eligible runs in its comparison group, which it leads (#1): no faster run is eligible there"
    )


class GpuWorkload(ApiModel):
    """A workload as one GPU sees it: its runs there, or none (a gap)."""

    workload: str = Field(description="the workload's slug")
    title: str
    collection: str
    source: str = Field(description="the slug of the workload's source")
    runs: int = Field(description="its runs on this GPU, eligible or not; 0 for a workload not measured on it")
    best: BestOnGpu | None = Field(description="the fastest eligible run of the workload on this GPU, across stacks")
    url: str
    api_url: str


class DatasheetItem(ApiModel):
    """A GPU's datasheet figures as one source publishes them."""

    source: str = Field(description="the source's slug")
    source_name: str
    figures: dict[str, float | int] = Field(
        description="by name: memory_bandwidth_bytes_per_s, memory_bytes, power_w, sm_version, "
        "<data type>_tensor_flops_per_s"
    )
    reference: str | None = Field(description="the datasheet the source cites for them")


class GpuDetail(GpuItem):
    environment_list: list[EnvironmentItem]
    datasheets: list[DatasheetItem] = Field(description="the datasheet figures each source publishes for it")
    workloads_url: str = Field(
        description="its workloads, measured or not, page by page: filter by source and by measured=true|false"
    )


class ModelItem(ApiModel):
    slug: str
    name: str
    workloads: int
    url: str
    api_url: str


class ModelWorkload(ApiModel):
    slug: str
    title: str
    collection: str
    best_by_gpu: list[BestOnGpu] = Field(description="the fastest eligible run on each GPU, across stacks")


class ModelDetail(ModelItem):
    workload_list: list[ModelWorkload]


class IngestionItem(ApiModel):
    """One ingest of a source: where it read from, how it ended, when."""

    id: int
    origin: str
    read_from: str = Field(
        description="live (the upstream itself), snapshot, bundled (the snapshot shipped with the registry) or "
        "import (files handed to the registry)",
        examples=["live", "snapshot", "bundled", "import"],
    )
    snapshot_observed_at: datetime | None = Field(description="when the snapshot it read was recorded")
    snapshot_scope: str | None = Field(description="what part of the upstream that snapshot holds")
    status: str = Field(examples=["succeeded", "partial", "failed", "running", "interrupted"])
    started_at: datetime
    finished_at: datetime | None


class IngestionReportItem(IngestionItem):
    counts: dict[str, Any]
    errors: list[Any] = Field(description="errors, and warnings as lines starting with 'warning: '")
    drift: list[Any] = Field(description="upstream fields the mapping does not know")


class SourceItem(ApiModel):
    slug: str
    name: str
    website: str
    licence: str
    attribution: str = Field(description="the credit its figures are shown with")
    last_observed_at: datetime | None
    workloads: int = Field(description="workloads the source defines")
    superseded_workloads: int = Field(
        description="of those, older revisions of a revised problem: the current revisions are the others"
    )
    workloads_measured: int = Field(description="workloads its runs measured, its own or other sources'")
    runs: int = Field(description="runs from this source")
    gpus: int = Field(description="GPUs its runs were measured on")
    implementations: int = Field(description="implementation projects its runs measured")
    last_ingest: IngestionItem | None
    completeness: SourceCompleteness = Field(description="how much of the upstream is stored, and where it was read")
    url: str
    api_url: str


class CollectionCount(ApiModel):
    name: str
    workloads: int
    url: str = Field(description="the workloads list filtered to this source and collection")


class SourceDetail(SourceItem):
    description: str
    collections: list[CollectionCount]
    report_count: int
    reports: list[IngestionReportItem] = Field(description=f"ingestion reports, newest first (at most {REPORTS_SHOWN})")


class SearchHitItem(ApiModel):
    kind: Literal["workload", "implementation", "gpu", "model"]
    slug: str
    title: str
    subtitle: str
    sources: list[SourceRefItem] = Field(
        description="where its records come from: a workload's source, the sources of an implementation's runs "
        "or of a model's workloads; empty for a GPU, which any source may measure on"
    )
    url: str
    api_url: str
    on_gpu: OnGpuItem | None = Field(
        default=None,
        description="with ?gpu=, a workload's figures on that GPU alone (as /api/v1/workloads?gpu= gives them); "
        "null for other kinds and without the filter",
    )


class OnGpuItem(ApiModel):
    gpu: str
    runs: int = Field(description="its runs on the GPU; 0: not measured on it")
    fastest: FastestRun | None = Field(description="its fastest eligible run on the GPU, if one is eligible")


class SearchResponse(ApiModel):
    query: str = Field(description="the text searched: q, less the words that named the GPU when they did")
    hits: list[SearchHitItem] = Field(description="best first; entries matching every term come first")
    did_you_mean: str | None = Field(description="a corrected query, for a near miss")
    gpu: str | None = Field(
        default=None, description="the GPU whose figures the workload hits carry (onGpu): gpu, or the one q named"
    )


class _PageBase(ApiModel):
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last page")


class WorkloadPage(_PageBase):
    items: list[WorkloadItem]


class RunPage(_PageBase):
    items: list[RunItem]


class ImplementationPage(_PageBase):
    items: list[ImplementationItem]


class GpuPage(_PageBase):
    items: list[GpuItem]


class GpuWorkloadPage(_PageBase):
    items: list[GpuWorkload]


class ImplementationDetailPage(_PageBase, ImplementationDetail):
    workload_results: list[ImplementationWorkload] = Field(
        description="one page of its workloads, one row per workload and GPU it has runs on, by workload slug "
        "then GPU slug; filter by gpu and by source (the source that published the runs)"
    )


class ModelPage(_PageBase):
    items: list[ModelItem]


class SourcePage(_PageBase):
    items: list[SourceItem]
