"""aiter's tuned-table rows as manifests: a workload per operation and exact shape, an
implementation per winning library and kernel (a fused MoE's stage-1 + stage-2 pair), an
environment per GPU class, one protocol (aiter's tuner), and a run per row."""

from __future__ import annotations

import hashlib
import json
import math
import re
from functools import cache
from typing import Any

from kernelindex.gpus import Gpu
from kernelindex.ingest.aiter.rows import FUSED_MOE, GEMM, TunedRow, WorkloadKey
from kernelindex.manifests import (
    API_VERSION,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)

SOURCE_KEY = "aiter"
COLLECTION = "aiter tuned kernels"
AITER_URL = "https://github.com/ROCm/aiter"
PROTOCOL_NAME = "aiter-tuner-run-perftest"
WINNER_ONLY = (
    "Each run is the winner of aiter's autotuner for this shape on one GPU class; no runner-up was "
    "recorded, so a run is the fastest kernel the tuner found, not its margin over the next."
)
PROTOCOL_NOTES = (
    "aiter's tuners time every candidate kernel of a shape with run_perftest (aiter/test_common.py): 2 "
    "warm-up calls, then 101 timed calls, measured as the kernel time the PyTorch profiler records (not "
    "CUDA/HIP events), in microseconds per call (us); the figure is that mean. "
    f"{WINNER_ONLY} "
    "errRatio (err_ratio in some tables; err1 and err2 per stage of a fused MoE) is the share of output "
    "elements outside the tuner's tolerance against a reference run of the same shape: it is kept with "
    "each run as its correctness evidence, and a run with a non-zero errRatio was still the tuner's pick. "
    "The tables carry no dates: a run's time is that of the commit that last changed its table. "
    "The GPU is named by architecture (gfx) and compute-unit count, a class of products, not one product."
)
LIBRARIES = {
    "ck": "Composable Kernel",
    "cktile": "CK-tile",
    "asm": "hand-written assembly",
    "triton": "Triton",
    "flydsl": "FlyDSL",
    "hipblaslt": "hipBLASLt",
    "torch": "PyTorch",
    "skinny": "skinny GEMM",
    "opus": "opus",
}
FAMILY_WORDS = {GEMM: "GEMM", "batched_gemm": "Batched GEMM", FUSED_MOE: "Fused MoE"}


def _part(text: str, limit: int) -> str:
    """A piece of a manifest name: lower case letters, digits, dots and dashes, at most ``limit`` long."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower())[:limit].strip("-.") or "x"


def _short_dtype(value: str) -> str:
    """``torch.float8_e4m3fnuz`` → ``float8_e4m3fnuz``; ``QuantType.per_Token`` → ``per_Token``."""
    return value.rsplit(".", 1)[-1]


def _scheme_words(key: WorkloadKey) -> str:
    return " ".join(key.scheme.split("_")) or "data types as the columns say"


def _qualifiers(key: WorkloadKey) -> list[str]:
    """What a GEMM's kind columns add to its title: weight type, output type, bias, scales, layout."""
    words: list[str] = []
    if (weights := key.value("q_dtype_w")) is not None:
        words.append(f"weights {_short_dtype(str(weights))}")
    if (dtype := key.value("dtype")) is not None:
        words.append(f"in {_short_dtype(str(dtype))}")
    if (out := key.value("outdtype")) is not None:
        words.append(f"out {_short_dtype(str(out))}")
    if key.value("bias") == "True":
        words.append("bias")
    if key.value("scaleAB") == "True":
        words.append("scaled A and B")
    if key.value("bpreshuffle") == "True":
        words.append("B preshuffled")
    return words


