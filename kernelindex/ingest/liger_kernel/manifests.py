"""Liger-Kernel sweeps as manifests: a workload per sweep definition, an implementation per
provider, an environment per GPU and release, one protocol, and a run per measured sweep."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelindex.figure_gate import ms_to_ns
from kernelindex.gpus import Gpu
from kernelindex.ingest.liger_kernel.rows import WorkloadKey
from kernelindex.ingest.liger_kernel.sweeps import SweepRun, Sweeps
from kernelindex.manifests import (
    API_VERSION,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.manifests.types import format_utc
from kernelindex.ranking import geometric_mean

SOURCE_KEY = "liger-kernel"
COLLECTION = "Liger-Kernel"
LIGER_URL = "https://github.com/linkedin/Liger-Kernel"
PROTOCOL_NAME = "liger-kernel-benchmark"
PROTOCOL_NOTES = (
    "Each case is timed by triton.testing.do_bench with quantiles 0.5, 0.2 and 0.8, as the Liger-Kernel "
    "benchmark scripts call it: the median and the 20th and 80th percentiles, in ms; a case's primary "
    "statistic is its median. A run is one sweep: one implementation timed over every value of the "
    "workload's swept axis on one GPU at one time. Its suite figure is the geometric mean over its "
    "measured cases of the per-case medians, computed here from the published medians (the source "
    "publishes per-case figures only). Runs are compared only within one workload, GPU and Liger-Kernel "
    "release; a run that measured fewer cases than the workload holds says so (k of n cases). The "
    "source's timestamps carry no time zone and are read as UTC. Memory rows are peak memory in MB "
    "(torch max_memory_allocated, in units of 2^20 bytes) from a separate sweep: they are shown beside "
    "the latency of the nearest speed sweep and never ranked as a time. The benchmark scripts do not "
    "check outputs: status passed means the source published the measurement."
)
MODE_WORDS = {
    "forward": ("forward", "forward pass"),
    "backward": ("backward", "backward pass"),
    "full": ("forward and backward", "forward and backward pass"),
    "no-grad-forward": ("forward without autograd", "forward pass without autograd"),
}


@dataclass(frozen=True)
class Script:
    """A benchmark script as read from the repository: the program that defines a workload's inputs."""

    path: str
    url: str
    sha256: str
    code: str


def _part(text: str, limit: int) -> str:
    """A piece of a manifest name: lower case letters, digits, dots and dashes, at most ``limit`` long."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower())[:limit].strip("-.") or "x"


def _words(name: str) -> str:
    """``cross_entropy`` → ``Cross entropy``."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _mode(mode: str) -> tuple[str, str]:
    return MODE_WORDS.get(mode, (mode.replace("-", " "), f"{mode.replace('-', ' ')} mode"))


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def workload_name(key: WorkloadKey) -> str:
    return f"liger-{_part(key.kernel, 40)}-{_part(key.mode, 20)}-{_part(key.x_name, 20)}-{key.hash8}"


