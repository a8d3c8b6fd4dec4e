"""Two more sources beside SOL-ExecBench, small and written through the real ingest path.

``KERNELBENCH`` and ``LIGER`` are described as data (workloads, the GPUs each was measured
on, implementations); ``ingest_more_sources`` maps them to manifests and ingests each
source with ``run_ingest`` (so ``ensure_source`` and ``apply_batch`` write them, the search
index is kept current and each ingest leaves its report). Tests read their expectations
from the same data.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from kernelindex.ingest.runner import Discovery, IngestSummary, run_ingest
from kernelindex.manifests import (
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.store.batch import Batch, RunRecord, SourceInfo, UnitFailure
from tests.multi_gpu_catalogue import manifest

OBSERVED = datetime(2026, 3, 5, 12, 0, tzinfo=UTC)
# Tracked GPUs (kernelindex.gpus) by the product name an environment gives.
PRODUCTS = {
    "h100-sxm": ("NVIDIA H100 SXM", "sm_90"),
    "l40s": ("NVIDIA L40S", "sm_89"),
    "t4": ("NVIDIA T4", "sm_75"),
    "a100-sxm4-80gb": ("NVIDIA A100 SXM4 80GB", "sm_80"),
}


@dataclass(frozen=True)
class Problem:
    slug: str
    title: str
    definition: str  # the upstream name
    collection: str
    tags: tuple[str, ...]
    gpus: tuple[str, ...]  # measured on these, by every implementation of the source


@dataclass(frozen=True)
class MoreSource:
    info: SourceInfo
    harness: str
    implementations: tuple[tuple[str, str, str], ...]  # (manifest name, project, revision)
    problems: tuple[Problem, ...]
    failing: tuple[str, ...] = ()  # units that cannot be mapped: reported as errors
    warnings: dict[str, str] = field(default_factory=dict)  # unit → a warning its batch reports
    drift: frozenset[str] = frozenset()

    def runs_on(self, gpu: str) -> int:
        return sum(len(self.implementations) for p in self.problems if gpu in p.gpus)

    def measured_on(self, gpu: str) -> list[str]:
        return sorted(p.slug for p in self.problems if gpu in p.gpus)

    @property
    def run_count(self) -> int:
        return sum(len(p.gpus) * len(self.implementations) for p in self.problems)

    @property
    def gpu_slugs(self) -> set[str]:
        return {gpu for p in self.problems for gpu in p.gpus}


KERNELBENCH = MoreSource(
    info=SourceInfo(
        slug="kernelbench",
        name="KernelBench",
        url="https://github.com/ScalingIntelligence/KernelBench",
        description="PyTorch reference programs timed by their authors on many GPUs and execution modes.",
        licence="MIT (Copyright (c) 2024 Scaling Intelligence)",
        attribution="Baseline timings from KernelBench (Ouyang et al.), MIT licence.",
    ),
    harness="KernelBench timing",
    implementations=(
        ("kernelbench-pytorch-eager", "PyTorch eager", "torch 2.5.0"),
        ("kernelbench-torch-compile-max-autotune", "torch.compile", "inductor max-autotune, torch 2.5.0"),
    ),
    problems=(
        Problem("kb-l1-019-relu", "ReLU", "19_ReLU", "KernelBench level 1", ("level 1",), ("h100-sxm", "l40s", "t4")),
        Problem("kb-l1-040-layernorm", "LayerNorm", "40_LayerNorm", "KernelBench level 1", ("level 1",), ("h100-sxm",)),
        Problem(
            "kb-l1-001-square-matmul",
            "Square matrix multiplication",
            "1_Square_matrix_multiplication_",
            "KernelBench level 1",
            ("level 1",),
            ("h100-sxm", "t4"),
        ),
        Problem(
            "kb-l2-012-gemm-multiply-leakyrelu",
            "Gemm multiply LeakyReLU",
            "12_Gemm_Multiply_LeakyReLU",
            "KernelBench level 2",
            ("level 2",),
            ("h100-sxm", "l40s"),
        ),
        Problem(
            "kb-l3-043-mingpt-causal-attention",
            "Causal self-attention block",
            "43_MinGPTCausalAttention",
            "KernelBench level 3",
            ("level 3",),
            (),
        ),
        Problem(
            "kb-l4-001-gpt2-model",
            "GPT-2 model",
            "1_GPT2Model",
            "KernelBench level 4",
            ("level 4",),
            ("l40s",),
        ),
    ),
)

LIGER = MoreSource(
    info=SourceInfo(
        slug="liger-kernel",
        name="Liger-Kernel",
        url="https://github.com/linkedin/Liger-Kernel",
        description="Benchmarks the Liger-Kernel project publishes for its Triton kernels and their alternatives.",
        licence="BSD 2-Clause (Copyright 2024 LinkedIn Corporation)",
        attribution="Benchmark data from Liger-Kernel (LinkedIn), BSD 2-Clause licence.",
    ),
    harness="triton.testing.do_bench",
    implementations=(
        ("liger-kernel-liger", "liger-kernel-liger", "liger 0.6.1"),
        ("liger-kernel-huggingface", "liger-kernel-huggingface", "transformers 4.52"),
    ),
    problems=(
        Problem(
            "liger-rms-norm-forward",
            "rms_norm forward",
            "rms_norm",
            "Liger-Kernel",
            ("rms_norm", "forward"),
            ("h100-sxm", "a100-sxm4-80gb"),
        ),
        Problem("liger-swiglu-full", "swiglu full", "swiglu", "Liger-Kernel", ("swiglu", "full"), ("a100-sxm4-80gb",)),
        Problem(
            "liger-cross-entropy-backward",
            "cross_entropy backward",
            "cross_entropy",
            "Liger-Kernel",
            ("cross_entropy", "backward"),
            ("h100-sxm",),
        ),
    ),
    failing=("liger-geglu-full",),
    warnings={"liger-rms-norm-forward": "rms_norm: 2 rows at another liger_version kept as separate runs"},
    drift=frozenset({"extra_benchmark_config_str.dtype"}),
)

MORE_SOURCES = (KERNELBENCH, LIGER)


def _protocol(source: MoreSource) -> BenchmarkProtocol:
    spec = {
        "harness": {"name": source.harness, "version": "1"},
        "correctness": {"reference": "the source's reference", "comparator": "allclose"},
        "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
        "comparability": {"family": source.info.slug.replace("-", "_")},
    }
    return manifest(BenchmarkProtocol, f"{source.info.slug}-protocol", spec)


def _environment(source: MoreSource, gpu: str) -> ExecutionEnvironment:
    product, architecture = PRODUCTS[gpu]
    spec = {
        "hardware": {"vendor": "nvidia", "product": product, "architecture": architecture},
        "software": {"libraries": {"torch": "2.5.0"}},
    }
    return manifest(ExecutionEnvironment, f"{source.info.slug}-{gpu}", spec, f"{source.info.name} {product}")


def _workload(problem: Problem) -> WorkloadSuite:
    spec = {
        "definition": {
            "name": problem.definition,
            "description": f"{problem.title}, as the source defines it.",
            "axes": {"N": {"type": "var"}},
            "inputs": {"x": {"dtype": "float32", "shape": ["N"]}},
            "outputs": {"y": {"dtype": "float32", "shape": ["N"]}},
        },
        "collection": problem.collection,
        "tags": list(problem.tags),
        "cases": [{"axes": {"N": 4096}}],
    }
    return manifest(WorkloadSuite, problem.slug, spec, problem.title)


def _implementation(name: str, project: str, revision: str) -> Implementation:
    spec = {"project": {"name": project}, "revision": revision, "source": {"available": True}}
    return manifest(Implementation, name, spec)


def batch_of(source: MoreSource, problem: Problem) -> Batch:
    """One problem with a run of every implementation on every GPU it was measured on."""
    workload, protocol = _workload(problem), _protocol(source)
    environments = {gpu: _environment(source, gpu) for gpu in problem.gpus}
    implementations = [_implementation(*implementation) for implementation in source.implementations]
    runs = []
    for number, (gpu, implementation) in enumerate(
        ((gpu, implementation) for gpu in problem.gpus for implementation in implementations), start=1
    ):
        name = f"{problem.slug}-{implementation.metadata.name}-{gpu}"
        spec = {
            "status": "passed",
            "timing": {"latencyNs": {"median": 10_000 * number}, "primaryStatistic": "median"},
            "observedAt": OBSERVED.isoformat(),
            "protocolDigest": protocol.digest,
            "workloadDigest": workload.digest,
            "environmentDigest": environments[gpu].digest,
            "implementationDigest": implementation.digest,
        }
        runs.append(
            RunRecord(
                manifest=manifest(BenchmarkRun, name, spec),
                implementation=implementation.metadata.name,
                protocol=protocol.metadata.name,
                environment=environments[gpu].metadata.name,
                external_id=f"{problem.slug}/{number}",  # at most 64 characters, as the column allows
            )
        )
    warning = source.warnings.get(problem.slug)
    return Batch(
        unit=problem.slug,
        workload=workload,
        external_id=problem.slug,
        protocols=[protocol],
        environments=list(environments.values()),
        implementations=implementations,
        runs=runs,
        skipped=Counter({"memory_metric": 1}),
        warnings=[warning] if warning else [],
    )


class ListedSource:
    """An adapter over one ``MoreSource``: its units are its problems (and those that fail)."""

    def __init__(self, source: MoreSource):
        self.data = source
        self.source = source.info
        self.drift: set[str] = set(source.drift)

    def discover(self) -> Discovery:
        return Discovery(units=[p.slug for p in self.data.problems] + list(self.data.failing))

    def fetch(self, unit: str) -> Problem:
        found = next((p for p in self.data.problems if p.slug == unit), None)
        if found is None:
            raise UnitFailure(f"{unit}: the upstream rows name no GPU")
        return found

    def map(self, unit: str, fetched: Problem) -> Batch:
        return batch_of(self.data, fetched)


def ingest_more_sources(sessions: sessionmaker[Session]) -> dict[str, IngestSummary]:
    """Ingest every source of ``MORE_SOURCES``; their summaries by slug."""
    return {
        source.info.slug: run_ingest(ListedSource(source), sessions, origin=f"test snapshot {source.info.slug}")
        for source in MORE_SOURCES
    }
