"""The machine as found: GPU, clocks, driver and software versions. Nothing here changes any setting."""

from __future__ import annotations

import functools
import platform
import shutil
import socket
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch

SMI_FIELDS = [
    "name",
    "uuid",
    "driver_version",
    "pstate",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "clocks.max.mem",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "persistence_mode",
    "compute_mode",
]


def _number(text: str) -> int | float | str:
    text = text.strip()
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def parse_smi_line(line: str, fields: list[str] = SMI_FIELDS) -> dict[str, int | float | str]:
    """One `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` line as {field: value}."""
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(fields):
        raise ValueError(f"nvidia-smi gave {len(values)} values for {len(fields)} fields: {line!r}")
    return {f: _number(v) for f, v in zip(fields, values, strict=True)}


def _smi_rows(smi: str, fields: list[str]) -> list[dict[str, int | float | str]]:
    """One row per GPU of `nvidia-smi --query-gpu=FIELDS`; raises what subprocess and parsing raise."""
    done = subprocess.run(
        [smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [parse_smi_line(line, fields) for line in done.stdout.strip().splitlines() if line.strip()]


def pick_smi_row(rows: list[dict[str, Any]], index: int, uuid: str | None) -> dict[str, Any]:
    """The nvidia-smi row of the CUDA device: by UUID when torch gives one, else by position."""
    if uuid:
        want = uuid.lower().removeprefix("gpu-")
        for row in rows:
            if str(row.get("uuid", "")).lower().removeprefix("gpu-") == want:
                return row
    if 0 <= index < len(rows):
        return rows[index]
    raise ValueError(f"nvidia-smi lists {len(rows)} GPU(s); none matches CUDA device {index}")


def smi_query(index: int, uuid: str | None = None) -> dict[str, Any]:
    """Current and maximum clocks and the rest of SMI_FIELDS from nvidia-smi, else from NVML (pynvml)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            return {"via": "nvidia-smi", **pick_smi_row(_smi_rows(smi, SMI_FIELDS), index, uuid)}
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            smi_error = f"nvidia-smi failed: {exc}"
    else:
        smi_error = "nvidia-smi not found"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        sm, mem = pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM
        return {
            "via": "nvml",
            "clocks.sm": pynvml.nvmlDeviceGetClockInfo(h, sm),
            "clocks.max.sm": pynvml.nvmlDeviceGetMaxClockInfo(h, sm),
            "clocks.mem": pynvml.nvmlDeviceGetClockInfo(h, mem),
            "clocks.max.mem": pynvml.nvmlDeviceGetMaxClockInfo(h, mem),
            "driver_version": str(pynvml.nvmlSystemGetDriverVersion()),
        }
    except Exception as exc:  # NVML absent or failing: record why, measure anyway
        return {"via": "none", "error": f"{smi_error}; NVML: {type(exc).__name__}: {exc}"}


def environment(device: torch.device) -> dict[str, Any]:
    """The environment record of a bundle (`clocksAtStart` is read now; the runner adds `clocksAtEnd`)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    uuid = str(getattr(props, "uuid", "") or "") or None
    smi = smi_query(index, uuid)
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return {
        "gpu": {
            "vendor": "nvidia",
            "name": props.name,
            "computeCapability": f"{props.major}.{props.minor}",
            "architecture": f"sm_{props.major}{props.minor}",
            "smCount": props.multi_processor_count,
            "memoryBytes": int(props.total_memory),
            "l2CacheBytes": l2,
            "deviceIndex": index,
            # cudaDeviceProp figures where this torch exposes them (kHz, bits); CUDA 13 may report 0
            "propertiesClockKHz": getattr(props, "clock_rate", None),
            "propertiesMemoryClockKHz": getattr(props, "memory_clock_rate", None),
            "memoryBusWidthBits": getattr(props, "memory_bus_width", None),
            "uuid": str(smi.get("uuid", "")) or uuid,
        },
        "driverVersion": str(smi["driver_version"]) if "driver_version" in smi else None,
        "cudaVersion": torch.version.cuda,
        "cudnnVersion": torch.backends.cudnn.version(),
        "software": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "triton": triton_version,
            "implementation": sys.implementation.name,
        },
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "clocksAtStart": smi,
    }


CLOCK_FIELDS = ["clocks.sm", "clocks.mem", "temperature.gpu", "power.draw", "clocks_event_reasons.active"]


def clock_sampler(index: int, uuid: str | None = None) -> Callable[[], dict[str, Any]]:
    """A zero-argument reader of the GPU's clocks, temperature, power and throttle reasons, cheap enough
    to call between trials: NVML (pynvml) when it is installed, else one nvidia-smi query per reading,
    else a record saying neither is available."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # NVML absent or failing: fall back to nvidia-smi
        return functools.partial(_smi_clocks, index, uuid)

    def read() -> dict[str, Any]:
        return {
            "via": "nvml",
            "clocks.sm": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "clocks.mem": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "temperature.gpu": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            "power.draw": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,
            "clocks_event_reasons.active": hex(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)),
        }

    return read


def _smi_clocks(index: int, uuid: str | None) -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {"via": "none", "error": "neither pynvml nor nvidia-smi is available"}
    fields = ["uuid", *CLOCK_FIELDS]
    try:
        row = dict(pick_smi_row(_smi_rows(smi, fields), index, uuid))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return {"via": "none", "error": f"nvidia-smi failed: {exc}"}
    row.pop("uuid", None)
    return {"via": "nvidia-smi", **row}
