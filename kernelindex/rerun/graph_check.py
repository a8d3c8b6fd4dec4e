"""The graph-replay check of a blocking-kernel figure (pure; no torch).

With `--graph-check` the runner times a case a second time by CUDA-graph replay, which takes the host
out of the loop entirely. The blocking kernel hides the host's launch work only while the host keeps
ahead of the GPU: a network whose launches take longer than its kernels (many small layers, Python
between them) starves the GPU after the block is released, and its figure then measures the host.
Where the two figures disagree beyond the protocol's noise bound, the case is flagged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelindex.rerun import protocol_v2, stats

# The same bound as v2's noise gate between trial medians: two timings of one call in one session
# that agree on the device's work agree within it.
BOUND = protocol_v2.NOISE_BOUND

AGREES, HOST_BOUND, GRAPH_SLOWER, NOT_CAPTURED = "agrees", "host-bound", "graph-slower", "not-captured"


@dataclass(frozen=True)
class GraphCheck:
    """One case's check: `state` is one of AGREES, HOST_BOUND (the blocking-kernel figure is above the
    replay figure beyond `bound`), GRAPH_SLOWER (the replay is slower beyond it), NOT_CAPTURED."""

    case_index: int
    state: str
    blocking_median_ns: int
    replay_median_ns: int | None
    ratio: float | None  # blocking-kernel median / replay median
    bound: float
    error: str | None = None

    @property
    def flagged(self) -> bool:
        return self.state in (HOST_BOUND, GRAPH_SLOWER)


def check_case(index: int, case: Mapping[str, Any]) -> GraphCheck | None:
    """The check of one bundle case, or None where the case carries no usable replay figure (not asked
    for, timed by replay already, or malformed: a hostile bundle gets no flag rather than an error)."""
    measurement, timing = case.get("measurement"), case.get("timing")
    if not isinstance(measurement, Mapping) or not isinstance(timing, Mapping):
        return None
    replay = measurement.get("graphReplay")
    blocking = timing.get("medianNs")
    if not isinstance(replay, Mapping) or measurement.get("method") != protocol_v2.BLOCKING_KERNEL:
        return None
    if not isinstance(blocking, int) or not _positive_int(blocking):
        return None
    if isinstance(replay.get("error"), str):
        return GraphCheck(index, NOT_CAPTURED, blocking, None, None, BOUND, error=replay["error"][:500])
    samples = replay.get("samplesNs")
    if not isinstance(samples, list) or not samples or not all(isinstance(t, list) for t in samples):
        return None
    flat = [s for trial in samples for s in trial]
    if not flat or not all(_positive_int(s) for s in flat):
        return None
    replay_ns = round(stats.median(flat))
    ratio = blocking / replay_ns
    state = HOST_BOUND if ratio - 1 > BOUND else GRAPH_SLOWER if 1 / ratio - 1 > BOUND else AGREES
    return GraphCheck(index, state, blocking, replay_ns, ratio, BOUND)


def check_cases(cases: Any) -> list[GraphCheck]:
    """The checks of a bundle's cases that carry one, in case order."""
    if not isinstance(cases, list):
        return []
    return [c for i, case in enumerate(cases) if isinstance(case, Mapping) and (c := check_case(i, case))]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**15
