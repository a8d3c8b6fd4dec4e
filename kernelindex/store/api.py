"""Reads for the JSON API (``/api/v1``): its public schemas and the queries that fill them.

The schemas are Pydantic models of their own, separate from the ORM tables, so the
OpenAPI document describes exactly what is served, field by field; manifests inside them
are passed through byte for byte (their digests must recompute) but documented with the
schema of their kind.

Lists are paginated by keyset: a page ends at a *position* (the sort values of its last
item, the unique name last), and the next page starts strictly after it. Inserting or
removing other rows never shifts a position, so walking the pages of an unchanged set
yields every item exactly once. The opaque cursor token around a position is made by
the web layer.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import core_schema
from sqlalchemy import ColumnElement, Select, Text, and_, case, cast, false, func, or_, select
from sqlalchemy.orm import QueryableAttribute, Session, aliased, joinedload

from kernelindex.compare import ComparedRun
from kernelindex.db.tables import (
    Environment,
    Implementation,
    IngestionReport,
    ManifestVersion,
    Run,
    Source,
    Workload,
)
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    WorkloadSuite,
)
from kernelindex.manifests import Implementation as ImplementationKind
from kernelindex.manifests.digest import DIGEST_PATTERN
from kernelindex.ranking import RunFacts, ineligibility_reasons, rank_group
from kernelindex.slugs import slugify

EVIDENCE_LEVELS = ("reported", "reproducible", "verified", "replicated")
REPORTS_SHOWN = 50

# --- Schemas ---------------------------------------------------------------------------


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


class ManifestVersionItem(ApiModel):
    """One digest a record has had; the current one has no ``supersededAt``."""

    digest: DigestText
    recorded_at: datetime
    superseded_at: datetime | None


class SourceRefItem(ApiModel):
    slug: str
    name: str
    api_url: str


class WorkloadItem(ApiModel):
    slug: str = Field(description="{collection}-{NNN}-{name}, e.g. l1-040-conv2d-residual-block")
    title: str
    collection: str
    tags: list[str]
    origin_model: str | None
    model_slug: str | None = Field(description="the origin model's slug, for /api/v1/models/{slug}")
    case_count: int
    eligible_runs: int = Field(description="runs that may be ranked (PRODUCT.md §5), across comparison groups")
    best_sol_score: float | None = Field(description="highest SOL score of an eligible run (0–1); ×100 for % of SOL")
    last_record_at: datetime | None = Field(description="when the #1 of one of its comparison groups last changed")
    digest: DigestText
    url: str
    api_url: str


class GroupBest(ApiModel):
    run: str
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    implementation: str = Field(description="the project's slug, for /api/v1/implementations/{slug}")
    project: str
    observed_at: datetime


class ComparisonGroupItem(ApiModel):
    """One comparison group: one workload × protocol (family and harness version) × environment."""

    comparison_key: DigestText
    gpu: str
    gpu_product: str
    environment: str
    environment_title: str
    stack: str
    protocol: str
    protocol_title: str
    runs: int
    eligible_runs: int
    best: GroupBest | None = Field(description="the #1: fastest eligible run of the group")
    runs_url: str


class WorkloadDetail(WorkloadItem):
    description: str
    sol_aggregate_ms: float | None = Field(description="geometric mean of the per-case speed-of-light bounds")
    source: SourceRefItem
    external_id: str
    missing_since: datetime | None = Field(description="set when the source stopped listing it; nothing is deleted")
    groups: list[ComparisonGroupItem]
    manifest: WorkloadManifest
    history: list[ManifestVersionItem]


class RunItem(ApiModel):
    name: str = Field(examples=["sol-submission-16893"])
    digest: DigestText
    status: str = Field(description="correctness status: passed, failed or error")
    evidence: str = Field(description="derived evidence level: reported, reproducible, verified or replicated")
    eligible: bool = Field(description="may be ranked: passed, not withdrawn, not disqualified, not held for review")
    latency_ns: int = Field(description="the primary statistic's latency, in integer nanoseconds")
    primary_statistic: str
    sol_score: float | None
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


class Availability(ApiModel):
    license: str | None
    source_available: bool
    install_recipe: bool
    text: str = Field(examples=["license unknown · no source · no install recipe"])


class Withdrawal(ApiModel):
    at: datetime
    reason: str | None


class RunManifests(ApiModel):
    run: RunManifest
    workload: WorkloadManifest
    implementation: ImplementationManifest
    protocol: ProtocolManifest
    environment: EnvironmentManifest


class RunDetail(RunItem):
    rank: int | None = Field(description="rank in its comparison group; null when not eligible")
    group_size: int = Field(description="number of eligible runs in its comparison group")
    vs_best: float | None = Field(description="latency ÷ the group's best latency (1.0 for #1)")
    ineligibility_reasons: list[str]
    held_for_review: bool
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
    last_observed_at: datetime | None
    url: str
    api_url: str


class ImplementationWorkload(ApiModel):
    workload: str
    title: str
    best_rank: int | None = Field(description="best rank of its runs on this workload, in any comparison group")
    best_run: str | None
    runs: list[RankedRunItem]


class ImplementationDetail(ImplementationItem):
    workload_results: list[ImplementationWorkload]
    runs_url: str


class GpuItem(ApiModel):
    slug: str
    product: str
    vendor: str
    architecture: str | None
    environments: int
    runs: int
    workloads: int = Field(description="workloads with at least one run on this GPU")
    url: str
    api_url: str


class EnvironmentItem(ApiModel):
    name: str
    title: str
    stack: str
    digest: DigestText
    runs: int


class GpuWorkload(ApiModel):
    workload: str
    title: str
    runs: int
    best: GroupBest | None
    best_environment: str | None


class GpuDetail(GpuItem):
    environment_list: list[EnvironmentItem]
    measured: list[GpuWorkload]
    not_measured: list[str] = Field(description="slugs of workloads with no run on this GPU")


class ModelItem(ApiModel):
    slug: str
    name: str
    workloads: int
    url: str
    api_url: str


class BestOnGpu(ApiModel):
    gpu: str
    gpu_product: str
    environment: str
    run: str
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    implementation: str
    project: str
    evidence: str


class ModelWorkload(ApiModel):
    slug: str
    title: str
    collection: str
    best_by_gpu: list[BestOnGpu] = Field(description="the fastest eligible run on each GPU, across stacks")


class ModelDetail(ModelItem):
    workload_list: list[ModelWorkload]


class SourceItem(ApiModel):
    slug: str
    name: str
    website: str
    last_observed_at: datetime | None
    workloads: int
    runs: int
    url: str
    api_url: str


class IngestionReportItem(ApiModel):
    id: int
    origin: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    counts: dict[str, Any]
    errors: list[Any]
    drift: list[Any]


class SourceDetail(SourceItem):
    description: str
    licence: str
    report_count: int
    reports: list[IngestionReportItem] = Field(description=f"ingestion reports, newest first (at most {REPORTS_SHOWN})")


class SearchHitItem(ApiModel):
    kind: Literal["workload", "implementation", "gpu", "model"]
    slug: str
    title: str
    subtitle: str
    url: str
    api_url: str


class SearchResponse(ApiModel):
    query: str
    hits: list[SearchHitItem] = Field(description="best first; entries matching every term come first")
    did_you_mean: str | None = Field(description="a corrected query, for a near miss")


API_PATHS = {"workload": "workloads", "implementation": "implementations", "gpu": "gpus", "model": "models"}


def search_response(results: Any) -> SearchResponse:
    """The API form of ``kernelindex.store.search.SearchResults``."""
    return SearchResponse(
        query=results.query,
        hits=[
            SearchHitItem(
                kind=hit.kind,
                slug=hit.slug,
                title=hit.title,
                subtitle=hit.subtitle,
                url=hit.url,
                api_url=f"/api/v1/{API_PATHS[hit.kind]}/{hit.slug}",
            )
            for hit in results.hits
        ],
        did_you_mean=results.did_you_mean,
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


class ModelPage(_PageBase):
    items: list[ModelItem]


class SourcePage(_PageBase):
    items: list[SourceItem]


# --- Keyset positions ------------------------------------------------------------------


@dataclass(frozen=True)
class SortKey:
    """One sort key of a listing; ``kind`` is the type of its value in a position."""

    name: str
    kind: type
    descending: bool = False
    nullable: bool = False


SLUG_ORDER = (SortKey("slug", str),)
WORKLOAD_SORTS: dict[str, tuple[SortKey, ...]] = {
    "name": (SortKey("name", str),),
    "runs": (SortKey("runs", int), SortKey("name", str)),
    "-runs": (SortKey("runs", int, descending=True), SortKey("name", str)),
    "best_sol": (SortKey("best_sol", float, descending=True, nullable=True), SortKey("name", str)),
    "last_record": (SortKey("last_record", datetime, descending=True, nullable=True), SortKey("name", str)),
}
RUN_SORTS: dict[str, tuple[SortKey, ...]] = {
    "latency": (SortKey("latency", int), SortKey("name", str)),
    "-latency": (SortKey("latency", int, descending=True), SortKey("name", str)),
    "observed": (SortKey("observed", datetime), SortKey("name", str)),
    "-observed": (SortKey("observed", datetime, descending=True), SortKey("name", str)),
}

Position = tuple[Any, ...]
# A column, labelled expression or ORM attribute that a listing sorts or filters on.
Expr = ColumnElement[Any] | QueryableAttribute[Any]
AnySelect = TypeVar("AnySelect", bound=Select)


class PositionError(ValueError):
    """A position that does not fit the listing's sort keys."""


