"""A small catalogue written through the real ingest path (``apply_batch``) for the workload page:

- ``level1/19@…`` (two revisions of one problem, with its reference program): the newer one
  measured on three GPUs by two implementations, H100 in two setups, and a failed run on the
  L40S faster than any that passed (never shown as a figure);
- a sweep over ``vocab_size`` (four cases): two implementations on one H100 with per-case
  median, p20 and p80, peak memory on two cases, and one run that measured three of the four;
  and a slower run of the next release on the same H100 (a comparison group of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from kernelindex.manifests import (
    API_VERSION,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.store.batch import Batch, RunRecord, SourceInfo
from kernelindex.store.ingest import apply_batch, ensure_source

NOW = datetime(2026, 9, 1, tzinfo=UTC)
PROBLEM_SOURCE = SourceInfo(
    slug="problems",
    name="Problem Bench",
    url="https://example.org/problem-bench",
    description="Reference programs timed on many GPUs.",
    licence="MIT License",
    attribution="Data: Problem Bench baseline timings, © 2024 The Authors, MIT License.",
)
SWEEP_SOURCE = SourceInfo(
    slug="sweeps",
    name="Sweep Bench",
    url="https://example.org/sweep-bench",
    description="Kernels timed over a swept size.",
    licence="BSD 2-Clause License",
    attribution="Data: Sweep Bench results, BSD 2-Clause License.",
)
# The reference program carries markup a page must show as text, never run.
REFERENCE_CODE = (
    "import torch\n"
    "\n"
    "class Model(torch.nn.Module):\n"
    '    """ReLU: max(x, 0) for x < 0 and x > 0. <script>alert("x")</script>"""\n'
    "\n"
    "    def forward(self, x):\n"
    "        return torch.relu(x)\n"
)
NEW_SHA = "ab" * 32
OLD_SHA = "cd" * 32
NEW_WORKLOAD = "problem-l1-19-relu-abababab"
OLD_WORKLOAD = "problem-l1-19-relu-cdcdcdcd"
SWEEP_WORKLOAD = "sweep-cross-entropy-forward-vocab"
VOCAB = [4096, 8192, 16384, 32768]


def manifest(kind: type[Any], name: str, spec: dict[str, Any], title: str | None = None) -> Any:
    """A manifest of ``kind`` (its class names its kind) with that name, spec and optional title."""
    metadata = {"name": name, **({"title": title} if title else {})}
    return kind.model_validate({"apiVersion": API_VERSION, "kind": kind.__name__, "metadata": metadata, "spec": spec})


def protocol(name: str, statistic: str) -> BenchmarkProtocol:
    spec = {
        "harness": {"name": name, "version": "1"},
        "correctness": {"reference": "none", "comparator": "none"},
        "measurement": {"timer": "cuda_events", "primaryStatistic": statistic},
        "comparability": {"family": name.replace("-", "_")},
    }
    return manifest(BenchmarkProtocol, name, spec, title=f"{name} timing")


def environment(
    name: str, product: str, libraries: dict[str, str], provider: str | None = None
) -> ExecutionEnvironment:
    spec: dict[str, Any] = {
        "hardware": {"vendor": "nvidia", "product": product},
        "software": {"libraries": libraries},
        **({"provider": provider} if provider else {}),
    }
    return manifest(ExecutionEnvironment, name, spec, title=f"{product} · {provider or name}")


def implementation(name: str, project: str, title: str, revision: str) -> Implementation:
    spec = {"project": {"name": project}, "revision": revision, "source": {"available": True}}
    return manifest(Implementation, name, spec, title=title)


def problem_workload(name: str, sha256: str, title: str) -> WorkloadSuite:
    spec = {
        "definition": {
            "name": "19_ReLU",
            "description": "ReLU over a batch of rows.",
            "axes": {"batch_size": {"type": "const", "value": 16}, "dim": {"type": "const", "value": 16384}},
            "inputs": {"x": {"dtype": "float32", "shape": [16, 16384]}},
            "outputs": {"output": {"dtype": "unknown"}},
            "reference": {
                "path": "KernelBench/level1/19_ReLU.py",
                "url": f"https://raw.example.org/{sha256[:8]}/KernelBench/level1/19_ReLU.py",
                "sha256": sha256,
                "language": "python",
                "code": REFERENCE_CODE,
            },
        },
        "collection": "Problem Bench level 1",
        "cases": [{"axes": {"batch_size": 16, "dim": 16384}}],
    }
    return manifest(WorkloadSuite, name, spec, title=title)


def sweep_workload() -> WorkloadSuite:
    spec = {
        "definition": {
            "name": "cross_entropy forward over vocab_size",
            "description": "Cross entropy, forward pass, swept over the vocabulary size.",
            "axes": {
                "vocab_size": {"type": "var", "description": "vocabulary size"},
                "B": {"type": "const", "value": 8},
            },
            "inputs": {},
            "outputs": {"output": {"dtype": "unknown"}},
        },
        "collection": "Sweep Bench",
        "cases": [{"axes": {"vocab_size": value, "dtype": "bfloat16"}} for value in VOCAB],
    }
    return manifest(WorkloadSuite, SWEEP_WORKLOAD, spec, title="Cross entropy, forward, over vocab size")


def run(
    name: str,
    latency_ns: dict[str, int],
    statistic: str,
    observed: datetime,
    digests: dict[str, str],
    status: str = "passed",
    case_results: list[dict[str, Any]] | None = None,
) -> BenchmarkRun:
    spec: dict[str, Any] = {
        "status": status,
        "timing": {"latencyNs": latency_ns, "primaryStatistic": statistic},
        "observedAt": observed.isoformat(),
        **digests,
    }
    if case_results is not None:
        spec["caseResults"] = case_results
    return manifest(BenchmarkRun, name, spec)


def digests(
    workload: WorkloadSuite, protocol: BenchmarkProtocol, environment: ExecutionEnvironment, impl: Implementation
) -> dict[str, str]:
    return {
        "protocolDigest": protocol.digest,
        "workloadDigest": workload.digest,
        "environmentDigest": environment.digest,
        "implementationDigest": impl.digest,
    }


@dataclass(frozen=True)
class Timed:
    """One run of the problem: who, where, how fast (mean ns), when and whether it passed."""

    name: str
    implementation: str
    environment: str
    mean_ns: int
    day: int
    status: str = "passed"


PROBLEM_RUNS = [
    Timed("p-eager-b200", "eager", "b200", 20_000, 3),
    Timed("p-compile-b200", "compile", "b200", 15_000, 4),
    Timed("p-eager-h100-a", "eager", "h100-a", 30_000, 3),
    Timed("p-eager-h100-b", "eager", "h100-b", 28_000, 5),
    Timed("p-compile-h100-a", "compile", "h100-a", 26_000, 5),
    Timed("p-eager-l40s", "eager", "l40s", 90_000, 6),
    # Faster than anything on the L40S, but it failed: no figure anywhere may be this one.
    Timed("p-compile-l40s-failed", "compile", "l40s", 1_000, 6, status="failed"),
]


def problem_batches() -> list[Batch]:
    timing = protocol("problem-timing", "mean")
    environments = {
        "b200": environment("problem-setup-b200", "NVIDIA B200", {}, provider="Cloud One"),
        "h100-a": environment("problem-setup-a-h100", "NVIDIA H100 SXM", {}, provider="Cloud One"),
        "h100-b": environment("problem-setup-b-h100", "NVIDIA H100 SXM", {}, provider="Lab Two"),
        "l40s": environment("problem-setup-l40s", "NVIDIA L40S", {}, provider="Lab Two"),
    }
    implementations = {
        "eager": implementation("pytorch-eager", "PyTorch", "PyTorch eager", "eager"),
        "compile": implementation(
            "torch-compile-max-autotune", "PyTorch", "PyTorch torch.compile, max-autotune", "max-autotune"
        ),
    }
    new = problem_workload(NEW_WORKLOAD, NEW_SHA, "ReLU")
    old = problem_workload(OLD_WORKLOAD, OLD_SHA, "ReLU (first revision)")
    new_runs = [
        RunRecord(
            manifest=run(
                t.name,
                {"mean": t.mean_ns},
                "mean",
                datetime(2025, 3, t.day, tzinfo=UTC),
                digests(new, timing, environments[t.environment], implementations[t.implementation]),
                status=t.status,
            ),
            implementation=implementations[t.implementation].metadata.name,
            protocol=timing.metadata.name,
            environment=environments[t.environment].metadata.name,
            external_id=t.name,
        )
        for t in PROBLEM_RUNS
    ]
    old_run = RunRecord(
        manifest=run(
            "p-old-eager-b200",
            {"mean": 21_000},
            "mean",
            datetime(2024, 11, 5, tzinfo=UTC),
            digests(old, timing, environments["b200"], implementations["eager"]),
        ),
        implementation="pytorch-eager",
        protocol=timing.metadata.name,
        environment=environments["b200"].metadata.name,
        external_id="p-old-eager-b200",
    )
    return [
        Batch(
            unit=unit,
            workload=workload,
            external_id=f"level1/19@{workload.spec.definition.reference.sha256[:16]}",
            protocols=[timing],
            environments=list(environments.values()),
            implementations=list(implementations.values()),
            runs=runs,
        )
        for unit, workload, runs in (("new", new, new_runs), ("old", old, [old_run]))
    ]


def _case(index: int, median: int, memory: float | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "caseIndex": index,
        "latencyNs": {"median": median, "p20": median - median // 10, "p80": median + median // 10},
    }
    if memory is not None:
        result["metrics"] = {"peak_memory_mb": memory}
    return result


# Per-case medians (ns) of the two implementations; the second measured three of the four cases.
LIGER_MEDIANS = [10_000, 20_000, 40_000, 80_000]
TORCH_MEDIANS = [15_000, 30_000, 60_000]


def sweep_batch() -> Batch:
    timing = protocol("sweep-timing", "geomean")
    h100 = environment("sweep-h100-v0.5", "NVIDIA H100 SXM", {"sweep_kernel": "0.5.2"})
    liger = implementation("sweep-liger", "Liger-Kernel", "Liger-Kernel · liger", "liger")
    torch = implementation("sweep-torch", "PyTorch", "PyTorch · torch", "torch")
    workload = sweep_workload()
    observed = datetime(2025, 6, 1, tzinfo=UTC)
    liger_cases = [_case(i, ns, memory=512.0 if i < 2 else None) for i, ns in enumerate(LIGER_MEDIANS)]
    torch_cases = [_case(i, ns) for i, ns in enumerate(TORCH_MEDIANS)]
    # The next release on the same GPU: another comparison group, told apart by its software.
    h100_next = environment("sweep-h100-v0.6", "NVIDIA H100 SXM", {"sweep_kernel": "0.6.0"})
    next_cases = [_case(i, 2 * ns) for i, ns in enumerate(LIGER_MEDIANS)]
    runs = [
        RunRecord(
            manifest=run(
                "s-liger-next",
                {"geomean": 56_569},
                "geomean",
                observed,
                digests(workload, timing, h100_next, liger),
                case_results=next_cases,
            ),
            implementation=liger.metadata.name,
            protocol=timing.metadata.name,
            environment=h100_next.metadata.name,
            external_id="s-liger-next",
        ),
        RunRecord(
            manifest=run(
                "s-liger",
                {"geomean": 28_284},
                "geomean",
                observed,
                digests(workload, timing, h100, liger),
                case_results=liger_cases,
            ),
            implementation=liger.metadata.name,
            protocol=timing.metadata.name,
            environment=h100.metadata.name,
            external_id="s-liger",
        ),
        RunRecord(
            manifest=run(
                "s-torch",
                {"geomean": 30_000},
                "geomean",
                observed,
                digests(workload, timing, h100, torch),
                case_results=torch_cases,
            ),
            implementation=torch.metadata.name,
            protocol=timing.metadata.name,
            environment=h100.metadata.name,
            external_id="s-torch",
        ),
    ]
    return Batch(
        unit="sweep",
        workload=workload,
        external_id="cross_entropy/forward/vocab_size",
        protocols=[timing],
        environments=[h100, h100_next],
        implementations=[liger, torch],
        runs=runs,
    )


def write_catalogue(sessions: sessionmaker[Session]) -> None:
    """Write both sources' batches as an ingest does, committed."""
    with sessions() as session:
        problems = ensure_source(session, PROBLEM_SOURCE)
        for batch in problem_batches():
            apply_batch(session, problems, batch, NOW)
        apply_batch(session, ensure_source(session, SWEEP_SOURCE), sweep_batch(), NOW)
        session.commit()
