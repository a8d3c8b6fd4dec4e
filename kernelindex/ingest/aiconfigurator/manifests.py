"""AIConfigurator sweeps as manifests.

- workload: one table × fixed configuration (data types, model-derived dimensions,
  parallelism, routing), its cases the values of the swept axes;
- implementation: the kernel a framework version dispatched (``kernel_source``), under that
  framework and version: the three frameworks and their versions are what the data compares,
  so they rank side by side on one system;
- environment: the system's GPU;
- protocol: the upstream collector's (CUDA-graph replay mean, warm L2, no spread);
- run: one kernel of one framework version on one system over the sweep, the mean latency of
  each measured case and their geometric mean.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from functools import cache
from typing import Any

from kernelindex.figure_gate import ms_to_ns
from kernelindex.gpus import Gpu
from kernelindex.ingest.aiconfigurator.rows import NativeScalar, RunKey, RunRows, WorkloadKey
from kernelindex.manifests import (
    API_VERSION,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.ranking import geometric_mean

SOURCE_KEY = "aiconfigurator"
COLLECTION = "AIConfigurator"
UPSTREAM_URL = "https://github.com/ai-dynamo/aiconfigurator"
PROTOCOL_NAME = "aiconfigurator-collector"
PROTOCOL_NOTES = (
    "As AIConfigurator's collector measures (upstream collector/, not in the package): a few warm-up calls, "
    "then the operation captured in a CUDA graph (eager where capture fails) and replayed back to back; the "
    "latency is the CUDA-event span divided by the number of replays (and, for GEMM, by the calls per replay). "
    "So each case is a mean over a handful of replays, with a warm L2 cache, and no spread is recorded: two "
    "figures a few per cent apart are within the source's noise. The collector asks for a dedicated node, "
    "persistence mode and locked clocks; whether a given system ran so is not recorded. No correctness data "
    "accompanies the rows (status passed means the source published the measurement), and no row has a date: "
    "the package's release is the best known time of observation. A run is one kernel of one framework version "
    "over the workload's sweep on one system, and its figure is the geometric mean of its per-case means; runs "
    "that measured different cases say so (k of n cases), and the per-case table compares them case by case. "
    "Runs of every framework and version on one system are ranked together: the protocol is the same, and which "
    "kernel a framework dispatches is what the data compares. Some tables hold the same point of a run twice (a "
    "second measurement of it): the first row is kept and the repeat counted in the ingest report."
)
FRAMEWORKS = {
    "trtllm": ("TensorRT-LLM", "https://github.com/NVIDIA/TensorRT-LLM", "Apache-2.0"),
    "trtllm_a2a": ("TensorRT-LLM", "https://github.com/NVIDIA/TensorRT-LLM", "Apache-2.0"),
    "sglang": ("SGLang", "https://github.com/sgl-project/sglang", "Apache-2.0"),
    "vllm": ("vLLM", "https://github.com/vllm-project/vllm", "Apache-2.0"),
    "nccl": ("NCCL", "https://github.com/NVIDIA/nccl", "BSD-3-Clause"),
    "oneccl": ("oneCCL", "https://github.com/uxlfoundation/oneCCL", "Apache-2.0"),
}
TABLE_TITLES = {
    "gemm_perf": "GEMM",
    "moe_perf": "MoE layer",
    "context_attention_perf": "Context attention",
    "generation_attention_perf": "Generation attention",
    "encoder_attention_perf": "Encoder attention",
    "context_mla_perf": "Context MLA",
    "generation_mla_perf": "Generation MLA",
    "mla_bmm_perf": "MLA batched GEMM",
    "nccl_perf": "NCCL collective",
    "oneccl_perf": "oneCCL collective",
    "custom_allreduce_perf": "Custom all-reduce",
    "moe_a2a_perf": "MoE all-to-all",
    "trtllm_alltoall_perf": "TensorRT-LLM all-to-all",
    "computescale_perf": "Quantization scale computation",
    "scale_matrix_perf": "Matrix scaling",
    "gdn_perf": "Gated delta net",
    "kda_perf": "Kimi delta attention",
    "mamba2_perf": "Mamba-2",
    "mhc_module_perf": "mHC module",
}
LABELS = {
    "hidden_size": "hidden",
    "inter_size": "inter",
    "intermediate_size": "inter",
    "num_experts": "experts",
    "moe_tp_size": "TP",
    "moe_ep_size": "EP",
    "tp_size": "TP",
    "num_heads": "heads",
    "num_key_value_heads": "KV heads",
    "head_dim": "head dim",
    "num_gpus": "GPUs",
}


def _part(text: str, limit: int) -> str:
    """A piece of a manifest name: lower case letters, digits, dots and dashes."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower())[:limit].strip("-.") or "x"


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":"), default=str).encode()).hexdigest()


