"""CUDA-event timing of one implementation on one case: cold L2, rotated inputs, warm-ups, trials."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from kernelindex.rerun import protocol


def flush_buffer(l2_bytes: int, device: torch.device | str) -> torch.Tensor:
    """A buffer of L2_FLUSH_FACTOR x the L2 size; writing it evicts whatever the last iteration left."""
    return torch.empty(max(1, protocol.L2_FLUSH_FACTOR * l2_bytes // 4), dtype=torch.float32, device=device)


def rotated_inputs(inputs: Sequence[Any], sets: int = protocol.ROTATION_SETS) -> list[list[Any]]:
    """`sets` independent copies of the inputs (the first is the original), cycled through by the timer;
    inputs that are not tensors (a size, a flag) are shared."""
    return [list(inputs)] + [[_copy(t) for t in inputs] for _ in range(sets - 1)]


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def poison(outputs: Any, inputs: Sequence[Any] = ()) -> None:
    """Fill an implementation's float outputs with NaN before they are freed, so that memory the caching
    allocator hands to the next implementation never holds correct results: an implementation that
    leaves elements unwritten fails its correctness check instead of inheriting them. An output that
    shares storage with an input is left alone."""
    kept = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}
    tensors = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.untyped_storage().data_ptr() not in kept:
            t.fill_(float("nan"))


def _spin() -> Callable[[], None]:
    sleep = getattr(torch.cuda, "_sleep", None)
    if protocol.PRE_LAUNCH_SPIN_CYCLES <= 0 or sleep is None:
        return lambda: None
    return lambda: sleep(protocol.PRE_LAUNCH_SPIN_CYCLES)


def time_case(
    fn: Callable[..., Any],
    input_sets: Sequence[Sequence[torch.Tensor]],
    flush: torch.Tensor,
    *,
    warmup: int = protocol.WARMUP_ITERATIONS,
    iterations: int = protocol.TIMED_ITERATIONS,
    trials: int = protocol.TRIALS,
) -> list[list[int]]:
    """Raw samples in integer nanoseconds, one list per trial.

    Per iteration: write the flush buffer, spin the GPU briefly (so the host queues the launches ahead of
    the clock), record the start event, call `fn` on the next input set, record the end event, then
    poison the outputs. The flush, spin and poison sit outside the events. Events are read after each
    trial's final synchronize.
    """
    spin = _spin()
    k = 0
    samples: list[list[int]] = []
    for _ in range(trials):
        for _ in range(warmup):
            flush.zero_()
            inputs = input_sets[k % len(input_sets)]
            poison(fn(*inputs), inputs)
            k += 1
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
        for i in range(iterations):
            inputs = input_sets[k % len(input_sets)]
            k += 1
            flush.zero_()
            spin()
            starts[i].record()
            outputs = fn(*inputs)
            ends[i].record()
            poison(outputs, inputs)
        torch.cuda.synchronize()
        samples.append([max(1, round(s.elapsed_time(e) * 1e6)) for s, e in zip(starts, ends, strict=True)])
    return samples