def position_to_json(position: Position) -> list[Any]:
    return [value.isoformat() if isinstance(value, datetime) else value for value in position]


def position_from_json(keys: Sequence[SortKey], raw: Any) -> Position:
    """Check a decoded position against the sort keys it claims to belong to."""
    if not isinstance(raw, list) or len(raw) != len(keys):
        raise PositionError("the position does not match this sort")
    values: list[Any] = []
    for key, value in zip(keys, raw, strict=True):
        if value is None:
            if not key.nullable:
                raise PositionError(f"the position has no value for {key.name}")
            values.append(None)
        elif (key.kind is str and isinstance(value, str)) or (
            key.kind is int and isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
        ):
            values.append(value)
        elif key.kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            values.append(float(value))
        elif key.kind is datetime and isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                raise PositionError(f"the position's {key.name} is not a timestamp") from None
            if moment.tzinfo is None:
                raise PositionError(f"the position's {key.name} has no time zone")
            try:
                values.append(moment.astimezone(UTC))
            except OverflowError:
                raise PositionError(f"the position's {key.name} is out of range") from None
        else:
            raise PositionError(f"the position's {key.name} has the wrong type")
    return tuple(values)


def _ordered(keys: Sequence[SortKey], exprs: dict[str, Expr]) -> list[tuple[Expr, bool]]:
    """(expression, descending) pairs; a nullable key sorts its nulls last through a 0/1 flag."""
    ordered: list[tuple[Expr, bool]] = []
    for key in keys:
        expr = exprs[key.name]
        if key.nullable:
            ordered.append((case((expr.is_(None), 1), else_=0), False))
        ordered.append((expr, key.descending))
    return ordered


def _expanded(keys: Sequence[SortKey], position: Position) -> list[Any]:
    values: list[Any] = []
    for key, value in zip(keys, position, strict=True):
        if key.nullable:
            values.append(1 if value is None else 0)
        values.append(value)
    return values


