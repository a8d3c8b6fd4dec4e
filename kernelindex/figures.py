"""Every kind of figure the site shows, named once (PRODUCT.md §5; ``docs/FIGURES.md`` for readers).

A figure is one of six kinds, each with its label, unit, number type and how it is written:

- **latency**, with its statistic: integer nanoseconds, written to four significant figures
  ("209.8 µs", "2.760 ms"), one unit per column or table, chosen from the column's values;
- a **source-native score** under the source's own name and definition, never relabelled
  (SOL-ExecBench's ``sol_score`` is "SOL score 0.874", not a share of anything);
- a **share of a bound** ("% of SOL bound"): the bound's latency over the run's, computed by the
  registry and naming its bound; shown only where the bound is known, a share below 1 % written
  as such ("0.5 %", "0.05 %"), never as "0 %";
- **× reference**: SOL-ExecBench's ``avg_speedup``, the source's speed-up over its baseline;
- **vs #1**: latency over the best latency of the comparison group ("1.00×" for #1);
- **N/M cases faster**: SOL-ExecBench's ``fast_1_count`` / ``fast_1_total``.

Pure: imports nothing of the app, so every layer (store, pages, JSON, CSV, charts) uses it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

LATENCY_FIGURES = 4  # significant figures of a latency (209.8 µs)
RATIO_FIGURES = 3  # significant figures of a ratio (1.23×) and of a source score (0.874)
# Each latency unit with its size in ns, small to large.
UNITS = (("ns", 1), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000))
UNIT_SIZES = dict(UNITS)
MISSING = "–"  # a figure that is not known; never followed by a unit or a bound's name


@dataclass(frozen=True)
class FigureKind:
    """One kind of figure: how a page heads it, its unit, its number's type and what it means.

    ``anchor`` is its section of ``docs/FIGURES.md`` (served at ``/figures``), where a reader
    finds the definition one click from the figure.
    """

    key: str
    label: str  # the column heading or the words beside the number
    unit: str  # "ns", "%", "×" or "" for a plain number
    number_type: str  # the JSON type of its value: "integer" or "number"
    definition: str
    anchor: str
    written: str  # how pages write it: "209.8 µs mean"
    statistic: str  # over what it is taken
    comes_from: str  # who computes or publishes it
    example: str  # a page of the bundled data that shows it


LATENCY = FigureKind(
    key="latency",
    label="Latency",
    unit="ns",
    number_type="integer",
    definition=(
        "The run's primary latency, with the statistic it was computed as (median, mean, geometric mean "
        "of case medians, …); stored in integer nanoseconds and written to four significant figures."
    ),
    anchor="latency",
    written=(
        "209.8 µs mean; four significant figures, one unit (ns, µs, ms, s) per column or table, chosen from its values"
    ),
    statistic=(
        "named with the figure: a case's median or mean over its timed samples; for a suite, the aggregate "
        "over its cases (SOL-ExecBench: the geometric mean of case latencies, inferred; reruns: geometric "
        "mean of case medians)"
    ),
    comes_from="the source that published the run, or the registry's controlled reruns",
    example="/runs/sol-submission-16893",
)
SOL_SCORE = FigureKind(
    key="sol_score",
    label="SOL score",
    unit="",
    number_type="number",
    definition=(
        "NVIDIA SOL-ExecBench's own score, as the source publishes it: the mean over the suite's cases of "
        "1 / (1 + (T − T_SOL) / (T_baseline − T_SOL)); 0.5 at the baseline's latency, 1 at the speed-of-light "
        "bound. A score between 0 and 1, not a share of the speed of light."
    ),
    anchor="sol-score",
    written="SOL score 0.874; three decimals, no unit",
    statistic="mean over the suite's cases",
    comes_from="NVIDIA SOL-ExecBench (its sol_score field), kept verbatim; never recomputed or relabelled",
    example="/workloads/l1-040-conv2d-residual-block",
)
SHARE_OF_BOUND = FigureKind(
    key="share_of_bound",
    label="% of SOL bound",
    unit="%",
    number_type="number",
    definition=(
        "The bound's latency divided by the run's latency (T_SOL ÷ T), as a percentage, computed by the "
        "registry and naming its bound; 100 % would reach the bound. Shown only where the bound is known."
    ),
    anchor="share-of-bound",
    written=(
        "4.5 % of SOL bound (SOL-ExecBench T_SOL); one decimal from 1 %, one significant figure below (0.5 %, 0.05 %)"
    ),
    statistic=("the run's primary latency against the geometric mean of the per-case bounds of the cases it measured"),
    comes_from=(
        "computed by the registry: for a SOL-ExecBench run, from the source's own per-case T_SOL; for a controlled "
        "rerun, from the GPU's datasheet peaks (and, apart, from the ceilings the runner measured)"
    ),
    example="/runs/rerun-0ad65a0ab282",
)
TIMES_REFERENCE = FigureKind(
    key="avg_speedup",
    label="× reference",
    unit="×",
    number_type="number",
    definition=(
        "NVIDIA SOL-ExecBench's avg_speedup: the run's speed-up over the source's reference (baseline) "
        "implementation, averaged over the suite's cases, as the source publishes it."
    ),
    anchor="times-reference",
    written="4.05× reference; three significant figures",
    statistic="as the source aggregates it over the suite's cases",
    comes_from="NVIDIA SOL-ExecBench (its avg_speedup field), kept verbatim",
    example="/runs/sol-submission-16893",
)
VS_BEST = FigureKind(
    key="vs_best",
    label="vs #1",
    unit="×",
    number_type="number",
    definition=(
        "The run's latency divided by the best latency of its comparison group (one workload, GPU, "
        "stack and protocol): 1.00× for #1, 1.23× for a run that takes 23 % longer."
    ),
    anchor="vs-best",
    written="1.23×; three significant figures",
    statistic="ratio of the two runs' primary latencies, within one comparison group only",
    comes_from="computed by the registry from the ranked runs' latencies",
    example="/workloads/l1-040-conv2d-residual-block",
)
CASES_FASTER = FigureKind(
    key="cases_faster",
    label="cases faster",
    unit="",
    number_type="integer",
    definition=(
        "NVIDIA SOL-ExecBench's fast_1_count / fast_1_total: in how many of the suite's cases the run "
        "was faster than the source's baseline."
    ),
    anchor="cases-faster",
    written="16/16 cases faster",
    statistic="count over the suite's cases",
    comes_from="NVIDIA SOL-ExecBench (its fast_1_count and fast_1_total fields), kept verbatim",
    example="/runs/sol-submission-16893",
)
INTERVAL = FigureKind(
    key="uncertainty",
    label="Interval",
    unit="ns",
    number_type="integer",
    definition=(
        "The interval [low, high] around a ranked figure, from the best evidence there is, and named by what it "
        "rests on: `samples`, the run's own samples (a controlled rerun's bootstrap 95 % interval of each case's "
        "median); `reported-std`, the source's reported standard deviation over its trials (KernelBench: the mean "
        "± 2 standard errors, 2 · std / √trials); `reported-percentiles`, the source's reported 20th and 80th "
        "percentiles (Liger-Kernel); `source-noise`, the figure ± the source's noise, estimated at ingest as the "
        "95th percentile of |ratio − 1| over the cases the source measured twice (AIConfigurator, whose tables "
        "repeat cases; no other source publishes repeated measurements of one figure, and an estimate from two "
        "frameworks calling one library function is not used, as they may measure different work). A suite "
        "figure (a geometric mean of cases) gets the geometric means of its cases' lows and highs where every "
        "case has an interval of one kind. Where nothing bounds a figure (SOL-ExecBench, aiter), its interval is "
        "unknown (`null` in JSON, “spread unknown” on pages): it is ranked by its figure alone, as a point."
    ),
    anchor="interval",
    written="702.1–750.3 µs (± the source's noise); one unit for both ends, four significant figures",
    statistic="as named by its kind; an interval always contains its figure",
    comes_from=(
        "computed by the registry from what the source publishes with each figure, or from the source's "
        "repeated measurements"
    ),
    example="/workloads/l1-040-conv2d-residual-block",
)
RANK_RANGE = FigureKind(
    key="rank_range",
    label="Rank",
    unit="",
    number_type="integer",
    definition=(
        "The places a run could hold in its comparison group given the intervals: two figures are distinct when "
        "their intervals do not overlap. lo = 1 + the rows whose interval lies entirely below (faster than) the "
        "row's; hi = the rows whose interval does not lie entirely above it, the row included; the row's place "
        "by figure always lies in [lo, hi]. Written “2” where the place is certain, “=2” where rows share the "
        "range and can only swap places among themselves, “1–3” otherwise. A #1 whose interval overlaps the "
        "next is “#1, tied with N”; a row is distinct from #1 only where its interval lies entirely above #1's. "
        "A record (a new #1) counts only where the new figure's interval lies entirely below the interval of "
        "every earlier eligible run of the group; between figures of unknown spread, strictly faster is enough."
    ),
    anchor="rank-range",
    written="1, =2 or 1–3; the headline “#1, tied with 2”",
    statistic="pairwise comparison of intervals within one comparison group",
    comes_from="computed by the registry (`kernelindex/uncertainty.py`)",
    example="/workloads/l1-040-conv2d-residual-block",
)
FIGURES: tuple[FigureKind, ...] = (
    LATENCY,
    SOL_SCORE,
    SHARE_OF_BOUND,
    TIMES_REFERENCE,
    VS_BEST,
    CASES_FASTER,
    INTERVAL,
    RANK_RANGE,
)
# A source's own score by the metric key it publishes, so that a page shows it under its own name.
SOURCE_SCORES: dict[str, FigureKind] = {SOL_SCORE.key: SOL_SCORE}


@dataclass(frozen=True)
class Bound:
    """A bound a share is taken of: its short name (in a label) and what it is (in a sentence)."""

    key: str
    name: str  # "datasheet": the words in "% of SOL bound (datasheet)"
    description: str


# The speed of light from the GPU's datasheet peaks (bandwidth and compute), as a rerun computes it.
DATASHEET = Bound(
    key="datasheet",
    name="datasheet",
    description="the speed of light from the GPU's datasheet peaks (memory bandwidth, compute)",
)
# SOL-ExecBench's own per-case T_SOL, published for the B200 with each kernel.
SOL_EXECBENCH = Bound(
    key="sol-execbench",
    name="SOL-ExecBench T_SOL",
    description="SOL-ExecBench's per-case speed-of-light bounds (T_SOL) for its GPU, geometric mean over the cases",
)
# The ceilings the rerun runner measured in its session: a yardstick some kernels beat, not a limit.
MEASURED_CEILINGS = Bound(
    key="measured-ceilings",
    name="measured ceilings",
    description="the bandwidth and compute ceilings the rerun runner measured in its session",
)
BOUNDS = {bound.key: bound for bound in (DATASHEET, SOL_EXECBENCH, MEASURED_CEILINGS)}


def share_words(bound: Bound) -> str:
    """What a share of ``bound`` is a share of: "of SOL bound (datasheet)", "of measured ceilings"."""
    if bound is MEASURED_CEILINGS:
        return f"of {bound.name}"
    return f"{SHARE_OF_BOUND.label.removeprefix('% ')} ({bound.name})"


def share_label(bound: Bound) -> str:
    """The heading of a share of ``bound``: "% of SOL bound (datasheet)"."""
    return f"% {share_words(bound)}"


# --- Numbers ----------------------------------------------------------------------------


def significant(value: float, figures: int = RATIO_FIGURES) -> str:
    """``value`` to ``figures`` significant figures in plain notation: 0.00440, 4.40, 44.0, 440, 4400."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = figures - 1 - math.floor(math.log10(abs(value)))
    rounded = round(value, decimals)
    # Rounding may carry into one more digit (9.996 → 10.0): count the decimals again.
    decimals = figures - 1 - math.floor(math.log10(abs(rounded)))
    return f"{rounded:.{max(decimals, 0)}f}"


