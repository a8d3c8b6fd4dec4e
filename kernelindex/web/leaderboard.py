"""The workload leaderboard's context (PRODUCT.md §6), built from the store and ranking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field
from sqlalchemy.orm import Session

from kernelindex import figures, urls
from kernelindex.figures import LATENCY_FIGURES, Share
from kernelindex.gpus import TRACKED_GPUS
from kernelindex.manifests.kinds import Definition, WorkloadCase
from kernelindex.manifests.types import EvidenceLevel
from kernelindex.ranking import RankedRun, ineligibility_reasons
from kernelindex.slugs import slugify
from kernelindex.store.case_ranking import UnknownCase, case_ranking
from kernelindex.store.completeness import workload_completeness
from kernelindex.store.confirmation import confirmation_states
from kernelindex.store.cross_gpu import cross_gpu_view, matrix_page_count
from kernelindex.store.framework_filter import UnknownFramework
from kernelindex.store.leaderboards import (
    GroupDetail,
    GroupStanding,
    Leaderboard,
    RevisionLine,
    group_detail,
    load_views,
    ranked_rows,
)
from kernelindex.store.rerun_protocols import RERUN_PROTOCOL_NAMES, superseded_by
from kernelindex.store.reruns import RerunBounds
from kernelindex.store.revisions import problem_of, workload_revisions
from kernelindex.store.runs import RunView
from kernelindex.store.schemas import Completeness, CrossGpuFigure, CrossGpuView, WorkloadRevision
from kernelindex.store.sweeps import group_case_runs, group_sweep
from kernelindex.uncertainty import headline_text, rank_text
from kernelindex.web import params
from kernelindex.web.case_part import CaseRankingPart, case_ranking_part
from kernelindex.web.case_window import CasePager, CaseWindow, case_pager, case_window
from kernelindex.web.charts.bar import Bar, BarChart, bar_chart, latency_tick, ratio_tick
from kernelindex.web.charts.gpu import GpuChart, GpuFigures, gpu_chart
from kernelindex.web.charts.history import HistoryChart, RecordPoint, history_chart
from kernelindex.web.errors import BadRequest
from kernelindex.web.format import (
    improvement,
    latency,
    latency_column,
    latency_in,
    latency_unit,
    one_unit,
    ratio,
    source_figures,
)
from kernelindex.web.pages import PageContext, Part
from kernelindex.web.rank_part import UncertaintyPart, rank_fields
from kernelindex.web.sweep_part import SweepPart, cases_text, sweep_part

PAGE_SIZE = 50
# What the ranked table lists: each implementation's best run (the default), or every ranked run.
RUN_MODES = {"best": "Best run per implementation", "all": "All runs"}
SORTS = {
    "rank": "Rank (fastest first)",
    "observed": "Newest first",
    "sol": f"Highest {figures.SOL_SCORE.label}",
    "implementation": "Implementation A–Z",
}


class ShareOfBound(Part):
    """A share of a named bound (``kernelindex.figures``): ``percent`` of the bound ``bound`` reached."""

    percent: float  # T_bound ÷ T × 100
    bound: str  # the bound's key: "datasheet", "sol-execbench" or "measured-ceilings"
    label: str  # "% of SOL bound (datasheet)"
    words: str  # "of SOL bound (datasheet)", after the number in a sentence
    text: str  # "4.5 %"


def share_part(share: Share | None) -> ShareOfBound | None:
    """A share as pages and JSON twins give it; None where no bound is known."""
    if share is None:
        return None
    return ShareOfBound(
        percent=round(share.percent, 4), bound=share.bound.key, label=share.label, words=share.words, text=share.text
    )


class RunRow(Part):
    rank: int | None
    # The places the run could hold given the uncertainties (``kernelindex.uncertainty``): [lo, hi],
    # "=2" or "1–3" as written, whether it is slower than #1 beyond both intervals, and the interval.
    rank_range: list[int] | None
    rank_text: str | None
    distinct_from_best: bool | None
    uncertainty: UncertaintyPart | None
    name: str
    url: str
    implementation: str
    implementation_url: str
    # The implementation's own title where it says more than its project ("PyTorch eager").
    variant: str | None
    latency_ns: int
    latency: str
    statistic: str
    sol_score: float | None  # the source's own score (SOL-ExecBench's ``sol_score``), a number
    sol_score_text: str | None  # "0.874", in a column headed with the source's own name, "SOL score"
    sol_score_figure: str | None  # "SOL score 0.874": the score with its name, as a sentence gives it
    share_of_bound: ShareOfBound | None  # computed by the registry, only where the bound is known
    vs_best: float | None
    vs_best_text: str
    evidence: EvidenceLevel
    availability: str
    observed_at: datetime
    gpu: str
    stack: str | None
    cases_text: str | None  # "6 of 8 cases" for a run that measured part of the suite
    reasons: list[str]
    # In the best-per-implementation table: how many ranked runs the implementation has here.
    implementation_runs: int | None = None
    # A reported KernelBench figure's check by reruns (``store.confirmation``): confirmed, contradicted or
    # unchecked; None for every other run.
    confirmation: str | None = None


class GroupTab(Part):
    key: str
    label: str
    gpu: str
    stack: str | None
    protocol: str
    protocol_url: str
    controlled_rerun: bool
    # The title of the newer rerun protocol this workload was also measured under, for an older one.
    superseded_by: str | None
    run_count: int
    eligible_count: int
    best_latency_ns: int | None
    best_latency: str
    best_implementation: str | None
    # "#1" where the group's #1 is distinct from its #2 beyond the noise, else "#1, tied with N".
    best_headline: str | None
    tied_with_best: int
    url: str
    selected: bool


class ImplementationRow(Part):
    rank_range: list[int] | None
    rank_text: str | None
    distinct_from_best: bool | None
    uncertainty: UncertaintyPart | None
    project: str
    variant: str | None
    url: str
    runtime: str
    run_count: int
    best_run: str
    best_run_url: str
    best_latency_ns: int
    best_latency: str
    vs_best_text: str
    evidence: EvidenceLevel
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
    # On the GPU of KernelIndex's newest rerun, beside the source's T_SOL: the speed of light from
    # the GPU's datasheet peaks, and the achievable bound at the ceilings the runner measured.
    rerun_sol_bound: str | None = None
    rerun_sol_bound_ns: int | None = None
    rerun_achievable_bound: str | None = None
    rerun_achievable_bound_ns: int | None = None


class SourceRow(Part):
    slug: str
    name: str
    url: str
    page_url: str  # /sources/{slug}: its licence and terms
    attribution: str
    last_observed_at: datetime | None


class ReferencePart(Part):
    """The program that defines the workload, as its source published it."""

    path: str
    url: str | None
    sha256: str
    language: str
    code: str
    line_count: int
    source: SourceRow


class CrossGpuRow(Part):
    """A matrix row's cells in the order of the view's GPUs; ``None`` where it has no eligible run."""

    implementation: str
    title: str
    cells: list[CrossGpuFigure | None]
    texts: list[str]  # each cell's latency in its GPU column's unit; "–" where it has none


class MatrixPager(Part):
    """The links between pages of the implementations × GPUs matrix: "1–50 of 477"."""

    first: int
    last: int
    total: int
    previous_url: str | None
    next_url: str | None


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


class GpuLink(Part):
    """A GPU named in passing, linking its page."""

    product: str
    url: str


class LeaderboardPage(PageContext):
    template: ClassVar[str] = "leaderboard.html"

    workload: WorkloadHeader
    completeness: Completeness
    fastest: RunRow | None
    fastest_group: str | None
    # "#1" or "#1, tied with N" (within the headline's group), and whether #1 is distinct from #2.
    fastest_headline: str | None
    fastest_distinct: bool | None
    fastest_group_ranked: int  # the eligible runs of the headline's group
    groups: list[GroupTab]
    not_measured_on: list[GpuLink]  # the tracked GPUs no run of this workload was measured on
    selected_group: GroupTab | None
    sort: str
    sort_links: list[SortLink]
    runs: str  # a key of RUN_MODES
    run_mode_links: list[SortLink]
    implementation_filter: str
    ranked: list[RunRow]
    # The ranked table's figures beside latency, each a column only where a row of it has one.
    score_heading: str | None  # "SOL score": the source's own score, under its own name
    share_heading: str | None  # "% of SOL bound (datasheet)": the share of a known bound, naming it
    # The interval column, only where a row of it has one: where none has, a sentence says so instead.
    interval_column: bool = True
    ranked_total: int
    page: int
    page_count: int
    previous_url: str | None
    next_url: str | None
    ineligible: list[RunRow]
    implementations: list[ImplementationRow]
    implementation_count: int  # in the group: the table shows the fastest of them
    all_implementations_url: str | None  # the ranked table's next page, where the table stops short
    ranked_chart: BarChart | None
    speedup_chart: BarChart | None
    history: list[RecordRow]
    chart: HistoryChart | None
    tensors: list[TensorRow]
    axes: list[AxisRow]
    constraints: list[str]
    determinism: str
    variable_axes: list[str]
    input_dtype: str
    cases: list[CaseRow]  # those of ``case_pager``'s window, or all of them
    case_pager: CasePager | None  # the cases are many: the page shows one window of them
    rerun_bound_gpu: str | None = None
    sources: list[SourceRow]
    cross_gpu: CrossGpuView | None
    # How the page draws ``cross_gpu``: the JSON twin has the figures once, in ``cross_gpu``.
    cross_gpu_rows: list[CrossGpuRow] = Field(exclude=True)
    cross_gpu_fastest: list[str] = Field(exclude=True)  # each GPU's fastest latency, the column in one unit
    cross_gpu_chart: GpuChart | None = Field(exclude=True)
    matrix_pager: MatrixPager | None  # the matrix has more rows than a page
    case_ranking: CaseRankingPart | None  # the selected group at one case of its sweep
    sweep: SweepPart | None
    reference: ReferencePart | None
    revision_of: str | None
    revisions: list[WorkloadRevision]


def _ms_column(values_ms: Sequence[float | None]) -> list[str]:
    """A column of the source's per-case figures (ms), in one unit, never more precise than given."""
    return latency_column(
        [None if value is None else value * 1_000_000 for value in values_ms],
        [LATENCY_FIGURES if value is None else source_figures(value) for value in values_ms],
    ).texts


