"""Human labels for the source-native fields a run page shows, in one table for every source.

Each field keeps its source's own name beside the label (small text on the page), so a reader
can match it with the source's documentation; values are shown without JSON quoting, numbers as
the source published them with their unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.figures import DATASHEET, MEASURED_CEILINGS, share_label


@dataclass(frozen=True)
class FieldLabel:
    label: str
    unit: str = ""  # written after a number: " ms", "×", "%"
    mono: bool = False  # an identifier, shown in the monospace face


FIELD_LABELS: dict[str, FieldLabel] = {
    # NVIDIA SOL-ExecBench submissions (fixtures/sol-execbench/README.md)
    "sol_score": FieldLabel("SOL score"),
    "latency_ms": FieldLabel("Latency", " ms"),
    "avg_speedup": FieldLabel("Mean speed-up vs baseline", "×"),
    "fast_1_count": FieldLabel("Cases faster than the scoring baseline"),
    "fast_1_total": FieldLabel("Cases scored"),
    "evaluation_stack": FieldLabel("Evaluation stack"),
    "worker": FieldLabel("Worker", mono=True),
    # KernelBench timing files
    "std_ms": FieldLabel("Standard deviation", " ms"),
    "num_trials": FieldLabel("Timed trials"),
    "hardware": FieldLabel("GPU as PyTorch names it"),
    "device": FieldLabel("Device", mono=True),
    "setup": FieldLabel("Hardware setup", mono=True),
    "mode": FieldLabel("Execution mode", mono=True),
    "commit": FieldLabel("Commit", mono=True),
    "file": FieldLabel("File", mono=True),
    # Liger-Kernel benchmark data
    "liger_version": FieldLabel("Liger-Kernel release"),
    "liger_kernel": FieldLabel("Liger-Kernel release"),
    "kernel_provider": FieldLabel("Provider", mono=True),
    "gpu_name": FieldLabel("GPU as PyTorch names it"),
    "timestamp": FieldLabel("Measured at (source clock, no time zone)"),
    "cases_measured": FieldLabel("Cases measured"),
    "cases_total": FieldLabel("Cases in the sweep"),
    "memory_observed_at": FieldLabel("Peak memory measured at"),
    # KernelIndex controlled reruns
    "runner_key_id": FieldLabel("Runner key", mono=True),
    "session_id": FieldLabel("Session", mono=True),
    "cases_passed": FieldLabel("Cases passed"),
    "case_count": FieldLabel("Cases in the suite"),
    # Runs imported before the speed of light existed carry the bound at measured ceilings as bound_ns.
    "bound_ns": FieldLabel("Achievable bound (measured ceilings)", " ns"),
    "percent_of_bound": FieldLabel(share_label(MEASURED_CEILINGS), " %"),
    "limiter": FieldLabel("Achievable bound limited by"),
    "sol_bound_ns": FieldLabel("Speed-of-light bound (datasheet peaks)", " ns"),
    "percent_of_sol_bound": FieldLabel(share_label(DATASHEET), " %"),
    "sol_compute_precision": FieldLabel("Speed of light's compute at the peak of", mono=True),
    "achievable_bound_ns": FieldLabel("Achievable bound (measured ceilings)", " ns"),
    "percent_of_achievable_bound": FieldLabel(share_label(MEASURED_CEILINGS), " %"),
    "achievable_limiter": FieldLabel("Achievable bound limited by"),
    "torch": FieldLabel("PyTorch"),
    "python": FieldLabel("Python"),
    "triton": FieldLabel("Triton"),
    "cuda": FieldLabel("CUDA"),
    # Protocol fields, as the BenchmarkProtocol manifest names them
    "harness": FieldLabel("Harness"),
    "timer": FieldLabel("Timer", mono=True),
    "primaryStatistic": FieldLabel("Primary statistic"),
    "correctnessReference": FieldLabel("Correctness reference"),
    "comparabilityFamily": FieldLabel("Comparability family", mono=True),
    "notes": FieldLabel("Notes"),
}


def field_label(name: str) -> FieldLabel:
    """The label of a field; one not in the table reads as its words ("peak_memory_mb" → "Peak memory mb")."""
    return FIELD_LABELS.get(name) or FieldLabel(name.replace("_", " ").capitalize())


def field_value(name: str, value: object) -> str:
    """``value`` as the page shows it: text unquoted, numbers as published with the field's unit."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}{field_label(name).unit}"
    if isinstance(value, float):
        return f"{value!r}{field_label(name).unit}"  # every digit the source published, no more
    if value is None:
        return "–"
    return str(value)
