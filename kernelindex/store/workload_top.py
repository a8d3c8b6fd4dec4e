"""A workload's ranked top on one GPU, at one case of its sweep: ``/api/v1/workloads/{ref}/top``.

It answers "who is fastest at this on that GPU?" from the leaderboard's own pieces: the GPU's
comparison group is the one its fastest run leads (where the leaderboard opens when filtered by
that GPU); a sweep's group is ranked at one case by ``case_ranking`` (the workload page's
per-case ranking), any other group by its suite figure (``ranked_rows``, the ranked table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from pydantic import Field
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Run, Workload
from kernelindex.manifests.types import EvidenceLevelField
from kernelindex.store.case_ranking import UnknownCase, case_label, case_ranking
from kernelindex.store.gpu_filter import gpu_named
from kernelindex.store.leaderboards import GroupStanding, Leaderboard, leaderboard, ranked_rows
from kernelindex.store.manifests import workload_manifest
from kernelindex.store.runs import run_views
from kernelindex.store.schemas import ApiModel, DigestText
from kernelindex.store.sweeps import group_case_runs

TOP_LIMIT = 100


class TopCase(ApiModel):
    index: int = Field(description="0-based, as the workload page's cases table counts them")
    label: str = Field(description='its axis values, e.g. "num_tokens=4096"')
    chosen: bool = Field(description="asked for; false: the default case (the one most runs measured)")


class TopEntry(ApiModel):
    rank: int
    run: str
    implementation: str = Field(description="the implementation as the pages title it")
    project: str
    project_slug: str = Field(description="for /api/v1/implementations/{slug}")
    framework: str | None = Field(description="the serving framework a sweep's run names, if any")
    version: str | None
    latency_ns: int = Field(description="at the case (or the suite figure without one), in integer nanoseconds")
    vs_best: float = Field(description="latency ÷ the #1's latency (1.0 for #1)")
    evidence: EvidenceLevelField = Field(title="Evidence")
    source: str | None = Field(description="who measured it: the source that published the run")
    observed_at: datetime = Field(description="when the source observed the run")
    url: str
    api_url: str


class WorkloadTop(ApiModel):
    """The fastest eligible runs of one comparison group, fastest first, with what every figure is."""

    workload: str
    workload_title: str
    gpu: str | None = Field(description="the GPU asked for; null: the group the leaderboard opens on")
    gpu_product: str | None
    comparison_key: DigestText | None = Field(description="the group ranked; null when the GPU has no eligible run")
    environment_label: str | None
    protocol: str | None
    protocol_title: str | None
    groups_on_gpu: int = Field(description="comparison groups of the workload with an eligible run on the GPU")
    metric: str = Field(description="what the figures measure", examples=["latency"])
    unit: str = Field(description="the unit of latencyNs", examples=["ns"])
    statistic: str | None = Field(description="the statistic the source reports, e.g. mean, median or geomean")
    case: TopCase | None = Field(description="the case ranked; null for a group without per-case results")
    ranked_total: int = Field(description="eligible runs ranked (at the case, if any), of which the first are listed")
    entries: list[TopEntry]
    url: str = Field(description="the leaderboard, opened on this group (and case)")
    api_url: str
    citation_url: str = Field(description="the leaderboard's citation (BibTeX); .ris, .csl.json and .txt too")


@dataclass(frozen=True)
class _Ranked:
    run: str
    rank: int
    latency_ns: int
    vs_best: float
    title: str
    framework: str | None
    version: str | None


def parse_case(workload: Workload, text: str | None) -> int | None:
    """A case asked for as its 0-based index ("22") or by its axis values ("num_tokens=4096")."""
    if text is None or not text.strip():
        return None
    wanted = text.strip()
    cases = workload_manifest(workload).spec.cases
    if re.fullmatch(r"-?[0-9]{1,9}", wanted):
        index = int(wanted)
        # "4096" past the last index most likely meant an axis value: name the cases that have it.
        having = [f"{case_label(case)} is case {i}" for i, case in enumerate(cases) if index in case.axes.values()]
        if not 0 <= index < len(cases) and having:
            raise UnknownCase(
                f"case is a 0-based index from 0 to {len(cases) - 1}, not {index}; "
                f"to choose by axis values, give them: {'; '.join(having[:3])}."
            )
        return index  # any other out of range: refused by ``case_ranking``
    normalised = wanted.replace(" ", "")
    for index, case in enumerate(cases):
        if case_label(case).replace(" ", "") == normalised:
            return index
    raise UnknownCase(
        f"no case of {workload.name} has the axis values {wanted!r}: give a 0-based case index "
        f"(0 to {len(cases) - 1}) or the values as the cases table writes them, e.g. {case_label(cases[0])!r}."
        if cases
        else f"{workload.name} has no cases to choose from."
    )


def _group_on(board: Leaderboard, gpu: str | None) -> tuple[GroupStanding | None, int]:
    """The group its fastest run on ``gpu`` leads (the opening group without a GPU), and how many
    groups on that GPU hold an eligible run."""
    if gpu is None:
        return board.group(board.default_key), len([g for g in board.groups if g.record])
    led = [g for g in board.groups if g.sample.gpu_slug == gpu and g.record is not None]
    led.sort(key=lambda g: (g.record.latency_ns if g.record else 0, g.key))
    return (led[0] if led else None), len(led)


def workload_top(session: Session, workload: Workload, gpu: str | None, case: str | None, limit: int) -> WorkloadTop:
    """Raises ``GpuFilterError`` for an unknown GPU and ``UnknownCase`` for an unusable case."""
    gpu_slug = gpu_named(session, gpu) if gpu else None
    case_index = parse_case(workload, case)
    board = leaderboard(session, workload)
    standing, groups_on_gpu = _group_on(board, gpu_slug)
    sample = standing.sample if standing else None
    chosen_case: TopCase | None = None
    statistic = sample.primary_statistic if sample else None
    ranked: list[_Ranked] = []
    total = 0
    if standing is not None:
        ranking = case_ranking(
            session, workload, standing.key, group_case_runs(session, workload, standing.key), case_index
        )
        if ranking is not None:
            chosen_case = TopCase(index=ranking.case.index, label=ranking.case.label, chosen=not ranking.default_case)
            statistic = ranking.statistic or statistic
            total = ranking.ranked_total
            ranked = [
                _Ranked(e.run, e.rank, e.latency_ns, e.vs_best, e.implementation_title, e.framework, e.version)
                for e in ranking.ranked[:limit]
                if e.rank is not None and e.latency_ns is not None and e.vs_best is not None
            ]
        else:
            rows = ranked_rows(session, board, standing, None, "rank", 0, limit)
            total = rows.total
            ranked = [
                _Ranked(view.name, r.rank, view.latency_ns, r.vs_best, view.implementation_title, None, view.revision)
                for view, r in rows.rows
            ]
    views = {v.name: v for v in run_views(session, Run.name.in_([r.run for r in ranked]))} if ranked else {}
    entries = [
        TopEntry(
            rank=r.rank,
            run=r.run,
            implementation=r.title,
            project=views[r.run].project,
            project_slug=views[r.run].project_slug,
            framework=r.framework,
            version=r.version,
            latency_ns=r.latency_ns,
            vs_best=r.vs_best,
            evidence=views[r.run].evidence,
            source=views[r.run].source_name,
            observed_at=views[r.run].observed_at,
            url=urls.run(r.run),
            api_url=urls.api_run(r.run),
        )
        for r in ranked
    ]
    case_query = chosen_case.index if chosen_case and chosen_case.chosen else None
    return WorkloadTop(
        workload=workload.name,
        workload_title=workload.title,
        gpu=gpu_slug,
        gpu_product=sample.gpu_product if sample else None,
        comparison_key=standing.key if standing else None,
        environment_label=sample.environment_label if sample else None,
        protocol=sample.protocol_name if sample else None,
        protocol_title=sample.protocol_title if sample else None,
        groups_on_gpu=groups_on_gpu,
        metric="latency",
        unit="ns",
        statistic=statistic,
        case=chosen_case,
        ranked_total=total,
        entries=entries,
        url=urls.workload_on(workload.name, standing.key if standing else None, case=case_query),
        api_url=urls.api_workload_top(workload.name, gpu=gpu_slug, case=case_query, limit=limit),
        citation_url=urls.workload_citation(workload.name, "bib"),
    )