def workload_manifest(key: WorkloadKey, sweeps: Sweeps, script: Script | None) -> WorkloadSuite:
    """The sweep definition: the swept axis (its values are the cases) and the fixed configuration."""
    # The configuration names the swept axis too (often as null): the sweep's values replace it.
    fixed = {name: value for name, value in key.config.items() if name != key.x_name}
    label = sweeps.x_label or key.x_name
    axes: dict[str, Any] = {key.x_name: {"type": "var", "description": label}}
    settings: dict[str, str | bool] = {}
    for name, value in fixed.items():
        if _is_number(value):
            axes[name] = {"type": "const", "value": value}
        else:
            settings[name] = value if isinstance(value, str | bool) else json.dumps(value)
            axes[name] = {
                "type": "var",
                "description": f"Fixed for this sweep at {_shown(value)} (a setting, not a number)",
            }
    mode_short, mode_long = _mode(key.mode)
    configuration = ", ".join(f"{name}={_shown(value)}" for name, value in fixed.items())
    script_path = f"benchmark/scripts/benchmark_{key.kernel}.py"
    inputs = (
        f"The benchmark script {script_path} (the reference) defines the inputs: their shapes, dtypes and data."
        if script
        else f"The benchmark script defines the inputs; the source holds no script named {script_path}."
    )
    description = (
        f"Liger-Kernel benchmark of {key.kernel}, {mode_long}, swept over {key.x_name} ({label}) with the "
        f"fixed configuration {key.config_json}. Each case is one value of {key.x_name}; a run times one "
        f"implementation over the sweep on one GPU, and its figure is the geometric mean of the per-case "
        f"median latencies. {inputs}"
    )
    definition: dict[str, Any] = {
        "name": f"{key.kernel} {key.mode} over {key.x_name}",
        "description": description,
        "axes": axes,
        "inputs": {},
        "outputs": {
            "output": {
                "dtype": "unknown",
                "description": f"What {key.kernel} computes in the {mode_long}; the source publishes no output shapes.",
            }
        },
    }
    if script:
        definition["reference"] = {
            "path": script.path,
            "url": script.url,
            "sha256": script.sha256,
            "language": "python",
            "code": script.code,
        }
    title = f"{_words(key.kernel)}, {mode_short}, over {label}" + (f" ({configuration})" if configuration else "")
    return WorkloadSuite.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadSuite",
            "metadata": {"name": workload_name(key), "title": title if len(title) <= 300 else title[:299] + "…"},
            "spec": {
                "definition": definition,
                "collection": COLLECTION,
                "tags": [key.kernel, key.mode],
                "cases": [{"axes": {key.x_name: value, **settings}} for value in sweeps.cases],
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "externalId": key.external_id,
                    "metrics": {
                        "kernel_name": key.kernel,
                        "kernel_operation_mode": key.mode,
                        "x_name": key.x_name,
                        "extra_benchmark_config": key.config_json,
                    },
                },
            },
        }
    )


# Shared by many workloads: made (and its digest computed) once.
@cache
def protocol_manifest() -> BenchmarkProtocol:
    return BenchmarkProtocol.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkProtocol",
            "metadata": {"name": PROTOCOL_NAME, "title": "Liger-Kernel benchmark scripts (triton.testing.do_bench)"},
            "spec": {
                "harness": {
                    "name": "Liger-Kernel benchmark scripts",
                    "version": "as shipped with each run's Liger-Kernel release",
                },
                "correctness": {"reference": "none: the benchmark scripts do not check outputs", "comparator": "none"},
                "measurement": {"timer": "triton.testing.do_bench", "primaryStatistic": "geomean"},
                "comparability": {"family": "liger_kernel_benchmark", "notes": PROTOCOL_NOTES},
            },
        }
    )


def environment_name(gpu: Gpu, version: str) -> str:
    return f"liger-kernel-{gpu.slug}-v{_part(version, 40)}"


@cache
def environment_manifest(gpu: Gpu, version: str) -> ExecutionEnvironment:
    """Releases are different stacks: runs of two releases are never ranked together."""
    return ExecutionEnvironment.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "ExecutionEnvironment",
            "metadata": {"name": environment_name(gpu, version), "title": f"{gpu.product}, Liger-Kernel {version}"},
            "spec": {
                "hardware": {"vendor": gpu.vendor, "product": gpu.product, "architecture": gpu.architecture},
                "software": {"libraries": {"liger_kernel": version}},
            },
        }
    )


@dataclass(frozen=True)
class ProjectFacts:
    name: str
    url: str | None = None
    license: str | None = None
    runtime: str | None = None
    language: str | None = None