def _row(view: RunView, ranked: RankedRun | None, case_count: int, implementation_runs: int | None = None) -> RunRow:
    return RunRow(
        rank=ranked.rank if ranked else None,
        **rank_fields(ranked),
        name=view.name,
        url=urls.run(view.name),
        implementation=view.project,
        implementation_url=urls.implementation(view.project_slug),
        variant=_variant(view.project, view.implementation_title),
        latency_ns=view.latency_ns,
        latency=latency(view.latency_ns),
        statistic=view.primary_statistic,
        sol_score=view.sol_score,
        sol_score_text=None if view.sol_score is None else figures.source_score(view.sol_score),
        sol_score_figure=figures.sol_score(view.sol_score),
        share_of_bound=share_part(view.share_of_bound),
        vs_best=ranked.vs_best if ranked else None,
        vs_best_text=ratio(ranked.vs_best) if ranked else "–",
        evidence=view.evidence,
        availability=view.availability,
        observed_at=view.observed_at,
        gpu=view.gpu_product,
        stack=view.stack,
        cases_text=cases_text(view.cases_measured, case_count),
        reasons=ineligibility_reasons(view.facts),
        implementation_runs=implementation_runs,
    )


def _headline_entry(view: RunView, tied: int) -> RankedRun:
    """The headline run as its group ranks it: #1, its range reaching over the runs tied with it."""
    return RankedRun(
        view.facts,
        rank=1,
        vs_best=1.0,
        rank_range=(1, 1 + tied),
        distinct_from_best=False,
        rank_text=rank_text(1, 1 + tied),
    )