def source_figures(value: float) -> int:
    """How many significant figures a source's number carries as written (0.0044 → 2), at most
    ``LATENCY_FIGURES``."""
    digits = Decimal(repr(value)).normalize().as_tuple().digits
    return max(1, min(LATENCY_FIGURES, len(digits)))


# --- Latency ----------------------------------------------------------------------------


def latency_unit(values_ns: Iterable[float | None]) -> str:
    """The one unit a column of latencies is written in: the largest in which its median is at least 1."""
    present = [value for value in values_ns if value is not None and value > 0]
    if not present:
        return "µs"
    middle = statistics.median(present)
    return next((name for name, size in reversed(UNITS) if middle >= size), "ns")


def latency_number(ns: float, unit: str, figures: int = LATENCY_FIGURES) -> str:
    """``ns`` in ``unit`` as a number alone ("209.8"), to ``figures`` significant figures; never finer
    than a nanosecond, the resolution latencies are stored in."""
    text = significant(ns / UNIT_SIZES[unit], figures)
    if unit == "ns" and "." in text:
        return str(round(ns))
    return text


def latency_in(ns: float, unit: str, figures: int = LATENCY_FIGURES) -> str:
    """``ns`` written in ``unit`` ("0.004400 ms"), to ``figures`` significant figures."""
    return f"{latency_number(ns, unit, figures)} {unit}"


