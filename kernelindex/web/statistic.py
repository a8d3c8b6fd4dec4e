"""What a run's figure is, in words: "geometric mean of case medians", "mean of 100 trials".

A run's manifest names one primary statistic (``mean``, ``median``, ``geomean``), but a suite
figure is two statistics in a row: one per case over its timed samples, then one across the
cases. The manifest and its protocol say the first; how a comparability family aggregates a
suite is stated by its protocol's notes (or, for SOL-ExecBench, inferred from its figures), so it
is written down here once, and the hero figure, the measurements and the footnotes all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.manifests import BenchmarkProtocol, BenchmarkRun

# How each comparability family aggregates a suite's per-case figures, and whether that is inferred.
SUITE_AGGREGATES: dict[str, tuple[str, bool]] = {
    "sol_execbench_leaderboard": ("geometric mean", True),
    "kernelindex_rerun": ("geometric mean", False),
    "kernelindex_rerun_faithful": ("geometric mean", False),
    "liger_kernel_benchmark": ("geometric mean", False),
}
# Statistic keys as the manifests write them, in words; a key not listed is shown as written.
STATISTIC_WORDS = {
    "mean": ("mean", "means"),
    "median": ("median", "medians"),
    "geomean": ("geometric mean", "geometric means"),
    "min": ("fastest", "fastest"),
    "max": ("slowest", "slowest"),
}
# The other latency keys a run may carry, for the measurements list.
TIMING_LABELS = {
    "mean": "Mean",
    "median": "Median",
    "geomean": "Geometric mean",
    "min": "Fastest",
    "max": "Slowest",
    "p10": "10th percentile",
    "p20": "20th percentile",
    "p80": "80th percentile",
    "p90": "90th percentile",
}


@dataclass(frozen=True)
class StatisticName:
    text: str  # "geometric mean of case medians"
    published_as: str  # the primary statistic as the manifest names it: "mean"
    inferred: bool  # the suite aggregate is inferred from the source's figures, not published


def _words(key: str) -> tuple[str, str]:
    return STATISTIC_WORDS.get(key, (key.replace("_", " "), key.replace("_", " ")))


def _case_statistic(run: BenchmarkRun) -> str | None:
    """The per-case statistic a suite run's ``caseResults`` carry ("median"), if it has any."""
    for result in run.spec.case_results or []:
        for key in ("median", "mean"):
            if key in result["latencyNs"]:
                return key
    return None


def _samples(protocol: BenchmarkProtocol) -> str:
    """ "of 100 trials", "of 150 samples" or "" where the protocol does not say how many."""
    measurement = protocol.spec.measurement
    trials, iterations = measurement.trials, measurement.timed_iterations
    if trials and iterations and iterations > 1:
        return f" of {trials * iterations} samples"
    if trials:
        return f" of {trials} trials"
    return ""


def statistic_name(run: BenchmarkRun, protocol: BenchmarkProtocol, case_count: int) -> StatisticName:
    """The run's primary figure named as it was computed.

    A run of one case (a one-case workload, or one case of a suite) is its statistic over the
    timed samples; a suite run is its family's aggregate over the cases' own statistic.
    """
    primary = run.spec.timing.primary_statistic
    aggregate = SUITE_AGGREGATES.get(protocol.spec.comparability.family)
    if run.spec.case_index is not None or case_count <= 1:
        return StatisticName(f"{_words(primary)[0]}{_samples(protocol)}", primary, inferred=False)
    if aggregate is None and primary != "geomean":
        return StatisticName(f"{_words(primary)[0]} over {case_count} cases", primary, inferred=False)
    how, inferred = aggregate or ("geometric mean", False)
    # A suite figure's own statistic is the per-case one, unless it names the aggregate or is a guess.
    per_case = _case_statistic(run)
    if per_case is None and primary != "geomean" and not inferred:
        per_case = primary
    of_cases = f"case {_words(per_case)[1]}" if per_case else "case latencies"
    return StatisticName(f"{how} of {of_cases}", primary, inferred)