def _variant(project: str, title: str) -> str | None:
    """What an implementation's title says beyond its project: "Liger-Kernel · liger_triton" gives
    "liger_triton", "PyTorch eager" gives "eager"; ``None`` when it says nothing more."""
    for separator in (" · ", ", ", ": ", " "):
        if title.startswith(project + separator):
            return title.removeprefix(project + separator) or None
    return None if title == project else title


def _display_name(project: str, variant: str | None) -> str:
    """An implementation as charts name it: its project and what its title adds ("Liger-Kernel liger_triton")."""
    return f"{project} {variant}" if variant else project


def _group_labels(board: Leaderboard) -> dict[str, str]:
    """Each group's label; where two groups would read alike (two releases of a library on one
    GPU), the environment's software and then the protocol are added until they differ."""
    samples = {group.key: group.sample for group in board.groups}
    labels = {key: view.environment_label for key, view in samples.items()}
    details: tuple[Callable[[RunView], str], ...] = (lambda view: view.software, lambda view: view.protocol_title)
    for detail in details:
        alike = [key for key, label in labels.items() if list(labels.values()).count(label) > 1]
        for key in alike:
            labels[key] = f"{labels[key]} · {detail(samples[key])}"
    return labels


def _bound(by_position: dict[int, int] | None, position: int) -> int | None:
    bound = by_position.get(position) if by_position else None
    return bound if bound else None


def _selected_key(board: Leaderboard, group: str | None) -> str | None:
    """The group named by the ``group`` parameter (a comparison key or its first 12+ hex characters)."""
    if not group:
        return board.default_key
    matches = [g.key for g in board.groups if g.key == group or g.key.removeprefix("sha256:").startswith(group)]
    if len(group) < 12 or len(matches) != 1:
        raise BadRequest(
            f"group {group!r} is not a comparison group of this workload; "
            "give a comparison key (sha256:… or its first 12 hex characters) listed on the page."
        )
    return matches[0]