def latency(ns: float) -> str:
    """A latency on its own, in the unit that suits it: "25.92 µs", "2.760 ms", "850 ns"."""
    # The unit of the rounded value, so that 999,999.9 ns reads "1.000 ms", not "1000 µs".
    return latency_in(ns, latency_unit([float(significant(ns, LATENCY_FIGURES))]))


@dataclass(frozen=True)
class LatencyColumn:
    """A column (or table) of latencies written in one unit: ``texts[i]`` is ``values[i]`` with the
    unit ("–" where missing), ``numbers[i]`` the same without it (for a heading that names the unit)."""

    unit: str
    texts: list[str]
    numbers: list[str]


def latency_column(
    values_ns: Sequence[float | None], figures: Sequence[int] | None = None, unit: str | None = None
) -> LatencyColumn:
    """Every value of a column in one unit, chosen from the column's values (or ``unit``, where the
    values are a page of a longer column); ``figures`` caps each value's significant figures where the
    source gave fewer."""
    chosen = unit or latency_unit(values_ns)
    numbers = [
        MISSING if value is None else latency_number(value, chosen, figures[index] if figures else LATENCY_FIGURES)
        for index, value in enumerate(values_ns)
    ]
    texts = [number if number == MISSING else f"{number} {chosen}" for number in numbers]
    return LatencyColumn(unit=chosen, texts=texts, numbers=numbers)