def framework_name(framework: str) -> str:
    return FRAMEWORKS.get(framework, (framework, None, None))[0]


def table_title(table: str) -> str:
    if table in TABLE_TITLES:
        return TABLE_TITLES[table]
    words = table.removesuffix("_perf").replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _shown(name: str, value: NativeScalar) -> str:
    label = LABELS.get(name)
    return f"{label} {value}" if label else f"{name}={value}"


def workload_title(key: WorkloadKey) -> str:
    config = {name: value for name, value in key.config if value is not None}
    head = table_title(key.table)
    if key.table in ("moe_perf", "gemm_perf") and config.get("op_name") in ("moe", "gemm"):
        del config["op_name"]  # the table says it
    elif "op_name" in config:
        head = f"{head} {config.pop('op_name')}"
    if key.table == "moe_perf" and {"topk", "num_experts"} <= config.keys():
        dtype = config.pop("moe_dtype", None)
        topk, experts = config.pop("topk"), config.pop("num_experts")
        parts = [_shown(name, config.pop(name)) for name in ("hidden_size", "inter_size") if name in config]
        parts.append(f"top-{topk} of {experts} experts")
        parts += [_shown(name, config.pop(name)) for name in ("moe_tp_size", "moe_ep_size") if name in config]
        parts += [str(value) if name == "distribution" else _shown(name, value) for name, value in config.items()]
        title = f"{head} {dtype}: " + ", ".join(parts) if dtype else f"{head}: " + ", ".join(parts)
    elif key.table == "gemm_perf" and {"n", "k"} <= config.keys():
        title = f"{head} {config.pop('gemm_dtype', '')} N={config.pop('n')} K={config.pop('k')}".replace("  ", " ")
        if config:
            title += ": " + ", ".join(_shown(name, value) for name, value in config.items())
    else:
        title = f"{head}: " + ", ".join(_shown(name, value) for name, value in config.items()) if config else head
    return title if len(title) <= 300 else title[:299] + "…"


def workload_name(key: WorkloadKey) -> str:
    return f"aic-{_part(key.external_id, 120)}"


def _tags(key: WorkloadKey, family: str) -> list[str]:
    tags = ["aiconfigurator", family, key.table.removesuffix("_perf")]
    for name, value in key.config:
        if value is None:
            continue
        if name == "op_name" or name.endswith("_dtype") or name in ("distribution", "architecture", "gemm_type"):
            tags.append(str(value))
        elif name in ("model", "model_name"):
            tags.append(f"model:{value}")
    return list(dict.fromkeys(tag[:300] for tag in tags))


def workload_manifest(
    key: WorkloadKey, family: str, swept: tuple[str, ...], cases: list[tuple[NativeScalar, ...]]
) -> WorkloadSuite:
    axes: dict[str, Any] = {name: {"type": "var", "description": f"swept: {name}"} for name in swept}
    for name, value in key.config:
        if isinstance(value, int | float) and not isinstance(value, bool):
            axes[name] = {"type": "const", "value": value}
        else:
            shown = "not recorded" if value is None else json.dumps(value) if not isinstance(value, str) else value
            axes[name] = {"type": "var", "description": f"Fixed for this workload at {shown} (a setting, not a number)"}
    configuration = ", ".join(f"{name}={value}" for name, value in key.config)
    description = (
        f"AIConfigurator's {key.table} table ({family}) at the fixed configuration {configuration or '(none)'}, "
        f"swept over {', '.join(swept)}. Each case is one point of the sweep; a run is the kernel one framework "
        "version dispatched for it on one system, timed by AIConfigurator's collector. The package holds no "
        "program that defines the inputs: the shape columns are the definition."
    )
    return WorkloadSuite.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadSuite",
            "metadata": {"name": workload_name(key), "title": workload_title(key)},
            "spec": {
                "definition": {
                    "name": f"{key.table} {key.external_id}",
                    "description": description,
                    "axes": axes,
                    "inputs": {},
                    "outputs": {
                        "output": {
                            "dtype": "unknown",
                            "description": f"What {table_title(key.table)} computes; the source records no outputs.",
                        }
                    },
                },
                "collection": COLLECTION,
                "tags": _tags(key, family),
                "cases": [
                    {"axes": {name: value for name, value in zip(swept, case, strict=True) if value is not None}}
                    for case in cases
                ],
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "externalId": key.external_id,
                    "metrics": {"table": key.table, "family": family, "configuration": configuration[:20_000]},
                },
            },
        }
    )


