"""KernelBench's problems and baseline timings as manifests.

- problem file content → ``WorkloadSuite`` (one case: the file's constants; inputs read from
  ``get_inputs()``; the file itself as the reference program);
- mode → ``Implementation`` (eager PyTorch or a ``torch.compile`` configuration);
- the timing script → one ``BenchmarkProtocol``;
- (setup folder, GPU) → ``ExecutionEnvironment``;
- timing-file entry → ``BenchmarkRun`` (evidence ``reported``).
"""

from __future__ import annotations

from typing import Any

from kernelindex.figure_gate import ms_to_ns
from kernelindex.gpus import Gpu
from kernelindex.ingest.github import GitHubRaw
from kernelindex.ingest.kernelbench.files import Measurement, Mode, Problem, readable_name
from kernelindex.ingest.kernelbench.problem_shapes import ProblemFacts
from kernelindex.manifests import (
    API_VERSION,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    WorkloadSuite,
)
from kernelindex.slugs import slugify

SOURCE_KEY = "kernelbench"
PROTOCOL_NAME = "kernelbench-baseline-timing"
PUBLISHED_TRIALS = 100
WARMUP_CALLS = 3
MAX_NAME = 200
PROTOCOL_NOTES = (
    "Baseline timings published by KernelBench (results/timing): the wall-clock time of one call of "
    "the PyTorch reference program, measured with CUDA events around the call (so launch overhead "
    "is included), after {warmup} warm-up calls, over {trials} trials of one call each; the primary "
    "figure is the mean of the trials (min, max and std are kept with each run). The L2 cache is not "
    "flushed between calls. Correctness is not checked: the reference itself is timed. Upstream "
    "states that the first published baselines ran PyTorch 2.5.0+cu124 with CUDA 12.4; later files "
    "announce newer stacks, and no file records its own. Comparable only within one problem "
    "revision, execution mode and GPU setup; not comparable with other protocols."
)


def protocol_name(trials: int) -> str:
    return PROTOCOL_NAME if trials == PUBLISHED_TRIALS else f"{PROTOCOL_NAME}-{trials}-trials"


def protocol_manifest(trials: int) -> BenchmarkProtocol:
    """The timing script's protocol; a file timed with another trial count is another protocol."""
    return BenchmarkProtocol.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkProtocol",
            "metadata": {
                "name": protocol_name(trials),
                "title": "KernelBench baseline timing" + ("" if trials == PUBLISHED_TRIALS else f" ({trials} trials)"),
            },
            "spec": {
                "harness": {"name": "KernelBench baseline timing script", "version": "not versioned"},
                "correctness": {
                    "reference": "none: the PyTorch reference program itself is timed",
                    "comparator": "not checked",
                },
                "measurement": {
                    "timer": "cuda_events_wall_clock",
                    "primaryStatistic": "mean",
                    "warmupIterations": WARMUP_CALLS,
                    "timedIterations": 1,
                    "trials": trials,
                    "l2Flush": False,
                },
                "comparability": {
                    "family": "kernelbench_baseline",
                    "notes": PROTOCOL_NOTES.format(warmup=WARMUP_CALLS, trials=trials),
                },
            },
        }
    )


def implementation_manifest(mode: Mode) -> Implementation:
    return Implementation.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "Implementation",
            "metadata": {"name": mode.implementation, "title": mode.title},
            "spec": {
                "project": {"name": "PyTorch", "url": "https://pytorch.org"},
                "revision": mode.revision,
                "language": "Python",
                "license": "BSD-3-Clause",
                "source": {"available": True, "url": "https://github.com/pytorch/pytorch"},
            },
        }
    )


def environment_name(setup: str, gpu: Gpu, setup_has_several_gpus: bool) -> str:
    name = f"kernelbench-{slugify(setup)[:120]}"
    return f"{name}-{gpu.slug}" if setup_has_several_gpus else name


def environment_manifest(setup: str, gpu: Gpu, setup_has_several_gpus: bool) -> ExecutionEnvironment:
    """One GPU of one setup folder; upstream does not state the software stack of a file."""
    return ExecutionEnvironment.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "ExecutionEnvironment",
            "metadata": {
                "name": environment_name(setup, gpu, setup_has_several_gpus),
                "title": f"KernelBench {setup} · {gpu.product}"[:300],
            },
            "spec": {
                "hardware": {"vendor": gpu.vendor, "product": gpu.product, "architecture": gpu.architecture},
                "software": {},
                "provider": setup,
            },
        }
    )


