"""A workload's figures across the GPUs it was measured on: the best eligible run per GPU and
per implementation on each GPU, side by side.

Every GPU, and every setup or stack on it, is a comparison group of its own (PRODUCT.md §5),
so nothing here is ranked: the GPUs come in the registry's GPU order, never by speed.
``/workloads/{slug}``, its JSON twin and ``/api/v1/workloads/{ref}`` all read ``cross_gpu_view``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Environment, Implementation, Run, Workload
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.store.manifests import environment_manifest
from kernelindex.store.reads import eligible
from kernelindex.store.runs import environment_label, implementation_identity
from kernelindex.store.schemas import CrossGpuFigure, CrossGpuView, GpuFigure, ImplementationOnGpus

CROSS_GPU_NOTE = (
    "Each GPU, and each setup or software stack on it, is a comparison group of its own: these figures "
    "sit side by side to be read, and are never ranked against each other. A GPU's figure is its fastest "
    "eligible run over its setups; a cell is one implementation's fastest eligible run on that GPU."
)
# Implementations a page of the matrix lists: a workload may have hundreds, and a page shows a
# screenful (the API's ``matrix_page=None`` gives every one).
MATRIX_ROWS = 50
Record = TypeVar("Record", Environment, Implementation)
_GPU_ORDER = {gpu.slug: position for position, gpu in enumerate(TRACKED_GPUS)}


@dataclass(frozen=True)
class _EligibleRun:
    name: str
    latency_ns: int
    primary_statistic: str
    comparison_key: str
    observed_at: datetime
    environment_id: int
    implementation_id: int
    eligible_runs: int  # of its implementation revision in its environment, of which it is the fastest


def _fastest_per_revision(session: Session, workload: Workload) -> list[_EligibleRun]:
    """Each implementation revision's fastest eligible run in each environment, fastest first
    (equal latencies by name), with how many eligible runs it has there."""
    partition = (Run.environment_id, Run.implementation_id)
    ordered = (
        select(
            Run.name,
            Run.latency_ns,
            Run.primary_statistic,
            Run.comparison_key,
            Run.observed_at,
            Run.environment_id,
            Run.implementation_id,
            func.count().over(partition_by=partition).label("eligible_runs"),
            func.row_number().over(partition_by=partition, order_by=(Run.latency_ns, Run.name)).label("nth"),
        )
        .where(Run.workload_id == workload.id, eligible())
        .subquery()
    )
    columns = [column for column in ordered.c if column.name != "nth"]
    rows = session.execute(select(*columns).where(ordered.c.nth == 1).order_by(ordered.c.latency_ns, ordered.c.name))
    return [_EligibleRun(*row) for row in rows]


def matrix_page_count(view: CrossGpuView) -> int:
    return max(1, -(-view.implementation_count // MATRIX_ROWS))


def cross_gpu_view(session: Session, workload: Workload, matrix_page: int | None = None) -> CrossGpuView | None:
    """The workload's best eligible figures per GPU and per implementation × GPU; ``None`` unless
    eligible runs of it were measured on two or more GPUs. The implementations are every one, or
    page ``matrix_page`` of ``MATRIX_ROWS`` of them (empty past the last)."""
    runs = _fastest_per_revision(session, workload)
    environments = _by_id(session, Environment, {run.environment_id for run in runs})
    if len({environment.gpu_slug for environment in environments.values()}) < 2:
        return None
    implementations = _by_id(session, Implementation, {run.implementation_id for run in runs})

    best_of_gpu: dict[str, _EligibleRun] = {}
    setups_of_gpu: dict[str, set[int]] = {}
    runs_of_gpu: dict[str, int] = {}
    cells: dict[str, dict[str, _EligibleRun]] = {}
    for run in runs:  # fastest first, so the first run seen for a key is its best
        environment, implementation = environments[run.environment_id], implementations[run.implementation_id]
        gpu = environment.gpu_slug
        best_of_gpu.setdefault(gpu, run)
        setups_of_gpu.setdefault(gpu, set()).add(environment.id)
        runs_of_gpu[gpu] = runs_of_gpu.get(gpu, 0) + run.eligible_runs
        # One line per implementation across its revisions: its fastest revision on each GPU.
        cells.setdefault(implementation_identity(implementation), {}).setdefault(gpu, run)

    def figure(run: _EligibleRun) -> CrossGpuFigure:
        return _figure(run, environments[run.environment_id], implementations[run.implementation_id])

    products = {environment.gpu_slug: environment.gpu_product for environment in environments.values()}
    gpus = sorted(best_of_gpu, key=lambda slug: (_GPU_ORDER.get(slug, len(_GPU_ORDER)), products[slug], slug))
    lines = sorted(cells, key=lambda key: (key.casefold(), key))
    first = 0 if matrix_page is None else (matrix_page - 1) * MATRIX_ROWS
    shown = lines if matrix_page is None else lines[first : first + MATRIX_ROWS]
    # Each line's fastest figure over every GPU: whose manifest name the line gives.
    titles = {key: figure(min(cells[key].values(), key=lambda r: (r.latency_ns, r.name))) for key in shown}
    return CrossGpuView(
        note=CROSS_GPU_NOTE,
        gpus=[
            GpuFigure(
                gpu=slug,
                gpu_product=products[slug],
                environments=len(setups_of_gpu[slug]),
                eligible_runs=runs_of_gpu[slug],
                best=figure(best_of_gpu[slug]),
            )
            for slug in gpus
        ],
        implementations=[
            ImplementationOnGpus(
                implementation=titles[key].implementation,
                implementation_title=titles[key].implementation_title,
                project=titles[key].project,
                best_by_gpu={slug: figure(cells[key][slug]) for slug in gpus if slug in cells[key]},
            )
            for key in shown
        ],
        implementation_count=len(lines),
        first_implementation=first + 1,
    )


def _by_id(session: Session, table: type[Record], ids: set[int]) -> dict[int, Record]:
    if not ids:
        return {}
    return {row.id: row for row in session.scalars(select(table).where(table.id.in_(ids)))}


def _figure(run: _EligibleRun, environment: Environment, implementation: Implementation) -> CrossGpuFigure:
    return CrossGpuFigure(
        run=run.name,
        latency_ns=run.latency_ns,
        primary_statistic=run.primary_statistic,
        implementation=implementation.name,
        implementation_title=implementation_identity(implementation),
        project=implementation.project,
        environment=environment.name,
        environment_title=environment.title,
        environment_label=environment_label(environment),
        provider=environment_manifest(environment).spec.provider,
        comparison_key=run.comparison_key,
        observed_at=run.observed_at,
        url=urls.run(run.name),
    )