def _strictly_after(ordered: list[tuple[Expr, bool]], values: list[Any]) -> ColumnElement[bool]:
    """Rows that sort strictly after ``values``: (a > x) or (a = x and b > y) or …, per direction."""
    clauses = []
    for index, ((expr, descending), value) in enumerate(zip(ordered, values, strict=True)):
        if value is None:
            continue  # among nulls nothing is strictly after; the null flag before it decides
        equal_before = [
            e.is_(None) if v is None else e == v for (e, _), v in zip(ordered[:index], values[:index], strict=True)
        ]
        clauses.append(and_(*equal_before, expr < value if descending else expr > value))
    return or_(*clauses) if clauses else false()


def _keyset(
    session: Session,
    stmt: Select[Any],
    keys: Sequence[SortKey],
    exprs: dict[str, Expr],
    after: Position | None,
    limit: int,
) -> tuple[list[Any], Position | None]:
    """Run ``stmt`` for one page; returns its rows (key values appended) and the next page's position."""
    ordered = _ordered(keys, exprs)
    labelled = [exprs[key.name].label(f"_key_{index}") for index, key in enumerate(keys)]
    stmt = stmt.add_columns(*labelled).order_by(*(expr.desc() if desc else expr.asc() for expr, desc in ordered))
    if after is not None:
        stmt = stmt.where(_strictly_after(ordered, _expanded(keys, after)))
    rows = list(session.execute(stmt.limit(limit + 1)).all())
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, tuple(rows[-1][-len(keys) :])


def _page_of(items: list[tuple[str, Any]], after: Position | None, limit: int) -> tuple[list[Any], Position | None]:
    """Keyset paging of a small list held in memory, sorted by its unique slug."""
    items = sorted(items, key=lambda item: item[0])
    if after is not None:
        items = [item for item in items if item[0] > after[0]]
    page = items[:limit]
    more = len(items) > limit
    return [value for _, value in page], ((page[-1][0],) if more else None)


# --- Shared pieces ---------------------------------------------------------------------


def eligible(run: Any = Run) -> ColumnElement[bool]:
    """Runs that may be ranked (PRODUCT.md §5), for ``Run`` or an alias of it."""
    return and_(
        run.status == "passed",
        run.withdrawn_at.is_(None),
        run.upstream_withdrawn.is_(False),
        run.held_for_review.is_(False),
    )


def _facts(run: Run) -> RunFacts:
    return RunFacts(
        name=run.name,
        comparison_key=run.comparison_key,
        latency_ns=run.latency_ns,
        observed_at=run.observed_at,
        status=run.status,
        withdrawn=run.withdrawn_at is not None,
        upstream_withdrawn=run.upstream_withdrawn,
        held_for_review=run.held_for_review,
    )


def _rank_expression() -> ColumnElement[int]:
    """1 + the number of strictly faster eligible runs of the same group: ranking.rank_group's rule."""
    faster = aliased(Run)
    return (
        select(func.count())
        .select_from(faster)
        .where(
            faster.workload_id == Run.workload_id,
            faster.comparison_key == Run.comparison_key,
            faster.latency_ns < Run.latency_ns,
            eligible(faster),
        )
        .correlate(Run)
        .scalar_subquery()
        + 1
    )


def availability_text(license: str | None, source_available: bool, install_recipe: bool) -> str:
    """As PRODUCT.md §4 words it: "license unknown · no source · no install recipe"."""
    return " · ".join(
        [
            f"license {license}" if license else "license unknown",
            "source available" if source_available else "no source",
            "install recipe" if install_recipe else "no install recipe",
        ]
    )


def stack_text(environment_manifest: dict[str, Any]) -> str:
    """The software an environment names, e.g. "v1.1" for SOL-ExecBench's evaluation stack."""
    software = environment_manifest.get("spec", {}).get("software", {})
    parts = [
        str(version) if name == "evaluation_stack" else f"{name} {version}"
        for name, version in sorted(software.get("libraries", {}).items())
    ]
    if software.get("driver"):
        parts.append(f"driver {software['driver']}")
    return ", ".join(parts) or "unknown"


def _spec(record: Any) -> dict[str, Any]:
    return json.loads(record.manifest_json).get("spec", {})


def _run_metrics(run: Run) -> dict[str, Any]:
    native = _spec(run).get("sourceNative") or {}
    return dict(native.get("metrics") or {})


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _history(session: Session, kind: str, name: str) -> list[ManifestVersionItem]:
    versions = session.scalars(
        select(ManifestVersion)
        .where(ManifestVersion.kind == kind, ManifestVersion.name == name)
        .order_by(ManifestVersion.recorded_at, ManifestVersion.id)
    )
    return [
        ManifestVersionItem(digest=v.digest, recorded_at=v.recorded_at, superseded_at=v.superseded_at) for v in versions
    ]


def _name_by_ref(session: Session, table: Any, kind: str, ref: str) -> str | None:
    """A record's name from its name, its current digest or any digest it has had."""
    if not ref.startswith("sha256:"):
        return ref
    name = session.scalar(select(table.name).where(table.digest == ref).order_by(table.name).limit(1))
    if name is None:
        name = session.scalar(
            select(ManifestVersion.name)
            .where(ManifestVersion.kind == kind, ManifestVersion.digest == ref)
            .order_by(ManifestVersion.name)
            .limit(1)
        )
    return name


def _contains(expr: Expr, text: str) -> ColumnElement[bool]:
    """Case-insensitive substring match, alike on SQLite and PostgreSQL."""
    return func.lower(expr).contains(text.lower(), autoescape=True)


