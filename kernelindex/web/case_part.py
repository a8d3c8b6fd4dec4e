"""The workload page's per-case ranking: the selected group ranked at one case of its sweep, the
case selector and the framework and version filters (links and a form, no script needed), and
the version-regression flags on its rows."""

from __future__ import annotations

from collections.abc import Callable

from kernelindex import urls
from kernelindex.store.case_ranking import CaseEntry, CaseLabel, CaseRanking, RegressionFlag
from kernelindex.uncertainty import KIND_WORDS, SOURCE_NOISE, headline_text
from kernelindex.web.case_window import CaseWindow
from kernelindex.web.format import latency, one_unit, ratio
from kernelindex.web.pages import Part
from kernelindex.web.rank_part import UncertaintyPart, rank_fields

# Builds this page's address with the case, framework and version given (the group kept).
CaseUrl = Callable[[int | None, str | None, str | None], str]


class CaseOption(Part):
    index: int  # 0-based: the ``case`` parameter
    label: str  # "num_tokens=4096"
    runs_measured: int
    url: str
    selected: bool


class FilterLink(Part):
    label: str
    url: str
    current: bool


class RegressionNote(Part):
    """ "slower than vLLM 0.22.0 by 12%": this run against its framework's fastest older version here."""

    text: str
    framework: str
    older_version: str
    older_run: str
    older_run_url: str
    older_latency_ns: int
    slowdown: float
    slowdown_text: str  # "12%"


class CaseRankRow(Part):
    rank: int | None
    # As a leaderboard row's (``web.rank_part``): the places it could hold at the case, and why.
    rank_range: list[int] | None
    rank_text: str | None
    distinct_from_best: bool | None
    uncertainty: UncertaintyPart | None
    run: str
    url: str
    implementation: str
    implementation_url: str
    framework: str | None
    version: str | None
    kernel: str | None
    latency_ns: int | None
    latency: str
    vs_best: float | None
    vs_best_text: str
    regressions: list[RegressionNote]


class CaseRankingPart(Part):
    case_index: int
    case_label: str
    default_case: bool  # opened on the default case, none having been asked for
    statistic: str
    cases: list[CaseOption]
    framework: str | None
    version: str | None
    framework_links: list[FilterLink]
    version_links: list[FilterLink]
    rows: list[CaseRankRow]
    ranked_total: int  # runs ranked at this case before the framework and version filters
    not_measured: list[CaseRankRow]
    noise_bound: float | None
    noise_text: str | None  # "5%"
    noise_method: str | None
    regressions_url: str
    # "#1" or "#1, tied with N" at this case, and what the intervals rest on.
    headline: str | None
    uncertainty_note: str | None


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def _note(flag: RegressionFlag) -> RegressionNote:
    return RegressionNote(
        text=f"slower than {flag.framework} {flag.older_version} by {percent(flag.slowdown)}",
        slowdown_text=percent(flag.slowdown),
        framework=flag.framework,
        older_version=flag.older_version,
        older_run=flag.older_run,
        older_run_url=urls.run(flag.older_run),
        older_latency_ns=flag.older_latency_ns,
        slowdown=flag.slowdown,
    )


def _row(entry: CaseEntry) -> CaseRankRow:
    return CaseRankRow(
        rank=entry.rank,
        **rank_fields(entry.ranked),
        run=entry.run,
        url=urls.run(entry.run),
        implementation=entry.implementation_title,
        implementation_url=urls.implementation(entry.project_slug),
        framework=entry.framework,
        version=entry.version,
        kernel=entry.kernel,
        latency_ns=entry.latency_ns,
        latency=latency(entry.latency_ns) if entry.latency_ns is not None else "not measured",
        vs_best=entry.vs_best,
        vs_best_text=ratio(entry.vs_best) if entry.vs_best is not None else "–",
        regressions=[_note(flag) for flag in entry.regressions],
    )


def _offered(ranking: CaseRanking, window: CaseWindow) -> list[CaseLabel]:
    """The cases of ``window`` and the chosen one, in sweep order."""
    shown = range(window.start, min(window.stop, len(ranking.cases)))
    chosen = ranking.case
    before = [chosen] if chosen.index < shown.start else []
    after = [chosen] if chosen.index >= shown.stop else []
    return before + [ranking.cases[index] for index in shown] + after


def case_ranking_part(
    ranking: CaseRanking, case_url: CaseUrl, asked_case: int | None, gpu_slug: str, window: CaseWindow
) -> CaseRankingPart:
    """The context of the per-case section; ``case_url(case, framework, version)`` builds its links,
    which keep an asked-for case (``asked_case``) but not a default one. The case selector offers
    the cases of ``window`` and the chosen one."""
    selection = ranking.selection
    framework_links = [
        FilterLink(label="All frameworks", url=case_url(asked_case, None, None), current=not selection.chosen)
    ]
    framework_links += [
        FilterLink(
            label=name,
            url=case_url(asked_case, name, None),
            current=selection.framework == name and selection.version is None,
        )
        for name in ranking.frameworks
    ]
    version_links = [
        FilterLink(
            label=f"{name} {version}",
            url=case_url(asked_case, name, version),
            current=selection.framework in (None, name) and selection.version == version,
        )
        for name, versions in ranking.frameworks.items()
        if selection.framework in (None, name)
        for version in versions
    ]
    return CaseRankingPart(
        case_index=ranking.case.index,
        case_label=ranking.case.label,
        default_case=ranking.default_case,
        statistic=ranking.statistic,
        cases=[
            CaseOption(
                index=label.index,
                label=label.label,
                runs_measured=label.runs_measured,
                url=case_url(label.index, selection.framework, selection.version),
                selected=label.index == ranking.case.index,
            )
            for label in _offered(ranking, window)
        ],
        framework=selection.framework,
        version=selection.version,
        framework_links=framework_links,
        version_links=version_links,
        rows=one_unit([_row(entry) for entry in ranking.ranked], "latency_ns", "latency"),
        ranked_total=ranking.ranked_total,
        not_measured=[_row(entry) for entry in ranking.not_measured],
        noise_bound=ranking.noise_bound,
        noise_text=percent(ranking.noise_bound) if ranking.noise_bound is not None else None,
        noise_method=ranking.noise_method,
        regressions_url=urls.regressions(gpu=gpu_slug, framework=selection.framework),
        headline=headline_text(ranking.tied_with_best) if ranking.tied_with_best is not None else None,
        uncertainty_note=_uncertainty_note(ranking),
    )


def _uncertainty_note(ranking: CaseRanking) -> str | None:
    """What the case's intervals rest on, in a sentence."""
    if not ranking.ranked:
        return None
    kinds = sorted(
        {entry.ranked.run.uncertainty.kind for entry in ranking.ranked if entry.ranked and entry.ranked.run.uncertainty}
    )
    unknown = sum(1 for entry in ranking.ranked if entry.ranked and entry.ranked.run.uncertainty is None)
    parts = []
    if SOURCE_NOISE in kinds and ranking.noise_bound is not None:
        parts.append(
            f"Figures with no spread of their own are taken as ± {percent(ranking.noise_bound)}, the source's noise."
        )
    parts += [f"Intervals: {KIND_WORDS[kind]}." for kind in kinds if kind != SOURCE_NOISE]
    if unknown:
        parts.append(f"{unknown} figure{'' if unknown == 1 else 's'} of unknown spread, ranked by the figure alone.")
    return " ".join(parts) or None
