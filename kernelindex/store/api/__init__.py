"""Reads for the JSON API (``/api/v1``): its public schemas and the queries that fill them.

- ``schemas``: the response models, exactly what is served (and what OpenAPI describes);
- ``keyset``: sort keys, positions and the strictly-after predicate that lists page by;
- ``common``: what the queries share (ranks in SQL, lookups by digest, manifest history);
- ``workloads``, ``runs``, ``implementations``, ``gpus``, ``models``, ``sources``: one
  family of endpoints each; ``search``: search results in the API's form.

The names below are the ones the web layer and the tests use.
"""

from kernelindex.store.api.gpus import gpu_detail, list_gpus
from kernelindex.store.api.implementations import implementation_detail, list_implementations
from kernelindex.store.api.keyset import (
    SLUG_ORDER,
    Position,
    PositionError,
    SortKey,
    position_from_json,
    position_to_json,
)
from kernelindex.store.api.models import list_models, model_detail
from kernelindex.store.api.runs import RUN_SORTS, RunFilters, find_run, list_runs, run_detail, runs_to_compare
from kernelindex.store.api.schemas import (
    GpuDetail,
    GpuPage,
    ImplementationDetail,
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
from kernelindex.store.api.search import search_response
from kernelindex.store.api.sources import list_sources, source_detail
from kernelindex.store.api.workloads import (
    WORKLOAD_SORTS,
    WorkloadFilters,
    find_workload,
    list_workloads,
    workload_detail,
)

__all__ = [
    "RUN_SORTS",
    "SLUG_ORDER",
    "WORKLOAD_SORTS",
    "GpuDetail",
    "GpuPage",
    "ImplementationDetail",
    "ImplementationPage",
    "ModelDetail",
    "ModelPage",
    "Position",
    "PositionError",
    "RunDetail",
    "RunFilters",
    "RunPage",
    "SearchResponse",
    "SortKey",
    "SourceDetail",
    "SourcePage",
    "WorkloadDetail",
    "WorkloadFilters",
    "WorkloadPage",
    "find_run",
    "find_workload",
    "gpu_detail",
    "implementation_detail",
    "list_gpus",
    "list_implementations",
    "list_models",
    "list_runs",
    "list_sources",
    "list_workloads",
    "model_detail",
    "position_from_json",
    "position_to_json",
    "run_detail",
    "runs_to_compare",
    "search_response",
    "source_detail",
    "workload_detail",
]
