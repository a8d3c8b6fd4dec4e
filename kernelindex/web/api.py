"""The JSON API, ``/api/v1`` (PRODUCT.md §6), and its interactive reference at ``/api/docs``.

Every response is JSON with an ETag (a conditional GET answers 304); every error is RFC
9457 problem details. Lists page by keyset: ``nextCursor`` is an opaque token naming the
last item served, bound to the listing, sort and filters it came from, and checksummed so
an edited or truncated token is refused rather than misread (``kernelindex.web.cursors``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from kernelindex.manifests.digest import DIGEST_PATTERN, is_digest
from kernelindex.manifests.types import EvidenceLevelField
from kernelindex.store.case_ranking import UnknownCase
from kernelindex.store.gpu_filter import GpuFilterError
from kernelindex.store.gpu_search import search_on_gpu
from kernelindex.store.gpus import GpuWorkloadFilters, find_gpu, gpu_detail, list_gpu_workloads, list_gpus
from kernelindex.store.implementations import (
    WORKLOAD_GPU_ORDER,
    ImplementationWorkloadFilters,
    implementation_detail,
    list_implementation_workloads,
    list_implementations,
)
from kernelindex.store.keyset import SLUG_ORDER
from kernelindex.store.leaderboards import workload_detail
from kernelindex.store.models import list_models, model_detail
from kernelindex.store.run_queries import RUN_SORTS, RunFilters, find_run, list_runs, run_detail
from kernelindex.store.schemas import (
    GpuDetail,
    GpuPage,
    GpuWorkloadPage,
    ImplementationDetailPage,
    ImplementationPage,
    ModelDetail,
    ModelPage,
    RunDetail,
    RunPage,
    SearchResponse,
    SourceDetail,
    SourcePage,
    WorkloadDetail,
    WorkloadPage,
)
from kernelindex.store.search import search_response
from kernelindex.store.source_filter import UnknownSource
from kernelindex.store.sources import list_sources, source_detail
from kernelindex.store.workload_top import TOP_LIMIT, WorkloadTop, workload_top
from kernelindex.store.workloads import (
    WorkloadFilters,
    find_workload,
    list_workloads,
    workload_sort_keys,
)
from kernelindex.web.compare import CompareResult, RunsParam, compare_named
from kernelindex.web.cursors import MAX_CURSOR_LENGTH, Listing
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.pages import cached_response, dump_json

V1 = "/api/v1"


class Problem(BaseModel):
    """RFC 9457 problem details, as every error of this API is served."""

    type: str = Field(examples=["about:blank"])
    title: str = Field(examples=["Bad request"])
    status: int = Field(examples=[400])
    detail: str = Field(examples=["limit: Input should be less than or equal to 200"])


RESPONSES: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not modified: the If-None-Match header named the current ETag."},
    "4XX": {
        "description": "Problem details (RFC 9457): 400 for input that cannot be used, 404 for an unknown name.",
        "content": {"application/problem+json": {"schema": Problem.model_json_schema()}},
    },
}


def _query_parameters(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= _query_parameters(dependency)
    return names


def usable_parameters_only(request: Request) -> None:
    """Refuse unknown query parameters before any query runs.

    A misspelt filter would otherwise be ignored silently and answer a different question.
    (Control characters never get this far: ``RequestGuard`` refuses them for every route.)
    """
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    accepted = _query_parameters(route.dependant)
    unknown = sorted(set(request.query_params) - accepted)
    if unknown:
        expected = ", ".join(sorted(accepted)) or "none"
        raise BadRequest(
            f"Unknown query parameter {', '.join(repr(name) for name in unknown)}; this endpoint accepts: {expected}."
        )


router = APIRouter(dependencies=[Depends(usable_parameters_only)], responses=RESPONSES)

Limit = Annotated[int, Query(ge=1, le=200, description="items per page, 1–200")]
Cursor = Annotated[
    str | None,
    Query(max_length=MAX_CURSOR_LENGTH, description="the nextCursor of the previous page, exactly as served"),
]
Slug = Annotated[str | None, Query(min_length=1, max_length=200)]
SourceSlug = Annotated[
    str | None,
    Query(min_length=1, max_length=64, description="a source's slug, e.g. sol-execbench", examples=["sol-execbench"]),
]
WorkloadSort = Literal["name", "runs", "-runs", "best_sol", "last_record"]
RunSort = Literal["latency", "-latency", "observed", "-observed"]
Evidence = EvidenceLevelField


def send(request: Request, model: BaseModel) -> Response:
    return cached_response(request, dump_json(model.model_dump(mode="json", by_alias=True)), "application/json")


def _ref(ref: str, what: str) -> str:
    if ref.startswith("sha256:") and not is_digest(ref):
        raise BadRequest(
            f"{ref!r} is not a digest: a {what} digest is 'sha256:' followed by 64 lowercase hexadecimal characters."
        )
    return ref


# --- Workloads -------------------------------------------------------------------------


@router.get(
    f"{V1}/workloads",
    operation_id="listWorkloads",
    response_model=WorkloadPage,
    tags=["workloads"],
    summary="List workloads",
    description="Filter by source, collection, tag, origin model or text; sort by name (A–Z), runs (fewest first), "
    "-runs (most first), best_sol (highest SOL score first) or last_record (newest first). With gpu, every figure "
    "is of the runs on that GPU alone and workloads measured on it come first (measured=true: only those; "
    "measured=false: only those not measured on it); an unknown GPU is a 400 that suggests near slugs.",
)
def workloads(
    request: Request,
    session: SessionDep,
    source: SourceSlug = None,
    collection: Annotated[str | None, Query(max_length=64, examples=["L1"])] = None,
    tag: Annotated[str | None, Query(max_length=300, examples=["vision"])] = None,
    model: Annotated[str | None, Query(max_length=200, description="origin model, by name or slug")] = None,
    gpu: Annotated[
        str | None, Query(min_length=1, max_length=200, description="a GPU slug, e.g. h200: figures on it alone")
    ] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=200, description="text in slug, title or model")] = None,
    measured: Annotated[
        bool | None, Query(description="with gpu: true, only workloads measured on it; false, only those not")
    ] = None,
    sort: WorkloadSort = "name",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    try:
        filters = WorkloadFilters(
            source=source, collection=collection, tag=tag, model=model, gpu=gpu, q=q, measured=measured
        )
        listing = Listing("workloads", sort, asdict(filters), workload_sort_keys(sort, filters))
        items, position = list_workloads(session, filters, sort, listing.after(cursor), limit)
    except (UnknownSource, GpuFilterError) as exc:
        raise BadRequest(str(exc)) from None
    return send(request, WorkloadPage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/workloads/{{ref}}",
    operation_id="getWorkload",
    response_model=WorkloadDetail,
    tags=["workloads"],
    summary="One workload, by slug or digest",
)
def workload(request: Request, session: SessionDep, ref: str) -> Response:
    found = find_workload(session, _ref(ref, "workload"))
    if found is None:
        raise NotFound(f"No workload has the slug or digest {ref!r}.")
    return send(request, workload_detail(session, found))


@router.get(
    f"{V1}/workloads/{{ref}}/top",
    operation_id="getWorkloadTop",
    response_model=WorkloadTop,
    tags=["workloads"],
    summary="A workload's fastest runs on one GPU, at one case of its sweep",
    description="The comparison group its fastest run on gpu leads (without gpu, the group the leaderboard opens "
    "on), ranked at case (a 0-based index or axis values such as num_tokens=4096; without it, the case most runs "
    "measured) for a sweep, else by the suite figure. Figures are latencies in integer nanoseconds of the statistic "
    "named; entries is empty when the GPU has no eligible run of the workload.",
)
def workload_top_route(
    request: Request,
    session: SessionDep,
    ref: str,
    gpu: Annotated[str | None, Query(min_length=1, max_length=200, description="a GPU slug, e.g. h200")] = None,
    case: Annotated[
        str | None,
        Query(
            min_length=1, max_length=300, description="a case index (0-based) or its axis values, e.g. num_tokens=4096"
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=TOP_LIMIT, description="at most this many runs, 1–100")] = 10,
) -> Response:
    found = find_workload(session, _ref(ref, "workload"))
    if found is None:
        raise NotFound(f"No workload has the slug or digest {ref!r}.")
    try:
        top = workload_top(session, found, gpu, case, limit)
    except (GpuFilterError, UnknownCase) as exc:
        raise BadRequest(str(exc)) from None
    return send(request, top)


# --- Runs ------------------------------------------------------------------------------


@router.get(
    f"{V1}/runs",
    operation_id="listRuns",
    response_model=RunPage,
    tags=["runs"],
    summary="List runs",
    description="Sort by latency (fastest first), -latency, observed (oldest first) or -observed (newest first).",
)
def runs(
    request: Request,
    session: SessionDep,
    workload: Annotated[str | None, Query(min_length=1, max_length=200, description="workload slug")] = None,
    gpu: Annotated[str | None, Query(min_length=1, max_length=200, description="GPU slug, e.g. b200")] = None,
    implementation: Annotated[str | None, Query(min_length=1, max_length=200, description="project slug")] = None,
    evidence: Evidence | None = None,
    eligible: Annotated[bool | None, Query(description="true: rankable runs only; false: the others")] = None,
    comparison_key: Annotated[str | None, Query(pattern=DIGEST_PATTERN.pattern)] = None,
    sort: RunSort = "latency",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    filters = RunFilters(
        workload=workload,
        gpu=gpu,
        implementation=implementation,
        evidence=evidence,
        eligible=eligible,
        comparison_key=comparison_key,
    )
    listing = Listing("runs", sort, asdict(filters), RUN_SORTS[sort])
    items, position = list_runs(session, filters, sort, listing.after(cursor), limit)
    return send(request, RunPage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/runs/{{ref}}",
    operation_id="getRun",
    response_model=RunDetail,
    tags=["runs"],
    summary="One run, by name or digest",
    description="The run with its four referenced manifests (each as {digest, manifest}), its rank in its "
    "comparison group when eligible, evidence, availability and the reasons it is not eligible.",
)
def run(request: Request, session: SessionDep, ref: str) -> Response:
    found = find_run(session, _ref(ref, "run"))
    if found is None:
        raise NotFound(f"No run has the name or digest {ref!r}.")
    return send(request, run_detail(session, found))


# --- Implementations, GPUs, models, sources --------------------------------------------


@router.get(
    f"{V1}/implementations",
    operation_id="listImplementations",
    response_model=ImplementationPage,
    tags=["implementations"],
    summary="List implementations (projects), by slug",
)
def implementations(
    request: Request,
    session: SessionDep,
    q: Annotated[str | None, Query(min_length=1, max_length=200, description="text in the project's name")] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    listing = Listing("implementations", "slug", {"q": q}, SLUG_ORDER)
    items, position = list_implementations(session, q, listing.after(cursor), limit)
    return send(request, ImplementationPage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/implementations/{{slug}}",
    operation_id="getImplementation",
    response_model=ImplementationDetailPage,
    tags=["implementations"],
    summary="One implementation: its figures, and its best run on each workload and GPU, page by page",
    description="By project slug, or by the digest of the Implementation manifest of any of its revisions. "
    "workloadResults holds one row per workload and GPU it has runs on, by workload slug then GPU slug, with "
    "its fastest eligible run there and that run's rank; gpu: only that GPU's rows; source: only the runs that "
    "source published. Every run is listed by runsUrl.",
)
def implementation(
    request: Request,
    session: SessionDep,
    slug: str,
    gpu: Annotated[str | None, Query(min_length=1, max_length=200, description="a GPU slug, e.g. b200")] = None,
    source: SourceSlug = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    detail = implementation_detail(session, _ref(slug, "implementation"))
    if detail is None:
        raise NotFound(f"No implementation has the slug or digest {slug!r}.")
    filters = ImplementationWorkloadFilters(gpu=gpu, source=source)
    listing = Listing(
        "implementation-workloads", "slug", {"implementation": detail.slug, **asdict(filters)}, WORKLOAD_GPU_ORDER
    )
    try:
        items, position = list_implementation_workloads(session, detail.slug, filters, listing.after(cursor), limit)
    except (UnknownSource, GpuFilterError) as exc:
        raise BadRequest(str(exc)) from None
    page = ImplementationDetailPage(**detail.model_dump(), workload_results=items, next_cursor=listing.next(position))
    return send(request, page)


@router.get(
    f"{V1}/gpus",
    operation_id="listGpus",
    response_model=GpuPage,
    tags=["gpus"],
    summary="List GPUs, measured on or tracked, by slug",
    description="Each with its runs, workloads measured and gaps, in all and per source of the workloads.",
)
def gpus(request: Request, session: SessionDep, limit: Limit = 50, cursor: Cursor = None) -> Response:
    listing = Listing("gpus", "slug", {}, SLUG_ORDER)
    items, position = list_gpus(session, listing.after(cursor), limit)
    return send(request, GpuPage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/gpus/{{slug}}",
    operation_id="getGpu",
    response_model=GpuDetail,
    tags=["gpus"],
    summary="One GPU: its coverage in all and per source, and its environments",
    description="By GPU slug, or by the digest of the ExecutionEnvironment manifest of an environment on it. "
    "Its workloads, measured or not, are listed by workloadsUrl.",
)
def gpu(request: Request, session: SessionDep, slug: str) -> Response:
    detail = gpu_detail(session, _ref(slug, "environment"))
    if detail is None:
        raise NotFound(f"No GPU has the slug or environment digest {slug!r}.")
    return send(request, detail)


@router.get(
    f"{V1}/gpus/{{slug}}/workloads",
    operation_id="listGpuWorkloads",
    response_model=GpuWorkloadPage,
    tags=["gpus"],
    summary="One GPU's workloads, by slug: measured on it (with the best run there) or not",
    description="By GPU slug or environment digest. measured=true: only those with a run on it; measured=false: "
    "only those with none (its gaps); source, collection, tag, q: only the workloads that match, as in "
    "/api/v1/workloads.",
)
def gpu_workloads(
    request: Request,
    session: SessionDep,
    slug: str,
    source: SourceSlug = None,
    collection: Annotated[str | None, Query(max_length=64, examples=["L1"])] = None,
    tag: Annotated[str | None, Query(max_length=300, examples=["vision"])] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=200, description="text in slug, title or model")] = None,
    measured: Annotated[bool | None, Query(description="true: measured on it; false: not measured on it")] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    gpu_slug = find_gpu(session, _ref(slug, "environment"))
    if gpu_slug is None:
        raise NotFound(f"No GPU has the slug or environment digest {slug!r}.")
    filters = GpuWorkloadFilters(source=source, measured=measured, collection=collection, tag=tag, q=q)
    listing = Listing("gpu-workloads", "slug", {"gpu": gpu_slug, **asdict(filters)}, SLUG_ORDER)
    try:
        items, position = list_gpu_workloads(session, gpu_slug, filters, listing.after(cursor), limit)
    except UnknownSource as exc:
        raise BadRequest(str(exc)) from None
    return send(request, GpuWorkloadPage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/models",
    operation_id="listModels",
    response_model=ModelPage,
    tags=["models"],
    summary="List origin models, by slug",
)
def models(request: Request, session: SessionDep, limit: Limit = 50, cursor: Cursor = None) -> Response:
    listing = Listing("models", "slug", {}, SLUG_ORDER)
    items, position = list_models(session, listing.after(cursor), limit)
    return send(request, ModelPage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/models/{{slug}}",
    operation_id="getModel",
    response_model=ModelDetail,
    tags=["models"],
    summary="One origin model: its workloads and the best known run of each per GPU",
)
def model(request: Request, session: SessionDep, slug: str) -> Response:
    detail = model_detail(session, slug)
    if detail is None:
        raise NotFound(f"No origin model has the slug {slug!r}.")
    return send(request, detail)


@router.get(
    f"{V1}/sources",
    operation_id="listSources",
    response_model=SourcePage,
    tags=["sources"],
    summary="List sources, by slug",
    description="Each with its licence, attribution, figures (workloads, runs, GPUs, implementation projects) and "
    "its last ingest.",
)
def sources(request: Request, session: SessionDep, limit: Limit = 50, cursor: Cursor = None) -> Response:
    listing = Listing("sources", "slug", {}, SLUG_ORDER)
    items, position = list_sources(session, listing.after(cursor), limit)
    return send(request, SourcePage(items=items, next_cursor=listing.next(position)))


@router.get(
    f"{V1}/sources/{{slug}}",
    operation_id="getSource",
    response_model=SourceDetail,
    tags=["sources"],
    summary="One source, with its collections and its ingestion reports",
)
def source(request: Request, session: SessionDep, slug: str) -> Response:
    detail = source_detail(session, slug)
    if detail is None:
        raise NotFound(f"No source has the slug {slug!r}.")
    return send(request, detail)


# --- Search ----------------------------------------------------------------------------

SearchKind = Literal["workload", "implementation", "gpu", "model"]


@router.get(
    f"{V1}/search",
    operation_id="search",
    response_model=SearchResponse,
    tags=["search"],
    summary="Search workloads, implementations, GPUs and origin models",
)
def search(
    request: Request,
    session: SessionDep,
    q: Annotated[str, Query(min_length=1, max_length=200, description="any text; it is never read as syntax")],
    kind: Annotated[list[SearchKind] | None, Query(description="only these kinds (repeat for several)")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="at most this many hits, 1–100")] = 20,
    gpu: Annotated[
        str | None,
        Query(max_length=200, description="a GPU's slug: each workload hit carries its figures on that GPU (onGpu)"),
    ] = None,
    read_gpu: Annotated[
        bool,
        Query(
            description='without gpu, read a GPU named by words of q ("moe fp8 h200") as the gpu, '
            "searching the other words; false searches them all as words",
        ),
    ] = True,
) -> Response:
    try:
        found = search_on_gpu(
            session, q, limit=limit, kinds=set(kind) if kind else None, gpu=gpu or None, read_gpu=read_gpu
        )
    except GpuFilterError as exc:
        raise BadRequest(str(exc)) from None
    return send(request, search_response(found.results, found.on_gpu, gpu=found.gpu))


# --- Compare ---------------------------------------------------------------------------


@router.get(
    f"{V1}/compare",
    operation_id="compareRuns",
    response_model=CompareResult,
    tags=["compare"],
    summary="Compare 2–8 runs",
    description="Every field aligned with whether it differs; a winner only when all runs share one comparison "
    "group and all are eligible, otherwise the reasons there is none.",
)
def compare(request: Request, session: SessionDep, run: RunsParam = None) -> Response:
    return send(request, compare_named(session, run))


# --- Interactive reference -------------------------------------------------------------

DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>KernelIndex API reference</title>
  <link rel="stylesheet" href="{css}">
  <link rel="stylesheet" href="{own_css}">
  <link rel="icon" href="{icon}" type="image/svg+xml">
</head>
<body>
  <header class="kernelindex-bar"><a href="/">KernelIndex</a> <span>· JSON API reference</span></header>
  <!-- Swagger UI renders the page's <main> and <h1>; without script, this stands in for them. -->
  <noscript><main><h1>KernelIndex API reference</h1><p>The interactive reference needs JavaScript. The API is
  described by its OpenAPI document, <a href="{openapi}">{openapi}</a>.</p></main></noscript>
  <div id="swagger-ui" data-openapi-url="{openapi}"></div>
  <script src="{bundle}"></script>
  <script src="{init}"></script>
</body>
</html>
"""


@router.get("/api/docs", include_in_schema=False)
def docs(request: Request) -> Response:
    """Swagger UI, vendored under /static/swagger and started by a script file (the CSP allows no inline script)."""

    def static(path: str) -> str:
        return request.url_for("static", path=path).path

    page = DOCS_PAGE.format(
        css=static("/swagger/swagger-ui.css"),
        own_css=static("/swagger/kernelindex-docs.css"),
        icon=static("/favicon.svg"),
        openapi=request.app.openapi_url,
        bundle=static("/swagger/swagger-ui-bundle.js"),
        init=static("/swagger/kernelindex-docs.js"),
    )
    return cached_response(request, page.encode(), "text/html; charset=utf-8")