# A workload's title is shown in its own manifest and in each of its runs' titles: made once.
@cache
def workload_title(key: WorkloadKey) -> str:
    if key.family == FUSED_MOE:
        value = key.value
        activations, weights = _short_dtype(str(value("q_dtype_a"))), _short_dtype(str(value("q_dtype_w")))
        quant = f"{_short_dtype(str(value('q_type')))}, a {activations}, w {weights}"
        title = (
            f"Fused MoE, {value('token')} tokens, model {value('model_dim')}, inter {value('inter_dim')}, "
            f"{value('expert')} experts, topk {value('topk')}, {_short_dtype(str(value('act_type')))}, "
            f"{_short_dtype(str(value('dtype')))} ({quant})"
        )
        if value("doweight_stage1") == "1":
            title += ", routing weight in stage 1"
    else:
        dims = "×".join(str(value) for name, value in key.shape if name in ("B", "M", "N", "K"))
        axes = " (B×M×N×K)" if key.family == "batched_gemm" else ""
        title = ", ".join([f"{FAMILY_WORDS[key.family]} {dims}{axes}", _scheme_words(key), *_qualifiers(key)])
    return title if len(title) <= 300 else title[:299] + "…"


def workload_name(key: WorkloadKey) -> str:
    if key.family == FUSED_MOE:
        shape = "-".join(str(key.value(name)) for name in ("token", "model_dim", "inter_dim", "expert", "topk"))
        return f"aiter-fmoe-{shape}-{key.hash8}"
    dims = "x".join(str(value) for name, value in key.shape if name in ("B", "M", "N", "K"))
    return f"aiter-{_part(key.family, 20)}-{_part(key.scheme or 'x', 40)}-{dims}-{key.hash8}"


def workload_tags(key: WorkloadKey, models: set[str]) -> list[str]:
    op = "op:fused-moe" if key.family == FUSED_MOE else "op:gemm"
    tags = {op, *(f"scheme:{word}" for word in key.scheme.split("_") if word)}
    if key.family == "batched_gemm":
        tags.add("op:batched-gemm")
    for name in ("dtype", "q_dtype_a", "q_dtype_w", "outdtype"):
        if (value := key.value(name)) is not None and str(value).startswith("torch."):
            tags.add(f"dtype:{_short_dtype(str(value))}")
    tags |= {f"model:{model}" for model in models}
    return sorted(tags)


def workload_manifest(key: WorkloadKey, models: set[str]) -> WorkloadSuite:
    """One operation at one exact shape: the shape as constant axes, the kind columns as settings."""
    axes: dict[str, Any] = {}
    case: dict[str, int | str] = {}
    for name, value in key.shape:
        case[name] = value
        if isinstance(value, int):
            axes[name] = {"type": "const", "value": value}
        else:
            axes[name] = {"type": "var", "description": f"Fixed at {value} (a setting, not a number)"}
    what = workload_title(key)
    description = (
        f"{what}, as aiter's tuned tables name it"
        + (f" (scheme {key.scheme}, from the table's file name)" if key.scheme else "")
        + f": {', '.join(f'{name}={value}' for name, value in key.shape)}. {WINNER_ONLY} "
        "The model tags name the models whose tuned tables list this shape: where the shape comes from."
    )
    return WorkloadSuite.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadSuite",
            "metadata": {"name": workload_name(key), "title": what},
            "spec": {
                "definition": {
                    "name": what,
                    "description": description,
                    "axes": axes,
                    "inputs": {},
                    "outputs": {
                        "output": {
                            "dtype": _short_dtype(str(key.value("outdtype") or key.value("dtype") or "unknown")),
                            "description": "The operation's result; the tables publish no shapes beyond the sizes.",
                        }
                    },
                },
                "collection": COLLECTION,
                "tags": workload_tags(key, models),
                "cases": [{"axes": case}],
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "externalId": key.external_id,
                    "metrics": {
                        "family": key.family,
                        "scheme": key.scheme,
                        "identity": key.identity,
                        **dict(key.shape),
                    },
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
            "metadata": {"name": PROTOCOL_NAME, "title": "aiter tuner (run_perftest, winner per shape)"},
            "spec": {
                "harness": {
                    "name": "aiter tuner (aiter/test_common.py run_perftest)",
                    "version": "as of each table's last change",
                },
                "correctness": {
                    "reference": "the tuner's reference run of the same shape",
                    "comparator": "errRatio: share of output elements outside the tuner's tolerance",
                },
                "measurement": {
                    "timer": "PyTorch profiler kernel time (run_perftest)",
                    "primaryStatistic": "mean",
                    "warmupIterations": 2,
                    "timedIterations": 101,
                },
                "comparability": {"family": "aiter_tuner", "notes": PROTOCOL_NOTES},
            },
        }
    )