@cache
def protocol_manifest() -> BenchmarkProtocol:
    return BenchmarkProtocol.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkProtocol",
            "metadata": {"name": PROTOCOL_NAME, "title": "AIConfigurator collector (CUDA-graph replay mean)"},
            "spec": {
                "harness": {"name": "AIConfigurator collector", "version": "as recorded in each table's folder"},
                "correctness": {"reference": "none: the collector does not check outputs", "comparator": "none"},
                "measurement": {"timer": "CUDA events over CUDA-graph replays", "primaryStatistic": "geomean"},
                "comparability": {"family": "aiconfigurator_collector", "notes": PROTOCOL_NOTES},
            },
        }
    )


@cache
def environment_manifest(gpu: Gpu) -> ExecutionEnvironment:
    return ExecutionEnvironment.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "ExecutionEnvironment",
            "metadata": {"name": f"aiconfigurator-{gpu.slug}", "title": f"{gpu.product}, AIConfigurator collector"},
            "spec": {
                "hardware": {"vendor": gpu.vendor, "product": gpu.product, "architecture": gpu.architecture},
                "software": {"libraries": {"collector": "AIConfigurator"}},
            },
        }
    )


def implementation_name(framework: str, version: str, kernel: str) -> str:
    readable = f"aic-{_part(framework, 12)}-{_part(version, 24)}-{_part(kernel, 100)}"
    return f"{readable}-{_hash(framework, version, kernel)[:8]}"


@cache
def implementation_manifest(framework: str, version: str, kernel: str) -> Implementation:
    name, url, licence = FRAMEWORKS.get(framework, (framework, None, None))
    spec: dict[str, Any] = {
        "project": {"name": f"{name} · {kernel}"[:300], **({"url": url} if url else {})},
        "revision": f"{name} {version}"[:300],
        "source": {"available": url is not None, **({"url": url} if url else {})},
    }
    if licence:
        spec["license"] = licence
    return Implementation.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "Implementation",
            "metadata": {
                "name": implementation_name(framework, version, kernel),
                "title": f"{name} {version} · {kernel}"[:300],
            },
            "spec": spec,
        }
    )


def run_external_id(key: WorkloadKey, run: RunKey) -> str:
    return _hash(key.external_id, run.system, run.framework, run.version, run.kernel)[:16]


def run_name(key: WorkloadKey, run: RunKey) -> str:
    return f"aic-{_part(key.table.removesuffix('_perf'), 40)}-{_part(run.system, 24)}-{run_external_id(key, run)}"


def run_manifest(
    key: WorkloadKey,
    run: RunKey,
    rows: RunRows,
    gpu: Gpu,
    positions: dict[tuple[NativeScalar, ...], int],
    provenance: str,
    observed_at: datetime,
    digests: dict[str, str],
) -> BenchmarkRun:
    case_results: list[dict[str, Any]] = []
    for point, measured in sorted(rows.points.items(), key=lambda item: positions[item[0]]):
        result: dict[str, Any] = {"caseIndex": positions[point], "latencyNs": {"mean": ms_to_ns(measured.latency_ms)}}
        extra = dict(measured.measured)
        if point in rows.repeats:
            extra["repeated_latency_ns"] = ms_to_ns(rows.repeats[point])
        if extra:
            result["metrics"] = extra
        case_results.append(result)
    suite = max(1, round(geometric_mean([result["latencyNs"]["mean"] for result in case_results])))
    framework = framework_name(run.framework)
    metrics: dict[str, Any] = {
        "framework": framework,
        "version": run.version,
        "kernel_source": run.kernel,
        "system": run.system,
        "provenance": provenance,
        "cases_measured": len(case_results),
        "cases_total": len(positions),
        "file": ", ".join(sorted(rows.files)),
    }
    if rows.recorded:
        metrics["recorded_as"] = ", ".join(sorted(f"{fw} {ver}" for fw, ver in rows.recorded))
    title = f"{framework} {run.version} · {run.kernel} · {table_title(key.table)} · {gpu.product}"
    return BenchmarkRun.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {"name": run_name(key, run), "title": title if len(title) <= 300 else title[:299] + "…"},
            "spec": {
                "status": "passed",
                "timing": {"latencyNs": {"geomean": suite}, "primaryStatistic": "geomean"},
                "caseResults": case_results,
                "observedAt": observed_at,
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "benchmark": key.table,
                    "externalId": run_external_id(key, run),
                    "metrics": metrics,
                },
                **digests,
            },
        }
    )