def workload_name(problem: Problem) -> str:
    """``kernelbench-l1-19-relu-<sha256[:8]>``: unique per content, readable, within 200 characters."""
    suffix = f"-{problem.sha256[:8]}"
    words = slugify(readable_name(problem.file_name))
    head = f"kernelbench-l{problem.level_number}-{problem.number}-{words}"
    return head[: MAX_NAME - len(suffix)].rstrip("-") + suffix


def workload_manifest(problem: Problem, code: str, facts: ProblemFacts, raw: GitHubRaw) -> WorkloadSuite:
    level = problem.level_number
    title = readable_name(problem.file_name)
    description = facts.description or (
        f"KernelBench level {level} problem {problem.number}, {title}: the reference program defines the computation."
    )
    spec: dict[str, Any] = {
        "definition": {
            "name": problem.stem,
            "description": description,
            "axes": {name: {"type": "const", "value": value} for name, value in facts.constants.items()},
            "inputs": {
                name: {
                    "dtype": tensor.dtype,
                    **({"shape": tensor.shape} if tensor.shape is not None else {}),
                    **({"description": tensor.description} if tensor.description else {}),
                }
                for name, tensor in facts.inputs.items()
            },
            "outputs": {
                "output": {"dtype": "unknown", "description": "What Model.forward returns: see the reference program."}
            },
            "reference": {
                "path": problem.path,
                "url": raw.public_url(problem.commit.sha, problem.path),
                "sha256": problem.sha256,
                "language": "python",
                "code": code,
            },
        },
        "collection": f"KernelBench level {level}",
        "tags": ["kernelbench", f"level {level}"],
        "cases": [{"axes": dict(facts.constants)}],
        "sourceNative": {
            "source": SOURCE_KEY,
            "externalId": problem.path,
            "metrics": {"commit": problem.commit.sha},
        },
    }
    if facts.model_name:
        spec["originModel"] = facts.model_name[:300]
    return WorkloadSuite.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadSuite",
            "metadata": {"name": workload_name(problem), "title": title[:300]},
            "spec": spec,
        }
    )


def run_name(measurement: Measurement) -> str:
    """Setup, mode, level, problem number and the timing file's blob: unique and stable."""
    file = measurement.file
    number = measurement.problem.split("_", 1)[0]
    tail = f"-{file.mode.implementation}-l{measurement.level.removeprefix('level')}-{number}-{file.blob[:10]}"
    return f"kernelbench-{slugify(file.setup)[: MAX_NAME - len('kernelbench-') - len(tail)]}{tail}"


def run_external_id(measurement: Measurement) -> str:
    """``level1/19/<16 hex>``: the problem and the timing file version (path and content)."""
    number = int(measurement.problem.split("_", 1)[0])
    return f"{measurement.level}/{number}/{measurement.file.key}"


def run_manifest(measurement: Measurement, stem: str, digests: dict[str, str]) -> BenchmarkRun:
    file, entry = measurement.file, measurement.entry
    return BenchmarkRun.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {
                "name": run_name(measurement),
                "title": f"{file.mode.title} · {stem} · {measurement.gpu.product} ({file.setup})"[:300],
            },
            "spec": {
                "status": "passed",
                "timing": {
                    "latencyNs": {"mean": ms_to_ns(entry.mean), "min": ms_to_ns(entry.min), "max": ms_to_ns(entry.max)},
                    "primaryStatistic": "mean",
                },
                "observedAt": file.commit.committed_at,
                "sourceNative": {
                    "source": SOURCE_KEY,
                    "benchmark": stem,
                    "externalId": run_external_id(measurement),
                    "metrics": {
                        "std_ms": entry.std,
                        "num_trials": entry.num_trials,
                        "hardware": entry.hardware,
                        "device": entry.device,
                        "setup": file.setup,
                        "mode": file.mode.key,
                        "commit": file.commit.sha,
                        "file": file.path,
                    },
                },
                **digests,
            },
        }
    )
