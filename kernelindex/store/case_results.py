"""A run's per-case latencies and the framework facts a sweep source records with them, read
straight from the stored manifest JSON: the regression refresh reads every run of a source,
where validating each manifest again would cost more than the reading itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kernelindex.store.sweeps import CENTRES

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


def run_cases(manifest_json: str) -> RunCases:
    spec: dict[str, Any] = json.loads(manifest_json).get("spec", {})
    metrics = (spec.get("sourceNative") or {}).get("metrics") or {}
    results: list[dict[str, Any]] = spec.get("caseResults") or []
    statistic = case_statistic([result.get("latencyNs") or {} for result in results])
    latencies = {
        int(result["caseIndex"]): int(result["latencyNs"][statistic])
        for result in results
        if statistic in (result.get("latencyNs") or {})
    }
    repeats = {
        int(result["caseIndex"]): repeated
        for result in results
        if isinstance(repeated := (result.get("metrics") or {}).get(REPEATED), int) and repeated > 0
    }
    return RunCases(
        repeats=repeats,
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
