"""A run's per-case latencies and the framework facts a sweep source records with them, read
straight from the stored manifest JSON: the regression refresh reads every run of a source,
where validating each manifest again would cost more than the reading itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kernelindex.store.by_spec import BySpec
from kernelindex.store.sweeps import CENTRES
from kernelindex.uncertainty import Uncertainty, figure_uncertainty

# A case's second measurement, where a source measured it twice (AIConfigurator's tables).
REPEATED = "repeated_latency_ns"


@dataclass(frozen=True)
class RunCases:
    """The per-case latencies of one run (case index → ns, in ``statistic``) and, where its
    source names them (AIConfigurator), the framework, version and kernel it measured."""

    framework: str | None
    version: str | None
    kernel: str | None
    statistic: str | None
    latencies: dict[int, int]
    # Case index → the latency of a second measurement of that case, where the source has one.
    repeats: dict[int, int]
    # Case index → the interval the case's own figures give it (percentiles, a bootstrap interval).
    spreads: dict[int, Uncertainty] = field(default_factory=dict)


# ``run_cases`` of a stored run, kept by digest for the runs pages read again and again: a sweep's
# leaderboard parsed its runs' manifests (3,440 cases each for the largest) in 11 % of its render.
# Shared between requests, so read it, never change it. Bounded: the largest runs hold a few
# hundred kB.
cached_run_cases: BySpec[RunCases] = BySpec(lambda run: run_cases(run.manifest_json), size=128)


def run_cases(manifest_json: str) -> RunCases:
    spec: dict[str, Any] = json.loads(manifest_json).get("spec", {})
    metrics = (spec.get("sourceNative") or {}).get("metrics") or {}
    results: list[dict[str, Any]] = spec.get("caseResults") or []
    centres = [result.get("latencyNs") or {} for result in results]
    statistic = case_statistic(centres)
    # One pass over the cases: a page's ranking and the regression refresh read every run's.
    latencies: dict[int, int] = {}
    repeats: dict[int, int] = {}
    spreads: dict[int, Uncertainty] = {}
    for result, centre in zip(results, centres, strict=True):
        if statistic is not None and statistic in centre:
            latencies[int(result["caseIndex"])] = int(centre[statistic])
            if len(centre) > 1 and (spread := figure_uncertainty(centre, statistic)) is not None:
                spreads[int(result["caseIndex"])] = spread
        repeated = (result.get("metrics") or {}).get(REPEATED)
        if isinstance(repeated, int) and repeated > 0:
            repeats[int(result["caseIndex"])] = repeated
    return RunCases(
        repeats=repeats,
        spreads=spreads,
        framework=_text(metrics.get("framework")),
        version=_text(metrics.get("version")),
        kernel=_text(metrics.get("kernel_source")),
        statistic=statistic,
        latencies=latencies,
    )


def case_statistic(latencies: list[dict[str, Any]]) -> str | None:
    """The statistic a run is compared by at each case: as the sweep chart draws it (the first of
    ``CENTRES`` every case carries), else the first its first case names."""
    if not latencies:
        return None
    return next((stat for stat in CENTRES if all(stat in case for case in latencies)), next(iter(latencies[0]), None))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
