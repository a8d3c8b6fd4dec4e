"""The workload leaderboard's context (PRODUCT.md §6), built from the store and ranking."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from kernelindex.db.tables import Source, Workload
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.ranking import RankedRun, ineligibility_reasons, rank_group, record_history
from kernelindex.slugs import slugify
from kernelindex.store.reruns import RERUN_PROTOCOL_NAME, RerunBounds
from kernelindex.store.runs import RunView
from kernelindex.web import params
from kernelindex.web.chart import HistoryChart, history_chart
from kernelindex.web.errors import BadRequest
from kernelindex.web.format import latency, percent_of_sol, ratio
from kernelindex.web.pages import PageContext

PAGE_SIZE = 50
SORTS = {
    "rank": "Rank (fastest first)",
    "observed": "Newest first",
    "sol": "Highest % of SOL",
    "implementation": "Implementation A–Z",
}


class Part(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class RunRow(Part):
    rank: int | None
    name: str
    url: str
    implementation: str
    implementation_url: str
    latency_ns: int
    latency: str
    statistic: str
    sol_score: float | None
    percent_of_sol: str
    vs_best: float | None
    vs_best_text: str
    evidence: str
    availability: str
    observed_at: datetime
    gpu: str
    stack: str | None
    reasons: list[str]


class GroupTab(Part):
    key: str
    label: str
    gpu: str
    stack: str | None
    protocol: str
    protocol_url: str
    controlled_rerun: bool
    run_count: int
    eligible_count: int
    best_latency_ns: int | None
    best_latency: str
    best_implementation: str | None
    url: str
    selected: bool


class ImplementationRow(Part):
    project: str
    url: str
    runtime: str
    run_count: int
    best_run: str
    best_run_url: str
    best_latency_ns: int
    best_latency: str
    vs_best_text: str
    evidence: str
    availability: str


class RecordRow(Part):
    observed_at: datetime
    run: str
    url: str
    implementation: str
    latency_ns: int
    latency: str
    improvement: float | None
    improvement_text: str


class TensorRow(Part):
    name: str
    role: str
    dtype: str
    shape: str
    description: str | None


class AxisRow(Part):
    name: str
    kind: str
    value: str
    description: str | None


class CaseRow(Part):
    index: int
    values: list[str]
    dtype: str
    baseline_latency: str
    sol_latency: str
    baseline_latency_ms: float | None
    sol_latency_ms: float | None
    # The roofline bound on the GPU of KernelIndex's reruns, beside the source's T_SOL.
    rerun_bound: str | None = None
    rerun_bound_ns: int | None = None


class SourceRow(Part):
    slug: str
    name: str
    url: str
    last_observed_at: datetime | None


class WorkloadHeader(Part):
    slug: str
    title: str
    name: str
    description: str
    collection: str
    tags: list[str]
    origin_model: str | None
    origin_model_url: str | None
    case_count: int
    run_count: int
    eligible_count: int
    digest: str
    missing_since: datetime | None


class SortLink(Part):
    key: str
    label: str
    url: str
    current: bool


class LeaderboardPage(PageContext):
    template: ClassVar[str] = "leaderboard.html"

    workload: WorkloadHeader
    fastest: RunRow | None
    fastest_group: str | None
    groups: list[GroupTab]
    not_measured_on: list[str]
    selected_group: GroupTab | None
    sort: str
    sort_links: list[SortLink]
    implementation_filter: str
    ranked: list[RunRow]
    ranked_total: int
    page: int
    page_count: int
    previous_url: str | None
    next_url: str | None
    ineligible: list[RunRow]
    implementations: list[ImplementationRow]
    history: list[RecordRow]
    chart: HistoryChart | None
    tensors: list[TensorRow]
    axes: list[AxisRow]
    constraints: list[str]
    determinism: str
    variable_axes: list[str]
    input_dtype: str
    cases: list[CaseRow]
    rerun_bound_gpu: str | None = None
    sources: list[SourceRow]


def _ms_text(value: float | None) -> str:
    return "–" if value is None else latency(round(value * 1_000_000))


def _row(view: RunView, ranked: RankedRun | None) -> RunRow:
    return RunRow(
        rank=ranked.rank if ranked else None,
        name=view.name,
        url=f"/runs/{view.name}",
        implementation=view.project,
        implementation_url=f"/implementations/{view.project_slug}",
        latency_ns=view.latency_ns,
        latency=latency(view.latency_ns),
        statistic=view.primary_statistic,
        sol_score=view.sol_score,
        # A controlled rerun has no source SOL score: the share of its GPU's roofline bound stands in.
        percent_of_sol=(
            f"{view.metrics['percent_of_bound']:.0f}%"
            if view.sol_score is None and "percent_of_bound" in view.metrics
            else percent_of_sol(view.sol_score)
        ),
        vs_best=ranked.vs_best if ranked else None,
        vs_best_text=ratio(ranked.vs_best) if ranked else "–",
        evidence=view.evidence,
        availability=view.availability,
        observed_at=view.observed_at,
        gpu=view.gpu_product,
        stack=view.stack,
        reasons=ineligibility_reasons(view.facts),
    )


def _group_label(view: RunView) -> str:
    return f"{view.gpu_product} · stack {view.stack}" if view.stack else view.gpu_product


def _bound(bounds: RerunBounds | None, position: int) -> int | None:
    return bounds.by_position.get(position) if bounds else None


def build_leaderboard(
    workload: Workload,
    views: Sequence[RunView],
    sources: Sequence[Source],
    group: str | None,
    sort: str | None,
    implementation_filter: str | None,
    page_value: str | None,
    rerun_bounds: RerunBounds | None = None,
) -> LeaderboardPage:
    """The context of ``/workloads/{slug}``; raises ``BadRequest`` for unusable parameters."""
    sort = params.choice("sort", sort, SORTS, "rank")
    implementation_filter = params.text("implementation", implementation_filter) or ""
    page = params.page_number(page_value)
    base = f"/workloads/{workload.name}"

    by_group: dict[str, list[RunView]] = {}
    for view in views:
        by_group.setdefault(view.comparison_key, []).append(view)
    ranks = {key: rank_group(view.facts for view in members) for key, members in by_group.items()}
    rank_of = {ranked.run.name: ranked for group_ranks in ranks.values() for ranked in group_ranks}

    def default_key() -> str | None:
        if not by_group:
            return None
        return max(by_group, key=lambda key: (len(ranks[key]), max(v.observed_at for v in by_group[key]), key))

    if group:
        matches = [key for key in by_group if key == group or key.removeprefix("sha256:").startswith(group)]
        if len(group) < 12 or len(matches) != 1:
            raise BadRequest(
                f"group {group!r} is not a comparison group of this workload; "
                "give a comparison key (sha256:… or its first 12 hex characters) listed on the page."
            )
        selected_key: str | None = matches[0]
    else:
        selected_key = default_key()

    tabs = []
    for key, members in sorted(by_group.items(), key=lambda item: (_group_label(item[1][0]), item[0])):
        best = ranks[key][0] if ranks[key] else None
        best_view = next(v for v in members if best and v.name == best.run.name) if best else None
        tabs.append(
            GroupTab(
                key=key,
                label=_group_label(members[0]),
                gpu=members[0].gpu_product,
                stack=members[0].stack,
                protocol=members[0].protocol_title,
                protocol_url=f"/protocols/{members[0].protocol_name}",
                controlled_rerun=members[0].protocol_name == RERUN_PROTOCOL_NAME,
                run_count=len(members),
                eligible_count=len(ranks[key]),
                best_latency_ns=best.run.latency_ns if best else None,
                best_latency=latency(best.run.latency_ns) if best else "–",
                best_implementation=best_view.project if best_view else None,
                url=params.with_query(base, group=key.removeprefix("sha256:")[:16]),
                selected=key == selected_key,
            )
        )
    selected_tab = next((tab for tab in tabs if tab.selected), None)

    eligible_views = [v for v in views if v.name in rank_of]
    fastest_view = min(eligible_views, key=lambda v: (v.latency_ns, v.name)) if eligible_views else None

    members = by_group.get(selected_key, []) if selected_key else []
    ranked_rows = [_row(v, rank_of[v.name]) for v in members if v.name in rank_of]
    if implementation_filter:
        needle = implementation_filter.casefold()
        ranked_rows = [row for row in ranked_rows if needle in row.implementation.casefold()]
    order = {
        "rank": lambda row: (row.rank, row.name),
        "observed": lambda row: (-row.observed_at.timestamp(), row.name),
        "sol": lambda row: (-(row.sol_score or 0), row.name),
        "implementation": lambda row: (row.implementation.casefold(), row.rank, row.name),
    }
    ranked_rows.sort(key=order[sort])
    page_count = max(1, -(-len(ranked_rows) // PAGE_SIZE))
    if page > page_count:
        raise BadRequest(f"page {page} is past the last page ({page_count}).")
    group_param = selected_key.removeprefix("sha256:")[:16] if selected_key and group else None

    def page_url(number: int) -> str:
        return params.with_query(
            base,
            group=group_param,
            sort=None if sort == "rank" else sort,
            implementation=implementation_filter or None,
            page=number,
        )

    ineligible_rows = [_row(v, None) for v in members if v.name not in rank_of]

    projects: dict[str, tuple[RunView, int]] = {}
    for view in members:
        if view.name not in rank_of:
            continue
        best_so_far, count = projects.get(view.project_slug, (view, 0))
        if view.latency_ns < best_so_far.latency_ns:
            best_so_far = view
        projects[view.project_slug] = (best_so_far, count + 1)
    best_ns = ranks[selected_key][0].run.latency_ns if selected_key and ranks[selected_key] else None
    implementations = [
        ImplementationRow(
            project=view.project,
            url=f"/implementations/{view.project_slug}",
            runtime=view.runtime or "unknown",
            run_count=count,
            best_run=view.name,
            best_run_url=f"/runs/{view.name}",
            best_latency_ns=view.latency_ns,
            best_latency=latency(view.latency_ns),
            vs_best_text=ratio(view.latency_ns / best_ns) if best_ns else "–",
            evidence=view.evidence,
            availability=view.availability,
        )
        for view, count in sorted(projects.values(), key=lambda item: (item[0].latency_ns, item[0].name))
    ]

    history = [
        RecordRow(
            observed_at=brk.run.observed_at,
            run=brk.run.name,
            url=f"/runs/{brk.run.name}",
            implementation=next(v.project for v in members if v.name == brk.run.name),
            latency_ns=brk.run.latency_ns,
            latency=latency(brk.run.latency_ns),
            improvement=brk.improvement,
            improvement_text="first record" if brk.improvement is None else f"{brk.improvement:.2f}× faster",
        )
        for brk in (record_history(v.facts for v in members) if members else [])
    ]
    chart = history_chart(
        [(row.observed_at, row.latency_ns, row.implementation) for row in history],
        until=max((v.observed_at for v in members), default=None),
    )

    manifest = json.loads(workload.manifest_json)["spec"]
    definition = manifest["definition"]
    measured = {v.gpu_product for v in views}
    known = [gpu.product for gpu in TRACKED_GPUS] + sorted({v.gpu_product for v in views})
    not_measured = [product for product in dict.fromkeys(known) if product not in measured]
    variable_axes = [name for name, axis in definition["axes"].items() if axis["type"] == "var"]
    dtypes = sorted({tensor["dtype"] for tensor in definition["inputs"].values()})

    return LeaderboardPage(
        workload=WorkloadHeader(
            slug=workload.name,
            title=workload.title,
            name=definition["name"],
            description=workload.description,
            collection=workload.collection,
            tags=list(workload.tags),
            origin_model=workload.origin_model,
            origin_model_url=f"/models/{slugify(workload.origin_model)}" if workload.origin_model else None,
            case_count=workload.case_count,
            run_count=len(views),
            eligible_count=len(rank_of),
            digest=workload.digest,
            missing_since=workload.missing_since,
        ),
        fastest=_row(fastest_view, rank_of[fastest_view.name]) if fastest_view else None,
        fastest_group=_group_label(fastest_view) if fastest_view else None,
        groups=tabs,
        not_measured_on=not_measured,
        selected_group=selected_tab,
        sort=sort,
        sort_links=[
            SortLink(
                key=key,
                label=label,
                url=params.with_query(
                    base,
                    group=group_param,
                    sort=None if key == "rank" else key,
                    implementation=implementation_filter or None,
                ),
                current=key == sort,
            )
            for key, label in SORTS.items()
        ],
        implementation_filter=implementation_filter,
        ranked=ranked_rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE],
        ranked_total=len(ranked_rows),
        page=page,
        page_count=page_count,
        previous_url=page_url(page - 1) if page > 1 else None,
        next_url=page_url(page + 1) if page < page_count else None,
        ineligible=ineligible_rows,
        implementations=implementations,
        history=list(reversed(history)),
        chart=chart,
        tensors=[
            TensorRow(
                name=name,
                role=role,
                dtype=tensor["dtype"],
                shape="[" + ", ".join(str(dim) for dim in tensor.get("shape") or []) + "]"
                if tensor.get("shape") is not None
                else "scalar",
                description=tensor.get("description"),
            )
            for role, tensors in (("input", definition["inputs"]), ("output", definition["outputs"]))
            for name, tensor in tensors.items()
        ],
        axes=[
            AxisRow(
                name=name,
                kind={"var": "variable", "const": "constant", "expr": "expression"}[axis["type"]],
                value=str(axis["value"]) if "value" in axis else axis.get("expression", ""),
                description=axis.get("description"),
            )
            for name, axis in definition["axes"].items()
        ],
        constraints=definition.get("constraints")
        or ["No mutation or aliasing of inputs (not published by the source)"],
        determinism=definition.get("determinism") or "unspecified",
        variable_axes=variable_axes,
        input_dtype=", ".join(dtypes),
        cases=[
            CaseRow(
                index=index + 1,
                values=[str(case["axes"].get(name, "–")) for name in variable_axes],
                dtype=", ".join(dtypes),
                baseline_latency=_ms_text(case.get("baselineLatencyMs")),
                sol_latency=_ms_text(case.get("solLatencyMs")),
                baseline_latency_ms=case.get("baselineLatencyMs"),
                sol_latency_ms=case.get("solLatencyMs"),
                rerun_bound=latency(bound) if (bound := _bound(rerun_bounds, index)) else None,
                rerun_bound_ns=bound,
            )
            for index, case in enumerate(manifest["cases"])
        ],
        rerun_bound_gpu=rerun_bounds.gpu if rerun_bounds else None,
        sources=[
            SourceRow(slug=s.slug, name=s.name, url=s.url, last_observed_at=workload.last_seen_at or s.last_observed_at)
            for s in sources
        ],
    )