# --- Ratios, scores and shares -----------------------------------------------------------


def ratio(value: float) -> str:
    """Every ratio on the site ("vs #1", "× reference", speed-ups): "1.00×", "12.3×", "0.512×"."""
    return f"{significant(value)}×"


def source_score(value: float) -> str:
    """A source-native score as a plain number, three decimals: "0.874" (SOL score)."""
    return f"{value:.3f}"


def sol_score(value: float | None) -> str | None:
    """SOL-ExecBench's score in its own words, "SOL score 0.874"; None where the run has none."""
    return None if value is None else f"{SOL_SCORE.label} {source_score(value)}"


def share_of_bound(bound_ns: float | None, latency_ns: float | None) -> float | None:
    """The share of a bound a latency reaches, as a percentage (T_bound ÷ T × 100); None where either
    is unknown or not positive: no bound, no share."""
    if not bound_ns or not latency_ns or bound_ns <= 0 or latency_ns <= 0:
        return None
    if not (math.isfinite(bound_ns) and math.isfinite(latency_ns)):
        return None
    return 100 * bound_ns / latency_ns


@dataclass(frozen=True)
class Share:
    """A share of a named bound a run reaches: ``percent`` of ``bound`` (T_bound ÷ T × 100)."""

    percent: float
    bound: Bound

    @property
    def label(self) -> str:
        return share_label(self.bound)

    @property
    def words(self) -> str:
        return share_words(self.bound)

    @property
    def text(self) -> str:
        return percent(self.percent)