def project_of(provider: str) -> ProjectFacts:
    """Whose code a ``kernel_provider`` names, with what is evident of it."""
    if provider.startswith("liger"):
        runtime = "cuTile" if "cutile" in provider else "CuTe DSL" if "cutedsl" in provider else "Triton"
        return ProjectFacts("Liger-Kernel", LIGER_URL, "BSD-2-Clause", runtime, "Python")
    if provider.startswith("huggingface"):
        return ProjectFacts("Hugging Face Transformers", "https://github.com/huggingface/transformers", "Apache-2.0")
    if provider == "torch":
        return ProjectFacts("PyTorch", "https://github.com/pytorch/pytorch", "BSD-3-Clause")
    if provider == "torch_compile":
        return ProjectFacts(
            "PyTorch (torch.compile)", "https://github.com/pytorch/pytorch", "BSD-3-Clause", "torch.compile"
        )
    if provider.startswith("megatron"):
        return ProjectFacts("Megatron-LM", "https://github.com/NVIDIA/Megatron-LM")
    if provider.startswith("deepspeed"):
        return ProjectFacts("DeepSpeed", "https://github.com/deepspeedai/DeepSpeed", "Apache-2.0")
    return ProjectFacts(provider)


def implementation_name(provider: str) -> str:
    return f"liger-kernel-{_part(provider, 60)}"


@cache
def implementation_manifest(provider: str) -> Implementation:
    project = project_of(provider)
    spec: dict[str, Any] = {
        "project": {"name": project.name, **({"url": project.url} if project.url else {})},
        "revision": provider,
        "source": {"available": project.url is not None, **({"url": project.url} if project.url else {})},
    }
    for field_name in ("runtime", "language", "license"):
        if value := getattr(project, field_name):
            spec[field_name] = value
    return Implementation.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "Implementation",
            "metadata": {"name": implementation_name(provider), "title": f"{project.name} · {provider}"},
            "spec": spec,
        }
    )


def run_name(key: WorkloadKey, run: SweepRun) -> str:
    sweep = run.key
    return (
        f"{workload_name(key)}-{_part(sweep.provider, 30)}-{run.gpu.slug}-v{_part(sweep.version, 16)}"
        f"-{sweep.timestamp:%Y%m%d-%H%M%S}"
    )


def run_external_id(key: WorkloadKey, run: SweepRun) -> str:
    """The first 16 hex digits of the sha256 of the run's identity as the source writes it."""
    sweep = run.key
    identity = [key.external_id, sweep.provider, sweep.gpu_name, sweep.version, format_utc(sweep.timestamp)]
    return hashlib.sha256(json.dumps(identity, separators=(",", ":")).encode()).hexdigest()[:16]


def run_manifest(key: WorkloadKey, run: SweepRun, case_total: int, digests: dict[str, str]) -> BenchmarkRun:
    """One sweep: per-case latencies (and peak memory where measured) and their geometric mean."""
    sweep = run.key
    case_results: list[dict[str, Any]] = []
    for position, row in sorted(run.speed.items()):
        result: dict[str, Any] = {
            "caseIndex": position,
            "latencyNs": {"median": ms_to_ns(row.median), "p20": ms_to_ns(row.p20), "p80": ms_to_ns(row.p80)},
        }
        if position in run.memory:
            result["metrics"] = {"peak_memory_mb": float(run.memory[position].median)}
        case_results.append(result)
    suite = round(geometric_mean([result["latencyNs"]["median"] for result in case_results]))
    metrics: dict[str, Any] = {
        "liger_version": sweep.version,
        "kernel_provider": sweep.provider,
        "gpu_name": sweep.gpu_name,
        "timestamp": next(iter(run.speed.values())).timestamp_text,
        "cases_measured": len(run.speed),
        "cases_total": case_total,
        "file": ", ".join(run.files),
    }
    if run.memory_observed_at is not None:
        metrics["memory_observed_at"] = format_utc(run.memory_observed_at)
    what = f"{key.kernel} {key.mode} over {key.x_name}"
    title = f"{sweep.provider} · {what} · {run.gpu.product} · Liger-Kernel {sweep.version}"
    return BenchmarkRun.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {"name": run_name(key, run), "title": title[:300]},
            "spec": {
                "status": "passed",
                "timing": {"latencyNs": {"geomean": suite}, "primaryStatistic": "geomean"},
                "caseResults": case_results,
                "observedAt": sweep.timestamp,
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "benchmark": key.kernel,
                    "externalId": run_external_id(key, run),
                    "metrics": metrics,
                },
                **digests,
            },
        }
    )