def _group_best(run: Run) -> GroupBest:
    return GroupBest(
        run=run.name,
        latency_ns=run.latency_ns,
        primary_statistic=run.primary_statistic,
        sol_score=run.sol_score,
        implementation=run.implementation.project_slug,
        project=run.implementation.project,
        observed_at=run.observed_at,
    )


def _with_references(stmt: AnySelect) -> AnySelect:
    return stmt.options(
        joinedload(Run.workload),
        joinedload(Run.implementation),
        joinedload(Run.environment),
        joinedload(Run.protocol),
    )


def _best_per_gpu(session: Session, *conditions: ColumnElement[bool]) -> dict[tuple[int, str], Run]:
    """The fastest eligible run of each (workload, GPU), across stacks; equal latencies go by name.

    Only the winners are loaded: the minimum latency is found in SQL, per group.
    """
    fastest = (
        select(Run.workload_id, Environment.gpu_slug, func.min(Run.latency_ns).label("latency_ns"))
        .join(Environment, Run.environment_id == Environment.id)
        .where(eligible(), *conditions)
        .group_by(Run.workload_id, Environment.gpu_slug)
        .subquery()
    )
    winners = (
        _with_references(select(Run))
        .join(Environment, Run.environment_id == Environment.id)
        .join(
            fastest,
            and_(
                Run.workload_id == fastest.c.workload_id,
                Environment.gpu_slug == fastest.c.gpu_slug,
                Run.latency_ns == fastest.c.latency_ns,
            ),
        )
        .where(eligible(), *conditions)
        .order_by(Run.name)
    )
    best: dict[tuple[int, str], Run] = {}
    for run in session.scalars(winners):
        best.setdefault((run.workload_id, run.environment.gpu_slug), run)
    return best


def _fastest_first(runs: Iterable[Run]) -> list[Run]:
    return sorted(runs, key=lambda run: (run.latency_ns, run.name))


# --- Workloads -------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadFilters:
    collection: str | None = None
    tag: str | None = None
    model: str | None = None
    gpu: str | None = None
    q: str | None = None


def _last_record_subquery(ids: Sequence[int] | None = None) -> Any:
    """Per workload, when the #1 of one of its groups last changed.

    The last record of a group is set by its current #1: the fastest eligible run, the
    earliest observed among equals (the rule of ``ranking.record_history``).
    """
    scope = [eligible()] + ([Run.workload_id.in_(ids)] if ids is not None else [])
    best = (
        select(Run.workload_id, Run.comparison_key, func.min(Run.latency_ns).label("best"))
        .where(*scope)
        .group_by(Run.workload_id, Run.comparison_key)
        .subquery()
    )
    holder = (
        select(best.c.workload_id, func.min(Run.observed_at).label("at"))
        .join(
            Run,
            and_(
                Run.workload_id == best.c.workload_id,
                Run.comparison_key == best.c.comparison_key,
                Run.latency_ns == best.c.best,
            ),
        )
        .where(eligible())
        .group_by(best.c.workload_id, best.c.comparison_key)
        .subquery()
    )
    return select(holder.c.workload_id, func.max(holder.c.at).label("at")).group_by(holder.c.workload_id).subquery()


def _eligible_stats_subquery(ids: Sequence[int] | None = None) -> Any:
    scope = [eligible()] + ([Run.workload_id.in_(ids)] if ids is not None else [])
    return (
        select(Run.workload_id, func.count().label("runs"), func.max(Run.sol_score).label("best_sol"))
        .where(*scope)
        .group_by(Run.workload_id)
        .subquery()
    )