def share(bound_ns: float | None, latency_ns: float | None, bound: Bound) -> Share | None:
    """The share of ``bound`` a latency reaches; None where the bound is not known."""
    value = share_of_bound(bound_ns, latency_ns)
    return None if value is None else Share(value, bound)


def percent(value: float) -> str:
    """A percentage: one decimal from 1 % up ("4.5 %", "87.4 %"); below 1 %, one significant figure,
    so a small share reads as what it is ("0.5 %", "0.05 %"), never "0 %"."""
    if value == 0:
        return "0 %"
    if abs(value) >= 1:
        return f"{value:.1f} %"
    return f"{significant(value, 1)} %"


def cases_faster(count: int | None, total: int | None) -> str | None:
    """ "16/16 cases faster"; None where the source gives no count."""
    if count is None or total is None:
        return None
    return f"{count}/{total} {CASES_FASTER.label}"


def times_reference(value: float | None) -> str | None:
    """ "4.05× reference"; None where the source gives no speed-up."""
    return None if value is None else f"{ratio(value)} reference"


# --- The page a reader can trust: docs/FIGURES.md, served at /figures ----------------------

INTRODUCTION = (
    "Every number KernelIndex shows is one of the kinds below. Each is labelled with what it is, its unit and "
    "its statistic, and credited to whoever measured or computed it. A source's own score keeps the source's "
    "name and definition; a share of a bound names the bound and is shown only where the bound is known."
)
JSON_NOTE = (
    "In the JSON twins and the API a figure has the same name and type everywhere: `latencyNs` (integer "
    "nanoseconds; `latency` is the text a page shows), `solScore` (a number from 0 to 1, or null; pages add "
    '`solScoreText` "0.874" and `solScoreFigure` "SOL score 0.874"), `shareOfBound` (an object '
    "`{percent, bound, label, words, text}`, or null where no bound is known; `percent` is a number, `bound` "
    "one of the bound keys above), `vsBest` (a number), `avgSpeedup` (a number). Leaderboard rows no longer carry "
    "`percentOfSol`, which wrote the SOL score as a percentage. `compare.csv` carries the same values as "
    "numbers (`shareOfBound` as its percentage), each row labelled as on the page. Every ranked row carries "
    '`rankRange` ([lo, hi]), `rankText` ("=2"), `distinctFromBest` (a boolean) and `uncertainty` (an object '
    "`{kind, low, high, text}`, `low` and `high` in integer nanoseconds like `latencyNs`, or null where unknown)."
)


def figures_markdown() -> str:
    """``docs/FIGURES.md``: every kind of figure, its definition, unit, statistic, source and an example,
    and the bounds a share may name. The repository's file is this text (a test keeps them equal)."""
    lines = [
        "# The figures KernelIndex shows",
        "",
        INTRODUCTION,
        "",
        "Served at `/figures` (JSON: `/figures.json`); defined once in `kernelindex/figures.py`.",
        "",
        "| figure | unit | written as |",
        "|---|---|---|",
        *(f"| [{kind.label}](#{kind.anchor}) | {kind.unit or 'none'} | {kind.written} |" for kind in FIGURES),
        "",
    ]
    for kind in FIGURES:
        lines += [
            f'<a id="{kind.anchor}"></a>',
            "",
            f"## {kind.label}",
            "",
            kind.definition,
            "",
            f"- **Unit:** {kind.unit or 'none (a plain number)'}; JSON type {kind.number_type}",
            f"- **Written as:** {kind.written}",
            f"- **Statistic:** {kind.statistic}",
            f"- **Comes from:** {kind.comes_from}",
            f"- **Example:** [`{kind.example}`]({kind.example})",
            "",
        ]
    lines += [
        "## Bounds a share names",
        "",
        *(f"- **{bound.name}** (`{bound.key}`): {bound.description}." for bound in BOUNDS.values()),
        "",
        "## Types",
        "",
        JSON_NOTE,
        "",
    ]
    return "\n".join(lines)
