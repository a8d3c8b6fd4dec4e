"""Protocol v2 timing on the CPU: the order of block / record / release with a stand-in device, the
graph fallback, the noise gate, the bootstrap, and the blocking kernel itself under Triton's interpreter.
The same loop on a real GPU is tested in test_rerun_gpu.py."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelindex.rerun import protocol_v2, stats
from kernelindex.rerun.bundle import check_json_value
from kernelindex.rerun.timing_v2 import Call, TimedOut, run_trials, time_case_v2
from tests.fake_device import Device

REPO = Path(__file__).resolve().parents[1]


def _fn(device: Device) -> Any:
    def fn(x: torch.Tensor) -> torch.Tensor:
        device.log.append("call")
        return x * 2

    return fn


def _clocks() -> dict[str, Any]:
    return {"via": "test", "clocks.sm": 1980}


def test_v2_blocks_before_the_start_event_and_releases_only_after_the_stop_event() -> None:
    device = Device()
    x = torch.ones(3)
    checked: list[torch.Tensor] = []

    def check(outputs: torch.Tensor) -> list[dict[str, Any]]:
        device.log.append("check")
        checked.append(outputs.clone())
        return [{"name": "out", "passed": True}]

    calls = [Call(lambda: _fn(device)(x), [x])]
    samples, checks, clocks = run_trials(
        calls, device, device, check=check, sample_clocks=_clocks, event=device.event, sync=device.sync,
        warmup=2, iterations=3, trials=2,
    )  # fmt: skip
    assert [len(t) for t in samples] == [3, 3] and samples[0][0] == 2000  # 0.002 ms in integer ns
    per_call = ["flush", "block {}", "record", "call", "record", "release {}"]
    trial = ["arm"] + [step.format(slot) for slot in range(5) for step in per_call]
    trial.insert(trial.index("release 4") + 1, "check")  # the last timed call's outputs, before poisoning
    assert device.log == [*trial, "sync", *trial, "sync"]  # warm-ups exactly like timed calls
    assert checks == [[{"name": "out", "passed": True}]] * 2 and len(clocks) == 3  # before, after each trial
    assert all(torch.equal(c, torch.full((3,), 2.0)) for c in checked)
    assert torch.equal(x, torch.ones(3))  # inputs never poisoned


def test_v2_a_timed_out_block_stops_the_trial_at_once() -> None:
    device = Device(timeout_slot=1)
    x = torch.ones(2)
    calls = [Call(lambda: _fn(device)(x), [x])]
    with pytest.raises(TimedOut, match="call 1"):
        run_trials(
            calls, device, device, check=lambda o: [], sample_clocks=_clocks, event=device.event,
            sync=device.sync, warmup=2, iterations=3, trials=1,
        )  # fmt: skip
    assert device.log.count("call") == 2  # nothing queued after the slot that gave up


def test_v2_falls_back_to_graph_replay_when_the_block_times_out() -> None:
    device = Device(timeout_slot=0)
    captured: list[int] = []

    def capture(fn: Any, input_sets: Any) -> list[Call]:
        device.timeout_slot = None  # a single replay never keeps the host past the block
        captured.append(len(input_sets))
        return [Call(functools.partial(fn, *s), s) for s in input_sets]

    sets = [[torch.ones(2)], [torch.ones(2) * 3]]
    timing = time_case_v2(
        _fn(device), sets, device, device, check=lambda o: [], sample_clocks=_clocks, event=device.event,
        sync=device.sync, capture=capture, warmup=1, iterations=4, trials=3,
    )  # fmt: skip
    assert timing.method == protocol_v2.CUDA_GRAPH and captured == [2]
    assert "timedOut" in timing.attempts[0] and timing.attempts[1]["method"] == protocol_v2.CUDA_GRAPH
    assert timing.passed_gate and [len(t) for t in timing.samples] == [4, 4, 4]


def test_v2_graph_only_times_replay_from_the_start_without_the_blocking_method() -> None:
    device = Device()
    captured: list[int] = []

    def capture(fn: Any, input_sets: Any) -> list[Call]:
        captured.append(len(input_sets))
        return [Call(functools.partial(fn, *s), s) for s in input_sets]

    sets = [[torch.ones(2)], [torch.ones(2) * 3]]
    timing = time_case_v2(
        _fn(device), sets, device, device, check=lambda o: [], sample_clocks=_clocks, event=device.event,
        sync=device.sync, capture=capture, graph_only=True, warmup=1, iterations=4, trials=3,
    )  # fmt: skip
    assert timing.method == protocol_v2.CUDA_GRAPH and captured == [2]
    assert [a["method"] for a in timing.attempts] == [protocol_v2.CUDA_GRAPH]
    assert timing.passed_gate and [len(t) for t in timing.samples] == [4, 4, 4]


def _durations(*trial_ms: float, calls: int) -> Iterator[float]:
    for ms in trial_ms:
        yield from [ms] * calls


def test_v2_noise_gate_measures_again_then_accepts_or_rejects() -> None:
    sets = [[torch.ones(2)]]
    # attempt 1: trial medians 10, 10, 12 us (20 % apart): measured again; attempt 2 agrees (5 %)
    device = Device(_durations(0.010, 0.010, 0.012, 0.010, 0.0105, 0.010, calls=4))
    timing = time_case_v2(
        _fn(device), sets, device, device, check=lambda o: [], sample_clocks=_clocks, event=device.event,
        sync=device.sync, warmup=1, iterations=4, trials=3,
    )  # fmt: skip
    assert timing.passed_gate and timing.method == protocol_v2.BLOCKING_KERNEL
    assert [a["passedNoiseGate"] for a in timing.attempts] == [False, True]
    assert timing.attempts[0]["trialSpread"] == pytest.approx(0.2)
    assert timing.samples == [[10_000] * 4, [10_500] * 4, [10_000] * 4]  # the accepted attempt
    assert len(timing.clocks) == 8  # both attempts' readings are kept

    device = Device(_durations(0.010, 0.010, 0.012, 0.010, 0.013, 0.010, calls=4))
    timing = time_case_v2(
        _fn(device), sets, device, device, check=lambda o: [], sample_clocks=_clocks, event=device.event,
        sync=device.sync, warmup=1, iterations=4, trials=3,
    )  # fmt: skip
    assert not timing.passed_gate and len(timing.attempts) == protocol_v2.NOISE_ATTEMPTS


def test_stats_bootstrap_is_seeded_and_brackets_the_median() -> None:
    samples = [1000 + (i * 37) % 200 for i in range(150)]
    low, high = stats.bootstrap_median_interval(samples, resamples=500, confidence=0.95, seed=7)
    assert (low, high) == stats.bootstrap_median_interval(samples, resamples=500, confidence=0.95, seed=7)
    assert low <= stats.median(samples) <= high and high - low < 100
    assert stats.bootstrap_median_interval([5] * 10, resamples=50, confidence=0.9, seed=1) == (5, 5)
    for bad in ({"resamples": 0, "confidence": 0.9}, {"resamples": 10, "confidence": 1.0}):
        with pytest.raises(ValueError):
            stats.bootstrap_median_interval(samples, seed=1, **bad)
    assert stats.trial_spread([[10, 10], [11, 11], [12, 12]]) == pytest.approx(0.2)
    assert stats.passes_noise_gate([[100], [104]], 0.05) and not stats.passes_noise_gate([[100], [106]], 0.05)


def test_protocol_v2_spec_is_signable_and_its_rules_state_every_number() -> None:
    spec = protocol_v2.protocol_spec()
    check_json_value(spec)
    assert spec["version"] == "2" and spec["name"] == "kernelindex-rerun"
    text = " ".join(rule for _, rule in protocol_v2.RULES)
    for number in (
        f"{protocol_v2.BLOCK_MAX_POLLS:,}", f"{protocol_v2.NOISE_BOUND:.0%}", str(protocol_v2.BOOTSTRAP_RESAMPLES),
        str(protocol_v2.SEED), str(protocol_v2.KERNELBENCH_ATOL), f"{protocol_v2.ROTATION_MEMORY_FRACTION:.0%}",
        protocol_v2.BLOCKING_KERNEL, protocol_v2.CUDA_GRAPH,
    ):  # fmt: skip
        assert number in text, number


def test_blocking_kernel_waits_for_its_flag_and_marks_a_time_out() -> None:
    """The kernel itself, run by Triton's interpreter on CPU tensors: a set flag passes at once, an unset
    one is polled `max_polls` times and then marked timed out."""
    script = (
        "import torch\n"
        "from kernelindex.rerun.blocking import _wait_for_flag\n"
        "flags, marks = torch.tensor([1, 0], dtype=torch.int32), torch.zeros(2, dtype=torch.int32)\n"
        "for slot in (0, 1):\n"
        "    _wait_for_flag[(1,)](flags[slot:slot + 1], marks[slot:slot + 1], 20)\n"
        "print(marks.tolist())\n"
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, 1]
