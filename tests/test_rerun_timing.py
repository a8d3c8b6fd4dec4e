"""The timing loop and the ceilings' arithmetic on the CPU, with a stand-in for CUDA events.

The stand-in only checks the bookkeeping (which inputs each call gets, how many samples, what is flushed
and when, the rate arithmetic); real CUDA-event timing runs only on a GPU.
"""

from __future__ import annotations

import time

import pytest
import torch

from kernelindex.rerun import ceilings, protocol, timing


class _Event:
    """Records a host clock instead of a device timestamp."""

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        self.at: float | None = None

    def record(self) -> None:
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _Event) -> float:
        assert self.at is not None and end.at is not None
        return (end.at - self.at) * 1e3 + 1e-3  # milliseconds, never zero


@pytest.fixture
def fake_cuda(monkeypatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append("sync"))
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: calls.append(f"spin {cycles}"), raising=False)
    return calls


def test_timing_rotates_inputs_flushes_and_keeps_every_sample(fake_cuda: list[str]) -> None:
    inputs = [torch.arange(4.0) + 1, torch.ones(3)]
    sets = timing.rotated_inputs(inputs, sets=3)
    assert sets[0][0] is inputs[0] and sets[1][0] is not inputs[0] and torch.equal(sets[2][0], inputs[0])
    flush = timing.flush_buffer(64, "cpu")
    assert flush.numel() * 4 == protocol.L2_FLUSH_FACTOR * 64
    seen: list[int] = []
    returned: list[torch.Tensor] = []

    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        assert float(flush.abs().sum()) == 0  # written (zeroed) by the timer just before this call
        flush.fill_(1.0)
        seen.append(next(i for i, s in enumerate(sets) if s[0] is a))
        returned.append(a * 2)
        return returned[-1], torch.arange(3)

    samples = timing.time_case(fn, sets, flush, warmup=2, iterations=5, trials=2)

    assert [len(t) for t in samples] == [5, 5]
    assert all(isinstance(s, int) and s > 0 for t in samples for s in t)
    assert seen == [i % 3 for i in range(14)]  # (2 warm-ups + 5 timed) x 2 trials, cycling the sets
    assert all(bool(out.isnan().all()) for out in returned)  # every output poisoned once timed
    assert torch.equal(sets[1][0], inputs[0])  # the inputs themselves are never touched
    assert fake_cuda.count("sync") == 2
    assert fake_cuda.count(f"spin {protocol.PRE_LAUNCH_SPIN_CYCLES}") == 10
    aliasing = [torch.ones(2), torch.ones(2)]
    timing.time_case(lambda a, b: (a, b[:1]), [aliasing], flush, warmup=1, iterations=1, trials=1)
    assert bool((aliasing[0] == 1).all()) and bool((aliasing[1] == 1).all())  # an output that is an input


def test_ceilings_rate_arithmetic(fake_cuda: list[str], monkeypatch) -> None:
    monkeypatch.setattr(protocol, "COPY_BYTES", 4096)
    monkeypatch.setattr(protocol, "MATMUL_SIZE", 16)
    copy = ceilings.copy_rate(torch.device("cpu"))
    assert copy["unit"] == "bytes/s" and len(copy["samplesNs"]) == protocol.CEILING_REPEATS
    assert copy["value"] == pytest.approx(2 * 4096 / (copy["medianNs"] * 1e-9), rel=1e-3)
    mm = ceilings.matmul_rate(torch.device("cpu"), torch.float32)
    assert mm["unit"] == "FLOP/s" and "TF32 off" in mm["method"]
    assert mm["value"] == pytest.approx(2 * 16**3 / (mm["medianNs"] * 1e-9), rel=1e-3)


def test_environment_reads_the_device_and_nvidia_smi(monkeypatch) -> None:
    from types import SimpleNamespace

    from kernelindex.rerun import environment

    line = "NVIDIA H200, GPU-1234, 580.159.04, P0, 1980, 1980, 3201, 3201, 120.5, 700.00, 35, Enabled, Default"
    parsed = environment.parse_smi_line(line)
    assert parsed["clocks.sm"] == 1980 and parsed["power.draw"] == 120.5 and parsed["pstate"] == "P0"
    with pytest.raises(ValueError):
        environment.parse_smi_line("1, 2")
    other = {**parsed, "uuid": "GPU-9999"}
    assert environment.pick_smi_row([other, parsed], 0, "1234") is parsed  # by UUID first
    assert environment.pick_smi_row([other, parsed], 1, None) is parsed  # else by position
    with pytest.raises(ValueError):
        environment.pick_smi_row([parsed], 3, "77")

    props = SimpleNamespace(
        name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, total_memory=150_754_820_096,
        L2_cache_size=62_914_560,
    )  # fmt: skip
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(environment, "smi_query", lambda index, uuid: {"via": "nvidia-smi", **parsed})
    env = environment.environment(torch.device("cuda", 0))
    assert env["gpu"]["architecture"] == "sm_90" and env["gpu"]["smCount"] == 132
    assert env["gpu"]["l2CacheBytes"] == 62_914_560 and env["gpu"]["uuid"] == "GPU-1234"
    assert env["gpu"]["propertiesClockKHz"] is None  # absent from this torch's properties: recorded as such
    assert env["driverVersion"] == "580.159.04" and env["clocksAtStart"]["clocks.max.sm"] == 1980
    assert env["software"]["torch"] == torch.__version__ and env["hostname"]


def test_environment_without_nvidia_smi_or_nvml_says_why(monkeypatch) -> None:
    import builtins
    import shutil

    from kernelindex.rerun import environment

    real_import = builtins.__import__

    def no_pynvml(name, *args, **kwargs):
        if name == "pynvml":
            raise ImportError("no pynvml here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    found = environment.smi_query(0)
    assert found["via"] == "none" and "nvidia-smi not found" in found["error"] and "pynvml" in found["error"]