def environment_name(gpu: Gpu) -> str:
    return f"aiter-{gpu.slug}"


@cache
def environment_manifest(gpu: Gpu) -> ExecutionEnvironment:
    return ExecutionEnvironment.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "ExecutionEnvironment",
            "metadata": {"name": environment_name(gpu), "title": f"{gpu.product}, aiter tuned tables"},
            "spec": {
                "hardware": {"vendor": gpu.vendor, "product": gpu.product, "architecture": gpu.architecture},
                "software": {"libraries": {"aiter": "tuned tables"}},
            },
        }
    )


def library_words(library: str | None) -> str:
    if library is None:
        return "library not recorded"
    return LIBRARIES.get(library.lower(), library)


def implementation_name(library: str | None, kernels: tuple[str, ...]) -> str:
    identity = json.dumps([library, *kernels])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    return f"aiter-{_part(library or 'unrecorded', 16)}-{_part('-'.join(kernels) or 'unnamed', 150)}-{digest}"


@cache
def implementation_manifest(library: str | None, kernels: tuple[str, ...]) -> Implementation:
    """A winning kernel (or a fused MoE's kernel pair) of one library, as aiter names it."""
    named = " + ".join(kernel for kernel in kernels if kernel) or "kernel not named in the table"
    spec: dict[str, Any] = {
        "project": {"name": "aiter", "url": AITER_URL},
        "revision": named[:300],
        "runtime": library_words(library),
        "license": "MIT",
        "source": {"available": True, "url": AITER_URL},
    }
    return Implementation.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "Implementation",
            "metadata": {
                "name": implementation_name(library, kernels),
                "title": f"aiter · {library_words(library)} · {named}"[:300],
            },
            "spec": spec,
        }
    )


def _native(text: str) -> int | float | str:
    """A table value as the manifest keeps it: a number where it is one, else the text as written."""
    if re.fullmatch(r"-?\d{1,15}", text):
        return int(text)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", text) and math.isfinite(number := float(text)):
        return number
    return text  # as written, also where it overflows a float (1e999)


def run_identity(row: TunedRow) -> list[Any]:
    """What makes a row one result: its table, GPU, workload, winner and the winner's settings."""
    return [row.path, row.gfx, row.cu_num, row.workload.identity, row.library, *row.kernels, *row.settings]


def run_external_id(row: TunedRow, occurrence: int) -> str:
    """16 hex digits of the identity's sha256; a second identical row of a table is ``…-2``."""
    digest = hashlib.sha256(json.dumps(run_identity(row), separators=(",", ":")).encode()).hexdigest()[:16]
    return digest if occurrence == 1 else f"{digest}-{occurrence}"


def run_manifest(row: TunedRow, gpu: Gpu, external_id: str, digests: dict[str, str]) -> BenchmarkRun:
    metrics: dict[str, Any] = {
        "file": row.path,
        "line": row.line,
        "last_changed_commit": row.last_change.sha,
        "gfx": row.gfx or "not recorded",
        "cu_num": row.cu_num if row.cu_num is not None else "not recorded",
        "libtype": row.library or "not recorded",
        "us": row.us_text,
    }
    for column, kernel in zip(
        ("kernelName1", "kernelName2") if row.workload.family == FUSED_MOE else ("kernelName",),
        row.kernels,
        strict=False,
    ):
        metrics[column] = kernel
    metrics.update({name: _native(value) for name, value in row.settings if value != ""})
    metrics.update({name: _native(value) for name, value in row.figures if value != ""})
    if row.model:
        metrics["model"] = row.model
    kernel = " + ".join(row.kernels) or "unnamed kernel"
    title = f"{kernel} · {workload_title(row.workload)} · {gpu.product}"
    return BenchmarkRun.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {
                "name": f"aiter-run-{external_id}",
                "title": title if len(title) <= 300 else title[:299] + "…",
            },
            "spec": {
                "status": "passed",
                "timing": {"latencyNs": {"mean": row.ns}, "primaryStatistic": "mean"},
                "observedAt": row.last_change.committed_at,
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "benchmark": row.path,
                    "externalId": external_id,
                    "metrics": metrics,
                },
                **digests,
            },
        }
    )