def _tab(standing: GroupStanding, label: str, selected_key: str | None, protocols: dict[str, str]) -> GroupTab:
    """``protocols``: the titles of the protocols of every group on the page, by protocol name."""
    sample, record = standing.sample, standing.record
    successor = superseded_by(sample.protocol_name, protocols)
    return GroupTab(
        key=standing.key,
        label=label,
        gpu=sample.gpu_product,
        stack=sample.stack,
        protocol=sample.protocol_title,
        protocol_url=urls.protocol(sample.protocol_name),
        controlled_rerun=sample.protocol_name in RERUN_PROTOCOL_NAMES,
        superseded_by=protocols[successor] if successor else None,
        run_count=standing.run_count,
        eligible_count=standing.eligible_count,
        best_latency_ns=record.latency_ns if record else None,
        best_latency=latency(record.latency_ns) if record else "–",
        best_implementation=record.project if record else None,
        best_headline=headline_text(standing.tied_with_best) if record else None,
        tied_with_best=standing.tied_with_best,
        url=urls.workload_group(sample.workload_slug, standing.key),
        selected=standing.key == selected_key,
    )


def _implementation_rows(detail: GroupDetail) -> list[ImplementationRow]:
    """The table's rows: the fastest ``PAGE_SIZE`` implementations (the ranked table lists them all)."""
    rows = []
    for entry, ranked_runs in detail.implementations[:PAGE_SIZE]:
        view = detail.view(entry.run.name)
        rows.append(
            ImplementationRow(
                **rank_fields(entry),
                project=view.project,
                variant=_variant(view.project, view.implementation_title),
                url=urls.implementation(view.project_slug),
                runtime=view.runtime or "unknown",
                run_count=ranked_runs,
                best_run=view.name,
                best_run_url=urls.run(view.name),
                best_latency_ns=view.latency_ns,
                best_latency=latency(view.latency_ns),
                vs_best_text=ratio(entry.vs_best),
                evidence=view.evidence,
                availability=view.availability,
            )
        )
    return one_unit(rows, "best_latency_ns", "best_latency")


def _record_rows(detail: GroupDetail) -> list[RecordRow]:
    return [
        RecordRow(
            observed_at=brk.run.observed_at,
            run=brk.run.name,
            url=urls.run(brk.run.name),
            implementation=_display_name(
                (view := detail.view(brk.run.name)).project, _variant(view.project, view.implementation_title)
            ),
            latency_ns=brk.run.latency_ns,
            latency=latency(brk.run.latency_ns),
            improvement=brk.improvement,
            improvement_text="first record" if brk.improvement is None else improvement(brk.improvement),
        )
        for brk in detail.history
    ]


def _header(board: Leaderboard) -> WorkloadHeader:
    workload = board.workload
    return WorkloadHeader(
        slug=workload.name,
        title=workload.title,
        name=board.manifest.spec.definition.name,
        description=workload.description,
        collection=workload.collection,
        tags=list(workload.tags),
        origin_model=workload.origin_model,
        origin_model_url=urls.model(slugify(workload.origin_model)) if workload.origin_model else None,
        case_count=workload.case_count,
        run_count=board.run_count,
        eligible_count=board.eligible_count,
        digest=workload.digest,
        missing_since=workload.missing_since,
    )


def _tensor_rows(definition: Definition) -> list[TensorRow]:
    return [
        TensorRow(
            name=name,
            role=role,
            dtype=tensor.dtype,
            shape="[" + ", ".join(str(dim) for dim in tensor.shape) + "]" if tensor.shape is not None else "scalar",
            description=tensor.description,
        )
        for role, tensors in (("input", definition.inputs), ("output", definition.outputs))
        for name, tensor in tensors.items()
    ]


def _axis_rows(definition: Definition) -> list[AxisRow]:
    return [
        AxisRow(
            name=name,
            kind={"var": "variable", "const": "constant", "expr": "expression"}[axis.type],
            value=str(axis.value) if axis.value is not None else (axis.expression or ""),
            description=axis.description,
        )
        for name, axis in definition.axes.items()
    ]


def _case_rows(
    every_case: list[WorkloadCase],
    variable_axes: list[str],
    dtypes: list[str],
    bounds: RerunBounds | None,
    window: CaseWindow,
) -> list[CaseRow]:
    """The cases of ``window``, numbered from 1 as in the whole workload."""
    cases = every_case[window.start : window.stop]
    positions = window.positions
    baselines = _ms_column([case.baseline_latency_ms for case in cases])
    sols = _ms_column([case.sol_latency_ms for case in cases])
    sol_bounds = [_bound(bounds.by_position if bounds else None, position) for position in positions]
    achievable = [_bound(bounds.achievable_by_position if bounds else None, position) for position in positions]
    sol_texts, achievable_texts = latency_column(sol_bounds).texts, latency_column(achievable).texts
    return [
        CaseRow(
            index=window.start + index + 1,
            values=[str(case.axes.get(name, "–")) for name in variable_axes],
            dtype=", ".join(dtypes),
            baseline_latency=baselines[index],
            sol_latency=sols[index],
            baseline_latency_ms=case.baseline_latency_ms,
            sol_latency_ms=case.sol_latency_ms,
            rerun_sol_bound=sol_texts[index] if sol_bounds[index] else None,
            rerun_sol_bound_ns=sol_bounds[index],
            rerun_achievable_bound=achievable_texts[index] if achievable[index] else None,
            rerun_achievable_bound_ns=achievable[index],
        )
        for index, case in enumerate(cases)
    ]


