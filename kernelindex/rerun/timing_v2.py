"""Protocol v2 timing of one call on one case: blocked start, warm-ups alike, noise gate, graph fallback.

The loop talks to the device through three small things it is given, so the CPU tests can drive it
with stand-ins and check the order of every step: a `gate` (block, release, timed_out, arm; on the GPU
`blocking.BlockingGate`), an event factory (`torch.cuda.Event`) and a `sync` (`torch.cuda.synchronize`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from kernelindex.rerun import protocol_v2, stats
from kernelindex.rerun.timing import poison


class Gate(Protocol):
    def arm(self) -> None: ...
    def block(self, slot: int) -> None: ...
    def release(self, slot: int) -> None: ...
    def timed_out(self, upto: int | None = None) -> list[int]: ...


class Flush(Protocol):
    def zero_(self) -> Any: ...


class TimedOut(RuntimeError):
    """The blocking kernel gave up: the host did not queue the call in time (it waits for the GPU, or
    queues more than the GPU accepts while held)."""


@dataclass(frozen=True)
class Call:
    """One zero-argument call of the implementation and the inputs it reads (never poisoned)."""

    run: Callable[[], Any]
    inputs: Sequence[torch.Tensor]


@dataclass
class CaseTiming:
    """What the timer hands back for one case."""

    method: str
    samples: list[list[int]]  # the accepted attempt, one list per trial (integer ns)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    checks: list[list[dict[str, Any]]] = field(default_factory=list)  # per trial: the last timed call's check
    clocks: list[dict[str, Any]] = field(default_factory=list)
    passed_gate: bool = True


def eager_calls(fn: Callable[..., Any], input_sets: Sequence[Sequence[torch.Tensor]]) -> list[Call]:
    return [Call(functools.partial(fn, *inputs), inputs) for inputs in input_sets]


def graph_calls(fn: Callable[..., Any], input_sets: Sequence[Sequence[torch.Tensor]]) -> list[Call]:
    """One CUDA graph per input set, captured from `fn` (already warmed up by the caller's first call);
    replaying it returns the graph's static outputs. Raises whatever capture raises."""
    calls = []
    for inputs in input_sets:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = fn(*inputs)
        calls.append(Call(functools.partial(_replay, graph, outputs), inputs))
    return calls


def _replay(graph: Any, outputs: Any) -> Any:
    graph.replay()
    return outputs


def run_trials(
    calls: Sequence[Call],
    flush: Flush,
    gate: Gate,
    *,
    check: Callable[[Any], list[dict[str, Any]]],
    sample_clocks: Callable[[], dict[str, Any]],
    event: Callable[..., Any],
    sync: Callable[[], None],
    warmup: int = protocol_v2.WARMUP_ITERATIONS,
    iterations: int = protocol_v2.TIMED_ITERATIONS,
    trials: int = protocol_v2.TRIALS,
) -> tuple[list[list[int]], list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """(samples per trial, checks per trial, clock readings) for one attempt.

    Per call, warm-ups included: flush, block(slot), start, call, stop, release(slot), then (last timed
    call of a trial only) check the outputs, then poison them. Raises TimedOut as soon as a slot's
    blocking kernel is seen to have given up; then the samples cannot be trusted.
    """
    samples: list[list[int]] = []
    checks: list[list[dict[str, Any]]] = []
    clocks = [sample_clocks()]
    k = 0
    slots = warmup + iterations
    for trial in range(trials):
        gate.arm()
        marks = []
        trial_checks: list[dict[str, Any]] = []
        for slot in range(slots):
            call = calls[k % len(calls)]
            k += 1
            start, stop = event(enable_timing=True), event(enable_timing=True)
            flush.zero_()
            gate.block(slot)
            start.record()
            outputs = call.run()
            stop.record()
            gate.release(slot)
            if gate.timed_out(slot + 1):
                sync()
                raise TimedOut(f"the blocking kernel gave up in trial {trial}, call {slot} (warm-ups included)")
            if slot >= warmup:
                marks.append((start, stop))
            if slot == slots - 1:
                trial_checks = check(outputs)
            poison(outputs, call.inputs)
            del outputs
        sync()
        late = gate.timed_out()
        if late:
            raise TimedOut(f"the blocking kernel gave up in trial {trial}, calls {late} (warm-ups included)")
        samples.append([max(1, round(s.elapsed_time(e) * 1e6)) for s, e in marks])
        checks.append(trial_checks)
        clocks.append(sample_clocks())
    return samples, checks, clocks


def time_case_v2(
    fn: Callable[..., Any],
    input_sets: Sequence[Sequence[torch.Tensor]],
    flush: Flush,
    gate: Gate,
    *,
    check: Callable[[Any], list[dict[str, Any]]],
    sample_clocks: Callable[[], dict[str, Any]],
    event: Callable[..., Any] | None = None,
    sync: Callable[[], None] | None = None,
    capture: Callable[[Callable[..., Any], Sequence[Sequence[torch.Tensor]]], list[Call]] = graph_calls,
    graph_only: bool = False,
    **counts: int,
) -> CaseTiming:
    """Time `fn` on a case under protocol v2: the blocking-kernel method, or CUDA-graph replay when the
    blocking kernel times out; trials repeated (up to NOISE_ATTEMPTS attempts) until they pass the noise
    gate. `passed_gate` False means the last attempt still disagreed: the caller rejects the case.
    `graph_only` times CUDA-graph replay from the start (the graph check of a blocking-kernel figure)."""
    event = event or torch.cuda.Event
    sync = sync or torch.cuda.synchronize
    if graph_only:
        method, calls = protocol_v2.CUDA_GRAPH, capture(fn, input_sets)
    else:
        method, calls = protocol_v2.BLOCKING_KERNEL, eager_calls(fn, input_sets)
    timing = CaseTiming(method=method, samples=[])
    for attempt in range(protocol_v2.NOISE_ATTEMPTS):
        try:
            samples, checks, clocks = run_trials(
                calls, flush, gate, check=check, sample_clocks=sample_clocks, event=event, sync=sync, **counts
            )
        except TimedOut as exc:
            if method != protocol_v2.BLOCKING_KERNEL:
                raise
            timing.attempts.append({"method": method, "timedOut": str(exc)})
            method, calls = protocol_v2.CUDA_GRAPH, capture(fn, input_sets)
            samples, checks, clocks = run_trials(
                calls, flush, gate, check=check, sample_clocks=sample_clocks, event=event, sync=sync, **counts
            )
        spread = stats.trial_spread(samples)
        passed = stats.passes_noise_gate(samples, protocol_v2.NOISE_BOUND)
        attempt_record = {"method": method, "trialSpread": spread, "passedNoiseGate": passed, "samplesNs": samples}
        timing.attempts.append(attempt_record)
        timing.method, timing.samples, timing.passed_gate = method, samples, passed
        timing.checks += checks
        timing.clocks += clocks
        if passed or attempt == protocol_v2.NOISE_ATTEMPTS - 1:
            break
    return timing
