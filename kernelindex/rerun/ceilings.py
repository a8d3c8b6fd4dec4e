"""Ceilings measured in the same run: copy bandwidth, bf16 and fp32 matrix rates, fp32 FMA rate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelindex.rerun import protocol, stats


def _time(fn: Callable[[], Any]) -> list[int]:
    for _ in range(protocol.CEILING_WARMUP):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(protocol.CEILING_REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(max(1, round(start.elapsed_time(end) * 1e6)))
    return samples


def _record(amount: float, unit: str, samples: list[int], method: str) -> dict[str, Any]:
    med = stats.median(samples)
    return {
        "value": amount / (med * 1e-9),
        "unit": unit,
        "medianNs": round(med),
        "samplesNs": samples,
        "method": method,
    }


def copy_rate(device: torch.device) -> dict[str, Any]:
    n = protocol.COPY_BYTES // 4
    src = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    samples = _time(lambda: dst.copy_(src))
    return _record(
        2 * n * 4,
        "bytes/s",
        samples,
        f"device-to-device copy of {n * 4} bytes (torch copy_), bytes read + bytes written per second",
    )


def matmul_rate(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    size = protocol.MATMUL_SIZE
    a = torch.randn((size, size), device=device, dtype=dtype)
    b = torch.randn((size, size), device=device, dtype=dtype)
    out = torch.empty((size, size), device=device, dtype=dtype)
    samples = _time(lambda: torch.mm(a, b, out=out))
    name = str(dtype).removeprefix("torch.")
    tf32 = " (TF32 off)" if dtype == torch.float32 else ""
    return _record(
        2 * size**3,
        "FLOP/s",
        samples,
        f"torch.mm of two random {size}x{size} {name} matrices{tf32}, 2*n^3 FLOPs",
    )


def fma_rate(device: torch.device) -> dict[str, Any]:
    from kernelindex.rerun.fma import FMA_METHOD, launch_fma

    out, flops, launch = launch_fma(device)
    samples = _time(launch)
    del out
    return _record(flops, "FLOP/s", samples, FMA_METHOD)


def measure_ceilings(device: torch.device) -> dict[str, Any]:
    """All four ceilings; one that fails is recorded with its error and the others go on."""
    results: dict[str, Any] = {}
    jobs: dict[str, Callable[[], dict[str, Any]]] = {
        "copyBytesPerSecond": lambda: copy_rate(device),
        "bf16MatmulFlops": lambda: matmul_rate(device, torch.bfloat16),
        "fp32MatmulFlops": lambda: matmul_rate(device, torch.float32),
        "fp32FmaFlops": lambda: fma_rate(device),
    }
    for name, job in jobs.items():
        try:
            results[name] = job()
        except Exception as exc:
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        torch.cuda.empty_cache()
    return results