CHART_BARS = 20


def _ranked_chart(fastest: Sequence[RunRow], total: int, label: str) -> BarChart | None:
    """The ranked table as bars: its ``CHART_BARS`` fastest rows (``fastest``) of ``total``."""
    shown = sorted(fastest, key=lambda row: (row.rank, row.name))[:CHART_BARS]
    unit = latency_unit(row.latency_ns for row in shown)
    statistics = sorted({row.statistic for row in shown})
    return bar_chart(
        [
            Bar(
                label=_display_name(row.implementation, row.variant),
                value=row.latency_ns,
                value_text=latency_in(row.latency_ns, unit),
                url=row.url,
                highlight=row.rank == 1,
                low=row.uncertainty.low if row.uncertainty else None,
                high=row.uncertainty.high if row.uncertainty else None,
                interval_text=row.uncertainty.text if row.uncertainty else None,
            )
            for row in shown
        ],
        title=f"Latency per implementation on {label}, fastest first",
        description=(
            f"One bar per row of the ranked table below ({len(shown)} of {total}), its length the "
            f"{', '.join(statistics)} latency on a linear axis from zero; shorter is faster. "
            + (
                "A whisker spans each figure's interval, where one is known. "
                if any(row.uncertainty for row in shown)
                else ""
            )
            + "The table holds the same figures."
        ),
        axis_title=f"latency ({', '.join(statistics)}), shorter is faster",
        value_heading=f"Latency ({', '.join(statistics)})",
        tick_text=latency_tick(unit),
    )


def _speedup_chart(detail: GroupDetail, label: str) -> BarChart | None:
    """Each implementation's speed-up over the group's baseline run, or, where the source reports
    one per run (SOL-ExecBench's ``avg_speedup``), over the reference as the source measured it."""
    # The bars drawn: the fastest implementations, each its best run.
    lines = [(detail.view(entry.run.name), entry) for entry, _ in detail.implementations[:CHART_BARS]]
    baseline = detail.baseline
    if baseline is not None:
        figures = [(view, baseline.latency_ns / view.latency_ns) for view, _ in lines]
        against = f"{baseline.implementation_title} ({latency(baseline.latency_ns)})"
    elif lines and all(isinstance(view.metrics.get("avg_speedup"), int | float) for view, _ in lines):
        figures = [(view, float(view.metrics["avg_speedup"])) for view, _ in lines]
        against = "the reference (the source's average over the cases)"
    else:
        return None
    return bar_chart(
        [
            Bar(
                label=_display_name(view.project, _variant(view.project, view.implementation_title)),
                value=value,
                value_text=ratio(value),
                url=urls.run(view.name),
                highlight=baseline is not None and view.name == baseline.name,
            )
            for view, value in figures
        ],
        title=f"Speed-up over {against} on {label}",
        description=(
            f"One bar per implementation, its best ranked run's speed-up over {against}; "
            "the rule marks 1×, longer is faster. The ranked table holds the latencies."
        ),
        axis_title=f"speed-up over {against}, longer is faster",
        value_heading=f"Speed-up over {against}",
        tick_text=ratio_tick,
        rule_at=1.0,
    )


# The orders of ``SORTS`` for the table of each implementation's best, read before its row is made.
BEST_ORDERS: dict[str, Callable[[RankedRun, RevisionLine], Any]] = {
    "rank": lambda entry, line: (entry.rank, entry.run.name),
    "observed": lambda entry, line: (-entry.run.observed_at.timestamp(), entry.run.name),
    "sol": lambda entry, line: (-(line.sol_score or 0), entry.run.name),
    "implementation": lambda entry, line: (line.project.casefold(), entry.rank, entry.run.name),
}


@dataclass(frozen=True)
class RankedTable:
    """The page of the ranked table shown, its fastest rows (for the chart) and its length."""

    page: list[RunRow]
    fastest: list[RunRow]
    total: int
    page_count: int


