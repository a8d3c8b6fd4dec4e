"""The check that motivated protocol v2, runnable on any GPU: does host time leak into device time?

The same small kernel is timed twice under each protocol: called directly (light), and after the host
busy-waits `host_us` microseconds per call before launching it (host-heavy, like an implementation with a
slow Python wrapper). Device time is the same in both, so a protocol that measures device time only must
report the same median for both. Under v1 the host's wait outlasts the ~200 µs pre-launch spin and shows
up in the interval; under v2 the blocking kernel holds the GPU until the call is queued.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from kernelindex.rerun import stats
from kernelindex.rerun.timing import flush_buffer, rotated_inputs, time_case
from kernelindex.rerun.timing_v2 import time_case_v2

HOST_US = 500
ELEMENTS = 16 * 1024 * 1024


def _busy_wait(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def light(x: torch.Tensor) -> torch.Tensor:
    return torch.mul(x, 2.0)


def host_heavy(host_us: float) -> Callable[[torch.Tensor], torch.Tensor]:
    def heavy(x: torch.Tensor) -> torch.Tensor:
        _busy_wait(host_us)
        return torch.mul(x, 2.0)

    return heavy


def host_proof(device: torch.device, *, host_us: float = HOST_US, elements: int = ELEMENTS) -> dict[str, Any]:
    """Medians (integer ns) of the light and host-heavy calls under v1 and v2, and their ratios."""
    from kernelindex.rerun.blocking import BlockingGate
    from kernelindex.rerun.protocol_v2 import TIMED_ITERATIONS, WARMUP_ITERATIONS

    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 50 * 1024**2)
    flush = flush_buffer(l2, device)
    sets = rotated_inputs([torch.randn(elements, device=device)])
    gate = BlockingGate(WARMUP_ITERATIONS + TIMED_ITERATIONS)
    results: dict[str, Any] = {"hostMicroseconds": host_us, "elements": elements}
    for name, fn in (("light", light), ("hostHeavy", host_heavy(host_us))):
        v1 = time_case(fn, sets, flush)
        v2 = time_case_v2(fn, sets, flush, gate, check=lambda outputs: [], sample_clocks=lambda: {})
        results[name] = {
            "v1MedianNs": round(stats.median([s for t in v1 for s in t])),
            "v2MedianNs": round(stats.median([s for t in v2.samples for s in t])),
            "v2Method": v2.method,
        }
    for version in ("v1", "v2"):
        key = f"{version}MedianNs"
        results[f"{version}HeavyOverLight"] = results["hostHeavy"][key] / results["light"][key]
    return results