def _workload_conditions(session: Session, filters: WorkloadFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.collection:
        conditions.append(func.lower(Workload.collection) == filters.collection.lower())
    if filters.tag:
        # Tags are a JSON list of strings: match one quoted element of its text.
        conditions.append(_contains(cast(Workload.tags, Text), json.dumps(filters.tag.lower())))
    if filters.model:
        wanted = slugify(filters.model)
        names = [name for name in model_names(session) if slugify(name) == wanted]
        conditions.append(Workload.origin_model.in_(names))
    if filters.gpu:
        measured = select(Run.workload_id).join(Environment, Run.environment_id == Environment.id)
        conditions.append(Workload.id.in_(measured.where(Environment.gpu_slug == filters.gpu.lower())))
    if filters.q:
        conditions.append(
            or_(
                _contains(Workload.name, filters.q),
                _contains(Workload.title, filters.q),
                _contains(func.coalesce(Workload.origin_model, ""), filters.q),
            )
        )
    return conditions


def list_workloads(
    session: Session, filters: WorkloadFilters, sort: str, after: Position | None, limit: int
) -> tuple[list[WorkloadItem], Position | None]:
    stmt = select(Workload).where(*_workload_conditions(session, filters))
    exprs: dict[str, Expr] = {"name": Workload.name}
    if sort in ("runs", "-runs", "best_sol"):
        stats = _eligible_stats_subquery()
        stmt = stmt.outerjoin(stats, stats.c.workload_id == Workload.id)
        exprs["runs"] = func.coalesce(stats.c.runs, 0)
        exprs["best_sol"] = stats.c.best_sol
    elif sort == "last_record":
        last = _last_record_subquery()
        stmt = stmt.outerjoin(last, last.c.workload_id == Workload.id)
        exprs["last_record"] = last.c.at
    rows, position = _keyset(session, stmt, WORKLOAD_SORTS[sort], exprs, after, limit)
    return _workload_items(session, [row[0] for row in rows]), position


def _workload_items(session: Session, workloads: list[Workload]) -> list[WorkloadItem]:
    ids = [w.id for w in workloads]
    stats_q = _eligible_stats_subquery(ids)
    stats = {row.workload_id: row for row in session.execute(select(stats_q))}
    last_q = _last_record_subquery(ids)
    last = {row.workload_id: row.at for row in session.execute(select(last_q))}
    return [_workload_item(w, stats.get(w.id), last.get(w.id)) for w in workloads]


def _workload_item(workload: Workload, stats: Any, last_record_at: datetime | None) -> WorkloadItem:
    return WorkloadItem(
        slug=workload.name,
        title=workload.title,
        collection=workload.collection,
        tags=[str(tag) for tag in workload.tags],
        origin_model=workload.origin_model,
        model_slug=slugify(workload.origin_model) if workload.origin_model else None,
        case_count=workload.case_count,
        eligible_runs=stats.runs if stats else 0,
        best_sol_score=stats.best_sol if stats else None,
        last_record_at=last_record_at,
        digest=workload.digest,
        url=f"/workloads/{workload.name}",
        api_url=f"/api/v1/workloads/{workload.name}",
    )


def find_workload(session: Session, ref: str) -> Workload | None:
    """By slug, current digest or any earlier digest."""
    name = _name_by_ref(session, Workload, "WorkloadSuite", ref)
    if name is None:
        return None
    return session.scalar(select(Workload).where(Workload.name == name).options(joinedload(Workload.source)))


def workload_detail(session: Session, workload: Workload) -> WorkloadDetail:
    item = _workload_items(session, [workload])[0]
    runs = session.scalars(_with_references(select(Run).where(Run.workload_id == workload.id))).all()
    by_group: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_group[run.comparison_key].append(run)
    groups = []
    for key, members in by_group.items():
        sample = members[0]
        ranked = [run for run in _fastest_first(members) if not ineligibility_reasons(_facts(run))]
        groups.append(
            ComparisonGroupItem(
                comparison_key=key,
                gpu=sample.environment.gpu_slug,
                gpu_product=sample.environment.gpu_product,
                environment=sample.environment.name,
                environment_title=sample.environment.title,
                stack=stack_text(json.loads(sample.environment.manifest_json)),
                protocol=sample.protocol.name,
                protocol_title=sample.protocol.title,
                runs=len(members),
                eligible_runs=len(ranked),
                best=_group_best(ranked[0]) if ranked else None,
                runs_url=f"/api/v1/runs?workload={workload.name}&comparison_key={key}",
            )
        )
    groups.sort(key=lambda g: (g.best is None, g.best.latency_ns if g.best else 0, g.environment, g.protocol))
    return WorkloadDetail(
        **item.model_dump(),
        description=workload.description,
        sol_aggregate_ms=workload.sol_aggregate_ms,
        source=SourceRefItem(
            slug=workload.source.slug, name=workload.source.name, api_url=f"/api/v1/sources/{workload.source.slug}"
        ),
        external_id=workload.external_id,
        missing_since=workload.missing_since,
        groups=groups,
        manifest=WorkloadManifest(digest=workload.digest, manifest=json.loads(workload.manifest_json)),
        history=_history(session, "WorkloadSuite", workload.name),
    )


# --- Runs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFilters:
    workload: str | None = None
    gpu: str | None = None
    implementation: str | None = None
    evidence: str | None = None
    eligible: bool | None = None
    comparison_key: str | None = None


def _run_conditions(filters: RunFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.workload:
        conditions.append(Run.workload_id.in_(select(Workload.id).where(Workload.name == filters.workload)))
    if filters.gpu:
        conditions.append(
            Run.environment_id.in_(select(Environment.id).where(Environment.gpu_slug == filters.gpu.lower()))
        )
    if filters.implementation:
        conditions.append(
            Run.implementation_id.in_(
                select(Implementation.id).where(Implementation.project_slug == filters.implementation.lower())
            )
        )
    if filters.evidence:
        conditions.append(Run.evidence == filters.evidence)
    if filters.eligible is not None:
        conditions.append(eligible() if filters.eligible else ~eligible())
    if filters.comparison_key:
        conditions.append(Run.comparison_key == filters.comparison_key)
    return conditions


def list_runs(
    session: Session, filters: RunFilters, sort: str, after: Position | None, limit: int
) -> tuple[list[RunItem], Position | None]:
    stmt = _with_references(select(Run)).where(*_run_conditions(filters))
    exprs: dict[str, Expr] = {"name": Run.name, "latency": Run.latency_ns, "observed": Run.observed_at}
    rows, position = _keyset(session, stmt, RUN_SORTS[sort], exprs, after, limit)
    return [_run_item(row[0]) for row in rows], position


def _run_fields(run: Run) -> dict[str, Any]:
    return {
        "name": run.name,
        "digest": run.digest,
        "status": run.status,
        "evidence": run.evidence,
        "eligible": not ineligibility_reasons(_facts(run)),
        "latency_ns": run.latency_ns,
        "primary_statistic": run.primary_statistic,
        "sol_score": run.sol_score,
        "observed_at": run.observed_at,
        "comparison_key": run.comparison_key,
        "workload": run.workload.name,
        "implementation": run.implementation.project_slug,
        "project": run.implementation.project,
        "revision": run.implementation.revision,
        "gpu": run.environment.gpu_slug,
        "environment": run.environment.name,
        "protocol": run.protocol.name,
        "url": f"/runs/{run.name}",
        "api_url": f"/api/v1/runs/{run.name}",
    }


def _run_item(run: Run) -> RunItem:
    return RunItem(**_run_fields(run))


def find_run(session: Session, ref: str) -> Run | None:
    """By name, current digest or any earlier digest."""
    name = _name_by_ref(session, Run, "BenchmarkRun", ref)
    if name is None:
        return None
    return session.scalar(
        _with_references(select(Run).where(Run.name == name)).options(joinedload(Run.source)),
    )


def run_detail(session: Session, run: Run) -> RunDetail:
    facts = _facts(run)
    reasons = ineligibility_reasons(facts)
    rank = group_size = vs_best = None
    if not reasons:
        # Eligible members only, so the facts need no more than name, key, latency and time.
        group = session.execute(
            select(Run.name, Run.latency_ns, Run.observed_at).where(
                Run.workload_id == run.workload_id, Run.comparison_key == run.comparison_key, eligible()
            )
        )
        ranked = rank_group(
            RunFacts(name=name, comparison_key=run.comparison_key, latency_ns=latency_ns, observed_at=observed_at)
            for name, latency_ns, observed_at in group
        )
        mine = next(r for r in ranked if r.run.name == run.name)
        rank, vs_best, group_size = mine.rank, mine.vs_best, len(ranked)
    else:
        group_size = session.scalar(
            select(func.count()).where(
                Run.workload_id == run.workload_id, Run.comparison_key == run.comparison_key, eligible()
            )
        )
    implementation = run.implementation
    return RunDetail(
        **_run_fields(run),
        rank=rank,
        group_size=group_size or 0,
        vs_best=vs_best,
        ineligibility_reasons=reasons,
        held_for_review=run.held_for_review,
        disqualified_upstream=(run.upstream_withdrawn_reason or "no reason given") if run.upstream_withdrawn else None,
        withdrawn=Withdrawal(at=run.withdrawn_at, reason=run.withdrawn_reason) if run.withdrawn_at else None,
        missing_since=run.missing_since,
        metrics=_run_metrics(run),
        availability=Availability(
            license=implementation.license,
            source_available=implementation.source_available,
            install_recipe=implementation.has_install_recipe,
            text=availability_text(
                implementation.license, implementation.source_available, implementation.has_install_recipe
            ),
        ),
        source=SourceRefItem(slug=run.source.slug, name=run.source.name, api_url=f"/api/v1/sources/{run.source.slug}")
        if run.source
        else None,
        external_id=run.external_id,
        manifests=RunManifests(
            run=RunManifest(digest=run.digest, manifest=json.loads(run.manifest_json)),
            workload=WorkloadManifest(digest=run.workload.digest, manifest=json.loads(run.workload.manifest_json)),
            implementation=ImplementationManifest(
                digest=implementation.digest, manifest=json.loads(implementation.manifest_json)
            ),
            protocol=ProtocolManifest(digest=run.protocol.digest, manifest=json.loads(run.protocol.manifest_json)),
            environment=EnvironmentManifest(
                digest=run.environment.digest, manifest=json.loads(run.environment.manifest_json)
            ),
        ),
        history=_history(session, "BenchmarkRun", run.name),
    )


def runs_to_compare(session: Session, names: Sequence[str]) -> tuple[list[ComparedRun], list[str]]:
    """The runs named, in the order given, as ``ComparedRun`` facts; and the names not found."""
    rank = _rank_expression().label("rank")
    rows = session.execute(_with_references(select(Run, rank)).where(Run.name.in_(list(names)))).all()
    found = {run.name: (run, value) for run, value in rows}
    missing = [name for name in names if name not in found]
    compared = []
    for name in names:
        if name not in found:
            continue
        run, rank_value = found[name]
        metrics = _run_metrics(run)
        environment, protocol, implementation = run.environment, run.protocol, run.implementation
        facts = _facts(run)
        compared.append(
            ComparedRun(
                name=run.name,
                digest=run.digest,
                comparison_key=run.comparison_key,
                status=run.status,
                evidence=run.evidence,
                availability=availability_text(
                    implementation.license, implementation.source_available, implementation.has_install_recipe
                ),
                latency_ns=run.latency_ns,
                primary_statistic=run.primary_statistic,
                sol_score=run.sol_score,
                avg_speedup=_number(metrics.get("avg_speedup")),
                fast_count=_count(metrics.get("fast_1_count")),
                fast_total=_count(metrics.get("fast_1_total")),
                observed_at=run.observed_at,
                rank=None if ineligibility_reasons(facts) else rank_value,
                workload_slug=run.workload.name,
                workload_title=run.workload.title,
                workload_digest=run.workload.digest,
                project=implementation.project,
                project_slug=implementation.project_slug,
                revision=implementation.revision,
                protocol_name=protocol.name,
                protocol_title=protocol.title,
                protocol_family=protocol.family,
                harness_name=protocol.harness_name,
                harness_version=protocol.harness_version,
                protocol_digest=protocol.digest,
                environment_name=environment.name,
                environment_title=environment.title,
                gpu_product=environment.gpu_product,
                gpu_slug=environment.gpu_slug,
                stack=stack_text({"spec": _spec(environment)}),
                environment_digest=environment.digest,
                withdrawn=facts.withdrawn,
                upstream_withdrawn=facts.upstream_withdrawn,
                held_for_review=facts.held_for_review,
            )
        )
    return compared, missing


# --- Implementations (projects) --------------------------------------------------------


def list_implementations(
    session: Session, q: str | None, after: Position | None, limit: int
) -> tuple[list[ImplementationItem], Position | None]:
    stmt = select(func.min(Implementation.project).label("project")).group_by(Implementation.project_slug)
    if q:
        stmt = stmt.where(or_(_contains(Implementation.project, q), _contains(Implementation.project_slug, q)))
    rows, position = _keyset(session, stmt, SLUG_ORDER, {"slug": Implementation.project_slug}, after, limit)
    return _implementation_items(session, [(row[-1], row.project) for row in rows]), position


def _implementation_items(session: Session, projects: list[tuple[str, str]]) -> list[ImplementationItem]:
    slugs = [slug for slug, _ in projects]
    stats = {
        row.slug: row
        for row in session.execute(
            select(
                Implementation.project_slug.label("slug"),
                func.count(func.distinct(Implementation.id)).label("revisions"),
                func.count(Run.id).label("runs"),
                func.coalesce(func.sum(case((eligible(), 1), else_=0)), 0).label("eligible_runs"),
                func.count(func.distinct(Run.workload_id)).label("workloads"),
                func.max(Run.observed_at).label("last_observed_at"),
            )
            .outerjoin(Run, Run.implementation_id == Implementation.id)
            .where(Implementation.project_slug.in_(slugs))
            .group_by(Implementation.project_slug)
        )
    }
    return [
        ImplementationItem(
            slug=slug,
            project=project,
            revisions=stats[slug].revisions,
            runs=stats[slug].runs,
            eligible_runs=stats[slug].eligible_runs,
            workloads=stats[slug].workloads,
            last_observed_at=stats[slug].last_observed_at,
            url=f"/implementations/{slug}",
            api_url=f"/api/v1/implementations/{slug}",
        )
        for slug, project in projects
    ]


def implementation_detail(session: Session, ref: str) -> ImplementationDetail | None:
    """By project slug, or by the digest of any of its revisions' manifests."""
    slug: str | None = ref.lower()
    if ref.startswith("sha256:"):
        name = _name_by_ref(session, Implementation, "Implementation", ref)
        slug = session.scalar(select(Implementation.project_slug).where(Implementation.name == name))
    project = session.scalar(select(func.min(Implementation.project)).where(Implementation.project_slug == slug))
    if slug is None or project is None:
        return None
    item = _implementation_items(session, [(slug, project)])[0]
    rank = _rank_expression().label("rank")
    rows = session.execute(
        _with_references(select(Run, rank))
        .join(Implementation, Run.implementation_id == Implementation.id)
        .where(Implementation.project_slug == slug)
        .order_by(Run.latency_ns, Run.name)
    ).all()
    by_workload: dict[str, list[RankedRunItem]] = defaultdict(list)
    titles: dict[str, str] = {}
    for run, rank_value in rows:
        fields = _run_fields(run)
        by_workload[run.workload.name].append(RankedRunItem(**fields, rank=rank_value if fields["eligible"] else None))
        titles[run.workload.name] = run.workload.title
    results = []
    for workload, runs in sorted(by_workload.items()):
        ranked = [run for run in runs if run.rank is not None]
        best = min(ranked, key=lambda run: (run.rank, run.latency_ns, run.name)) if ranked else None
        results.append(
            ImplementationWorkload(
                workload=workload,
                title=titles[workload],
                best_rank=best.rank if best else None,
                best_run=best.name if best else None,
                runs=runs,
            )
        )
    return ImplementationDetail(
        **item.model_dump(), workload_results=results, runs_url=f"/api/v1/runs?implementation={slug}"
    )


# --- GPUs ------------------------------------------------------------------------------


def _gpus(session: Session, slug: str | None = None) -> dict[str, GpuItem]:
    """GPUs measured on (from environments) and those tracked but not measured yet; one, given ``slug``."""
    environments = session.scalars(
        select(Environment).where(Environment.gpu_slug == slug) if slug else select(Environment)
    ).all()
    run_stats = {
        row.slug: row
        for row in session.execute(
            select(
                Environment.gpu_slug.label("slug"),
                func.count(Run.id).label("runs"),
                func.count(func.distinct(Run.workload_id)).label("workloads"),
            )
            .join(Run, Run.environment_id == Environment.id)
            .where(*([Environment.gpu_slug == slug] if slug else []))
            .group_by(Environment.gpu_slug)
        )
    }
    by_slug: dict[str, list[Environment]] = defaultdict(list)
    for environment in environments:
        by_slug[environment.gpu_slug].append(environment)
    gpus = {}
    for gpu_slug, members in by_slug.items():
        first = min(members, key=lambda e: e.name)
        stats = run_stats.get(gpu_slug)
        gpus[gpu_slug] = GpuItem(
            slug=gpu_slug,
            product=first.gpu_product,
            vendor=str(_spec(first).get("hardware", {}).get("vendor", "unknown")),
            architecture=first.architecture,
            environments=len(members),
            runs=stats.runs if stats else 0,
            workloads=stats.workloads if stats else 0,
            url=f"/gpus/{gpu_slug}",
            api_url=f"/api/v1/gpus/{gpu_slug}",
        )
    # GPUs the registry tracks are listed before anyone measures on them, as the pages do.
    for tracked in TRACKED_GPUS:
        if tracked.slug not in gpus and slug in (None, tracked.slug):
            gpus[tracked.slug] = GpuItem(
                slug=tracked.slug,
                product=tracked.product,
                vendor=tracked.vendor,
                architecture=tracked.architecture,
                environments=0,
                runs=0,
                workloads=0,
                url=f"/gpus/{tracked.slug}",
                api_url=f"/api/v1/gpus/{tracked.slug}",
            )
    return gpus


def list_gpus(session: Session, after: Position | None, limit: int) -> tuple[list[GpuItem], Position | None]:
    return _page_of(list(_gpus(session).items()), after, limit)


def gpu_detail(session: Session, ref: str) -> GpuDetail | None:
    """By GPU slug, or by the digest of the manifest of an environment on it."""
    slug: str | None = ref.lower()
    if ref.startswith("sha256:"):
        name = _name_by_ref(session, Environment, "ExecutionEnvironment", ref)
        slug = session.scalar(select(Environment.gpu_slug).where(Environment.name == name))
    item = _gpus(session, slug).get(slug) if slug else None
    if item is None:
        return None
    environments = session.scalars(
        select(Environment).where(Environment.gpu_slug == item.slug).order_by(Environment.name)
    ).all()
    env_runs = dict(
        session.execute(
            select(Run.environment_id, func.count())
            .where(Run.environment_id.in_([e.id for e in environments]))
            .group_by(Run.environment_id)
        ).all()
    )
    counts = dict(
        session.execute(
            select(Run.workload_id, func.count())
            .where(Run.environment_id.in_([e.id for e in environments]))
            .group_by(Run.workload_id)
        ).all()
    )
    best = {
        workload_id: run for (workload_id, _), run in _best_per_gpu(session, Environment.gpu_slug == item.slug).items()
    }
    measured, not_measured = [], []
    for workload in session.execute(select(Workload.id, Workload.name, Workload.title).order_by(Workload.name)):
        if workload.id not in counts:
            not_measured.append(workload.name)
            continue
        top = best.get(workload.id)
        measured.append(
            GpuWorkload(
                workload=workload.name,
                title=workload.title,
                runs=counts[workload.id],
                best=_group_best(top) if top else None,
                best_environment=top.environment.name if top else None,
            )
        )
    return GpuDetail(
        **item.model_dump(),
        environment_list=[
            EnvironmentItem(
                name=e.name,
                title=e.title,
                stack=stack_text(json.loads(e.manifest_json)),
                digest=e.digest,
                runs=env_runs.get(e.id, 0),
            )
            for e in environments
        ],
        measured=measured,
        not_measured=not_measured,
    )


# --- Origin models ---------------------------------------------------------------------


def model_names(session: Session) -> list[str]:
    return list(session.scalars(select(Workload.origin_model).where(Workload.origin_model.is_not(None)).distinct()))


def _models(session: Session) -> dict[str, tuple[str, int]]:
    """slug → (a display name, number of workloads); names that slug alike are one model."""
    by_slug: dict[str, tuple[str, int]] = {}
    rows = session.execute(
        select(Workload.origin_model, func.count())
        .where(Workload.origin_model.is_not(None))
        .group_by(Workload.origin_model)
        .order_by(Workload.origin_model)
    )
    for name, count in rows:
        slug = slugify(str(name))
        first, total = by_slug.get(slug, (str(name), 0))
        by_slug[slug] = (first, total + count)
    return by_slug


def _model_item(slug: str, name: str, count: int) -> ModelItem:
    return ModelItem(slug=slug, name=name, workloads=count, url=f"/models/{slug}", api_url=f"/api/v1/models/{slug}")


def list_models(session: Session, after: Position | None, limit: int) -> tuple[list[ModelItem], Position | None]:
    models = _models(session)
    return _page_of([(slug, _model_item(slug, *value)) for slug, value in models.items()], after, limit)


def model_detail(session: Session, slug: str) -> ModelDetail | None:
    slug = slugify(slug, fallback="")
    models = _models(session)
    if slug not in models:
        return None
    names = [name for name in model_names(session) if slugify(name) == slug]
    workloads = session.scalars(select(Workload).where(Workload.origin_model.in_(names)).order_by(Workload.name)).all()
    best = _best_per_gpu(session, Run.workload_id.in_([w.id for w in workloads]))
    entries = []
    for workload in workloads:
        tops = sorted(
            (run for (workload_id, _), run in best.items() if workload_id == workload.id),
            key=lambda run: run.environment.gpu_slug,
        )
        entries.append(
            ModelWorkload(
                slug=workload.name,
                title=workload.title,
                collection=workload.collection,
                best_by_gpu=[
                    BestOnGpu(
                        gpu=run.environment.gpu_slug,
                        gpu_product=run.environment.gpu_product,
                        environment=run.environment.name,
                        run=run.name,
                        latency_ns=run.latency_ns,
                        primary_statistic=run.primary_statistic,
                        sol_score=run.sol_score,
                        implementation=run.implementation.project_slug,
                        project=run.implementation.project,
                        evidence=run.evidence,
                    )
                    for run in tops
                ],
            )
        )
    return ModelDetail(**_model_item(slug, *models[slug]).model_dump(), workload_list=entries)


# --- Sources ---------------------------------------------------------------------------


def _source_items(session: Session, sources: Sequence[Source]) -> list[SourceItem]:
    ids = [s.id for s in sources]
    workloads = dict(
        session.execute(
            select(Workload.source_id, func.count()).where(Workload.source_id.in_(ids)).group_by(Workload.source_id)
        ).all()
    )
    runs = dict(
        session.execute(select(Run.source_id, func.count()).where(Run.source_id.in_(ids)).group_by(Run.source_id)).all()
    )
    return [
        SourceItem(
            slug=s.slug,
            name=s.name,
            website=s.url,
            last_observed_at=s.last_observed_at,
            workloads=workloads.get(s.id, 0),
            runs=runs.get(s.id, 0),
            url=f"/sources/{s.slug}",
            api_url=f"/api/v1/sources/{s.slug}",
        )
        for s in sources
    ]


def list_sources(session: Session, after: Position | None, limit: int) -> tuple[list[SourceItem], Position | None]:
    rows, position = _keyset(session, select(Source), SLUG_ORDER, {"slug": Source.slug}, after, limit)
    return _source_items(session, [row[0] for row in rows]), position


def source_detail(session: Session, slug: str) -> SourceDetail | None:
    source = session.scalar(select(Source).where(Source.slug == slug))
    if source is None:
        return None
    report_count = session.scalar(select(func.count()).where(IngestionReport.source_id == source.id)) or 0
    reports = session.scalars(
        select(IngestionReport)
        .where(IngestionReport.source_id == source.id)
        .order_by(IngestionReport.started_at.desc(), IngestionReport.id.desc())
        .limit(REPORTS_SHOWN)
    )
    return SourceDetail(
        **_source_items(session, [source])[0].model_dump(),
        description=source.description,
        licence=source.licence,
        report_count=report_count,
        reports=[
            IngestionReportItem(
                id=r.id,
                origin=r.origin,
                status=r.status,
                started_at=r.started_at,
                finished_at=r.finished_at,
                counts=r.counts,
                errors=r.errors,
                drift=r.drift,
            )
            for r in reports
        ],
    )