def _ranked_table(
    session: Session,
    board: Leaderboard,
    detail: GroupDetail | None,
    runs: str,
    case_count: int,
    implementation_filter: str,
    sort: str,
    page: int,
) -> RankedTable:
    """The ranked table of the selected group: each implementation's best run, ranked among the
    implementations (``runs="best"``), or every ranked run, a page of them read from the store;
    filtered by implementation name and sorted for display. Raises ``BadRequest`` for a page past
    the last."""
    if detail is None:
        return _paged([], [], 0, page)
    needle = implementation_filter.casefold()

    def wanted(project: str, title: str) -> bool:
        return needle in f"{project}\n{_variant(project, title) or ''}".casefold()

    if runs == "best":
        # Chosen and ordered by what the group's figures already say; only the rows shown are read.
        lines = [
            (entry, count)
            for entry, count in detail.implementations
            if wanted(detail.line(entry.run.name).project, entry.run.implementation)
        ]
        unit = latency_unit(entry.run.latency_ns for entry, _ in lines)
        ordered = sorted(lines, key=lambda line: BEST_ORDERS[sort](line[0], detail.line(line[0].run.name)))
        shown = ordered[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        charted = lines[:CHART_BARS]
        load_views(session, board, detail, (entry.run.name for entry, _ in shown + charted))

        def rows(chosen: list[tuple[RankedRun, int]]) -> list[RunRow]:
            return [
                _row(detail.view(entry.run.name), entry, case_count, implementation_runs=count)
                for entry, count in chosen
            ]

        return _paged(one_unit(rows(shown), "latency_ns", "latency", unit), rows(charted), len(lines), page)
    revisions = detail.revisions
    chosen = {line.implementation_id for line in revisions if wanted(line.project, line.best.implementation)}
    projects = sorted({line.project.casefold() for line in revisions})
    position = {line.implementation_id: projects.index(line.project.casefold()) for line in revisions}
    ids = chosen if implementation_filter else None
    found = ranked_rows(session, board, detail.standing, ids, sort, (page - 1) * PAGE_SIZE, PAGE_SIZE, position)
    unit = latency_unit([found.median_latency_ns])
    fastest = found
    if sort != "rank" or page != 1:
        fastest = ranked_rows(session, board, detail.standing, ids, "rank", 0, CHART_BARS)
    return _paged(
        one_unit([_row(view, entry, case_count) for view, entry in found.rows], "latency_ns", "latency", unit),
        [_row(view, entry, case_count) for view, entry in fastest.rows[:CHART_BARS]],
        found.total,
        page,
    )


def _with_confirmation(table: RankedTable, states: dict[str, str]) -> RankedTable:
    if not states:
        return table

    def marked(rows: list[RunRow]) -> list[RunRow]:
        return [row.model_copy(update={"confirmation": states.get(row.name)}) for row in rows]

    return RankedTable(
        page=marked(table.page), fastest=marked(table.fastest), total=table.total, page_count=table.page_count
    )


def _paged(rows: list[RunRow], fastest: list[RunRow], total: int, page: int) -> RankedTable:
    page_count = max(1, -(-total // PAGE_SIZE))
    if page > page_count:
        raise BadRequest(f"page {page} is past the last page ({page_count}).")
    return RankedTable(page=rows, fastest=fastest, total=total, page_count=page_count)


def _not_measured_on(board: Leaderboard) -> list[GpuLink]:
    """The tracked GPUs that no run of this workload was measured on, each linking its GPU page."""
    measured = {group.sample.gpu_product for group in board.groups}
    return [GpuLink(product=gpu.product, url=urls.gpu(gpu.slug)) for gpu in TRACKED_GPUS if gpu.product not in measured]


def _source_row(source: Any, last_observed_at: datetime | None) -> SourceRow:
    """A ``Source`` row as the page names it, with its attribution and the page of its licence."""
    return SourceRow(
        slug=source.slug,
        name=source.name,
        url=source.url,
        page_url=urls.source(source.slug),
        attribution=source.attribution,
        last_observed_at=last_observed_at,
    )


def _reference(definition: Definition, source: SourceRow) -> ReferencePart | None:
    reference = definition.reference
    if reference is None:
        return None
    return ReferencePart(
        path=reference.path,
        url=str(reference.url) if reference.url else None,
        sha256=reference.sha256,
        language=reference.language,
        code=reference.code,
        line_count=len(reference.code.splitlines()),
        source=source,
    )


def _cross_gpu_rows(view: CrossGpuView) -> list[CrossGpuRow]:
    """The matrix, each GPU's column of latencies in one unit."""
    cells = [[line.best_by_gpu.get(gpu.gpu) for gpu in view.gpus] for line in view.implementations]
    columns = [
        latency_column([cell.latency_ns if cell else None for cell in column]).texts
        for column in zip(*cells, strict=True)
    ]
    return [
        CrossGpuRow(
            implementation=line.implementation,
            title=line.implementation_title,
            cells=row,
            texts=[column[index] for column in columns],
        )
        for index, (line, row) in enumerate(zip(view.implementations, cells, strict=True))
    ]


def _matrix_pager(view: CrossGpuView, page: int, page_count: int, board_url: Callable[..., str]) -> MatrixPager:
    def url(page: int) -> str:
        return board_url(matrix=page) + "#across-gpus-matrix"

    return MatrixPager(
        first=view.first_implementation,
        last=view.first_implementation + len(view.implementations) - 1,
        total=view.implementation_count,
        previous_url=url(page - 1) if page > 1 else None,
        next_url=url(page + 1) if page < page_count else None,
    )


def _cross_gpu_chart(view: CrossGpuView) -> GpuChart | None:
    return gpu_chart(
        [
            GpuFigures(
                gpu=gpu.gpu_product,
                best_ns=gpu.best.latency_ns,
                statistic=gpu.best.primary_statistic,
                implementations=[
                    (line.implementation_title, line.best_by_gpu[gpu.gpu].latency_ns)
                    for line in view.implementations
                    if gpu.gpu in line.best_by_gpu
                ],
            )
            for gpu in view.gpus
        ]
    )


def build_leaderboard(
    session: Session,
    board: Leaderboard,
    group: str | None,
    sort: str | None,
    implementation_filter: str | None,
    page_value: str | None,
    runs: str | None = None,
    case: str | None = None,
    framework: str | None = None,
    version: str | None = None,
    cases: str | None = None,
    matrix: str | None = None,
) -> LeaderboardPage:
    """The context of ``/workloads/{slug}``; raises ``BadRequest`` for unusable parameters.

    ``session`` answers what the leaderboard does not hold: the figures across GPUs, the
    selected group's sweep and the other revisions of the workload's problem."""
    sort = params.choice("sort", sort, SORTS, "rank")
    runs = params.choice("runs", runs, RUN_MODES, "best")
    implementation_filter = params.text("implementation", implementation_filter) or ""
    page = params.page_number(page_value)
    matrix_page = params.page_number(matrix)
    case_index = params.index("case", case)
    framework = params.text("framework", framework, max_length=64)
    version = params.text("version", version, max_length=300)
    workload = board.workload
    slug = workload.name
    selected_key = _selected_key(board, group)
    selected = board.group(selected_key)
    # The implementations table's rows, which begin the ranked table's first page.
    detail = group_detail(session, board, selected, lines_read=PAGE_SIZE) if selected else None
    labels = _group_labels(board)
    protocols = {g.sample.protocol_name: g.sample.protocol_title for g in board.groups}
    tabs = [
        _tab(standing, labels[standing.key], selected_key, protocols)
        for standing in sorted(board.groups, key=lambda g: (labels[g.key], g.key))
    ]
    tabs = one_unit(tabs, "best_latency_ns", "best_latency")
    selected_tab = next((tab for tab in tabs if tab.selected), None)

    table = _ranked_table(session, board, detail, runs, workload.case_count, implementation_filter, sort, page)
    table = _with_confirmation(table, confirmation_states(session, [r.name for r in table.page + table.fastest]))
    group_param = selected_key.removeprefix("sha256:")[:16] if selected_key and group else None

    def board_url(sort: str = sort, runs: str = runs, page: int | None = None, matrix: int = matrix_page) -> str:
        """This view's address with one choice changed; defaults are left out of it."""
        return urls.workload(
            slug,
            group=group_param,
            sort=None if sort == "rank" else sort,
            implementation=implementation_filter or None,
            runs=None if runs == "best" else runs,
            page=page,
            case=case_index,
            framework=framework,
            version=version,
            cases=cases or None,
            matrix=None if matrix == 1 else matrix,
        )

    def case_url(case: int | None, framework: str | None, version: str | None) -> str:
        """The per-case section of this group with another case, framework or version."""
        query = {"group": group_param, "case": case, "framework": framework, "version": version}
        return urls.workload(slug, **query) + "#case-ranking"

    group_runs = group_case_runs(session, workload, selected_key) if selected_key else []
    try:
        ranking = (
            case_ranking(session, workload, selected_key, group_runs, case_index, framework, version)
            if selected_key
            else None
        )
    except (UnknownCase, UnknownFramework) as exc:
        raise BadRequest(str(exc)) from None
    if selected_key is None and (case_index is not None or framework or version):
        raise BadRequest("this workload has no runs yet: there is no case, framework or version to choose.")
    window = case_window(workload.case_count, cases, ranking.case.index if ranking else case_index)

    def window_url(page: int, section: str) -> str:
        query = {"group": group_param, "case": case_index, "framework": framework, "version": version}
        return urls.workload(slug, **query, cases=page) + section

    ineligible_rows = one_unit(
        [_row(v, None, workload.case_count) for v in (detail.ineligible if detail else [])], "latency_ns", "latency"
    )
    history = _record_rows(detail) if detail else []
    chart = history_chart(
        [RecordPoint(row.observed_at, row.latency_ns, row.implementation, row.improvement) for row in history],
        until=selected.last_observed_at if selected else None,
    )
    fastest_view = board.fastest
    headline_group = board.group(fastest_view.comparison_key) if fastest_view else None
    fastest_tied = headline_group.tied_with_best if headline_group else 0
    rerun_bounds = board.rerun_bounds

    spec = board.manifest.spec
    definition = spec.definition
    variable_axes = [name for name, axis in definition.axes.items() if axis.type == "var"]
    dtypes = sorted({tensor.dtype for tensor in definition.inputs.values()})
    sources = [_source_row(s, workload.last_seen_at or s.last_observed_at) for s in board.sources]
    own_source = next(row for row, s in zip(sources, board.sources, strict=True) if s.id == workload.source_id)
    cross_gpu = cross_gpu_view(session, workload, matrix_page)
    matrix_pages = matrix_page_count(cross_gpu) if cross_gpu else 1
    if matrix_page > matrix_pages:
        raise BadRequest(f"matrix page {matrix_page} is past the last page of the table across GPUs ({matrix_pages}).")
    noise = ranking.noise_bound if ranking and ranking.noise_bounds_figures else None
    sweep = group_sweep(workload, group_runs, ranking.selection if ranking else None, noise) if selected_key else None

    return LeaderboardPage(
        workload=_header(board),
        completeness=workload_completeness(session, workload),
        fastest=_row(fastest_view, _headline_entry(fastest_view, fastest_tied), workload.case_count)
        if fastest_view
        else None,
        fastest_group=labels[fastest_view.comparison_key] if fastest_view else None,
        fastest_headline=headline_text(fastest_tied) if fastest_view else None,
        fastest_distinct=fastest_tied == 0 if fastest_view else None,
        fastest_group_ranked=headline_group.eligible_count if headline_group else 0,
        groups=tabs,
        not_measured_on=_not_measured_on(board),
        selected_group=selected_tab,
        sort=sort,
        sort_links=[
            SortLink(
                key=key,
                label=label,
                url=board_url(sort=key),
                current=key == sort,
            )
            for key, label in SORTS.items()
        ],
        runs=runs,
        run_mode_links=[
            SortLink(
                key=key,
                label=label,
                url=board_url(runs=key),
                current=key == runs,
            )
            for key, label in RUN_MODES.items()
        ],
        implementation_filter=implementation_filter,
        ranked=table.page,
        score_heading=figures.SOL_SCORE.label if any(row.sol_score is not None for row in table.page) else None,
        share_heading=next((row.share_of_bound.label for row in table.page if row.share_of_bound), None),
        interval_column=any(row.uncertainty is not None for row in table.page),
        ranked_total=table.total,
        page=page,
        page_count=table.page_count,
        previous_url=board_url(page=page - 1) if page > 1 else None,
        next_url=board_url(page=page + 1) if page < table.page_count else None,
        ineligible=ineligible_rows,
        implementations=_implementation_rows(detail) if detail else [],
        implementation_count=len(detail.implementations) if detail else 0,
        all_implementations_url=(
            board_url(runs="best", page=2) + "#leaderboard"
            if detail and len(detail.implementations) > PAGE_SIZE
            else None
        ),
        ranked_chart=_ranked_chart(table.fastest, table.total, selected_tab.label) if selected_tab else None,
        speedup_chart=_speedup_chart(detail, selected_tab.label) if detail and selected_tab else None,
        history=one_unit(list(reversed(history)), "latency_ns", "latency"),
        chart=chart,
        tensors=_tensor_rows(definition),
        axes=_axis_rows(definition),
        constraints=definition.constraints or ["No mutation or aliasing of inputs (not published by the source)"],
        determinism=definition.determinism or "unspecified",
        variable_axes=variable_axes,
        input_dtype=", ".join(dtypes),
        cases=_case_rows(spec.cases, variable_axes, dtypes, rerun_bounds, window),
        case_pager=case_pager(window, window_url) if not window.whole else None,
        rerun_bound_gpu=rerun_bounds.gpu if rerun_bounds else None,
        sources=sources,
        cross_gpu=cross_gpu,
        cross_gpu_rows=_cross_gpu_rows(cross_gpu) if cross_gpu else [],
        cross_gpu_fastest=latency_column([gpu.best.latency_ns for gpu in cross_gpu.gpus]).texts if cross_gpu else [],
        cross_gpu_chart=_cross_gpu_chart(cross_gpu) if cross_gpu else None,
        matrix_pager=(
            _matrix_pager(cross_gpu, matrix_page, matrix_pages, board_url) if matrix_pages > 1 and cross_gpu else None
        ),
        case_ranking=(
            case_ranking_part(ranking, case_url, case_index, selected.sample.gpu_slug, window)
            if ranking and selected
            else None
        ),
        sweep=sweep_part(sweep, window) if sweep else None,
        reference=_reference(definition, own_source),
        revision_of=problem_of(workload.external_id),
        revisions=workload_revisions(session, workload),
    )
