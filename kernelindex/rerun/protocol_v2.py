"""Rerun protocol v2: every constant that shapes a v2 measurement, and every rule in words.

Version 1 (`protocol.py`) stays as published so that its bundles keep their meaning. Version 2 changes
how the clock is kept away from the host: in v1 a ~200 µs GPU spin before each call was meant to let
the host queue its launches ahead of the start event, but a host that needs longer than the spin to
launch (38–245 µs per call were seen) leaks its own time into the measured interval, and warm-ups ran
without the spin. In v2 the GPU is held by a kernel that waits on a flag in pinned host memory until
the host has queued the start event, the call and the stop event, so no host time can be measured.

`protocol_spec()` is copied verbatim into every v2 bundle; `RULES` is the published text.
"""

from __future__ import annotations

from typing import Any

from kernelindex.rerun import protocol as v1

PROTOCOL_NAME = v1.PROTOCOL_NAME
PROTOCOL_VERSION = "2"

# Timing methods, recorded per case. The blocking kernel is tried first; a case whose blocking
# kernel times out in any call (the call synchronizes with the host, or queues more work than the
# launch queue holds while the GPU is held) is timed again from the start by replaying a CUDA graph
# of the call behind the same blocking kernel; a call that cannot be captured either is an error.
BLOCKING_KERNEL = "blocking_kernel"
CUDA_GRAPH = "cuda_graph_replay"
# The blocking kernel polls its flag at most this many times, then gives up and marks the sample
# as timed out; a timed-out sample is never used.
BLOCK_MAX_POLLS = 1_000_000

WARMUP_ITERATIONS = 10
TIMED_ITERATIONS = 50
TRIALS = 3
L2_FLUSH_FACTOR = v1.L2_FLUSH_FACTOR
ROTATION_SETS = v1.ROTATION_SETS
# Input copies for rotation never take more than this fraction of the device's memory: a problem
# whose inputs are large rotates among fewer copies (the count is recorded per case).
ROTATION_MEMORY_FRACTION = 0.25

# Statistics: a percentile bootstrap of the pooled median, seeded so a reader recomputes it exactly.
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_CONFIDENCE = 0.95
# Noise gate: the trials of a case agree when (largest trial median / smallest) - 1 is at most this.
# A case whose trials disagree is measured again, all trials, up to NOISE_ATTEMPTS times in all;
# when they still disagree the case is rejected (an error, so its suite gets no figure).
NOISE_BOUND = 0.10
NOISE_ATTEMPTS = 2

PRIMARY_STATISTIC = v1.PRIMARY_STATISTIC
SUITE_STATISTIC = v1.SUITE_STATISTIC

ATOL = v1.ATOL
RTOL = v1.RTOL
MATCHED_RATIO = v1.MATCHED_RATIO
REFERENCE_DTYPE = v1.REFERENCE_DTYPE
# KernelBench problems are whole programs (up to deep networks) whose float32 error grows with depth;
# their tolerance is KernelBench's own for float32 (atol = rtol = 1e-2), under the same matched-ratio rule.
KERNELBENCH_ATOL = 1e-2
KERNELBENCH_RTOL = 1e-2

SEED = v1.SEED
CEILING_REPEATS = v1.CEILING_REPEATS
CEILING_WARMUP = v1.CEILING_WARMUP
COPY_BYTES = v1.COPY_BYTES
MATMUL_SIZE = v1.MATMUL_SIZE

NOTES = (
    "KernelIndex controlled rerun, protocol v2. Latency per case is the median of all timed calls "
    f"({TRIALS} trials x {TIMED_ITERATIONS} calls after {WARMUP_ITERATIONS} warm-ups per trial, warm-ups "
    "under the same conditions), each call timed by CUDA events while a blocking kernel held the GPU until "
    "the host had queued the start event, the call and the stop event, so that no host time is measured; "
    f"cold L2, rotated inputs, a {BOOTSTRAP_CONFIDENCE:.0%} bootstrap interval and a noise gate "
    f"({NOISE_BOUND:.0%} between trial medians). Comparable only within one workload, GPU type and protocol version."
)

RULES: tuple[tuple[str, str], ...] = (
    (
        "implementations",
        "Open source only. For SOL-ExecBench workloads, KernelIndex's own implementations kept in the registry; "
        "for KernelBench problems (levels 1–3 at the newest commit of the bundled snapshot), the problem's PyTorch "
        "program itself: its Model as constructed (not switched to eval mode), called under torch.no_grad(), "
        "eagerly and through torch.compile (default mode). The bundle records the sha256 of the exact source "
        "file measured.",
    ),
    (
        "inputs",
        f"SOL-ExecBench workloads: per case, random inputs of the workload's dtypes and shapes drawn on the GPU "
        f"from a generator seeded with {SEED} plus the case index; never all zeros; AdaIN's mean and std computed "
        f"from the drawn x. KernelBench problems: torch's default device is set to the GPU and torch.manual_seed"
        f"({SEED}) is called before get_init_inputs(), again before the Model is built (so its weights are drawn on "
        "the GPU from that seed), and again before get_inputs(); the program's own random calls, unchanged, draw "
        "from torch's default generator on the GPU. The default device is restored afterwards. torch.manual_seed"
        f"({SEED}) is called again before every call of the program (reference, first, warm-up and timed calls; "
        "host work only, which the timing does not see; not while a CUDA graph is captured), so a forward that "
        "draws random numbers draws the same ones every call.",
    ),
    (
        "correctness",
        f"Every output against a {REFERENCE_DTYPE} run of the reference on the same GPU from the same inputs. An "
        f"element matches when |out − ref| ≤ atol + rtol × |ref| (NaN never matches); an output passes when at least "
        f"{MATCHED_RATIO:.1%} of its elements match; a case passes when every output passes. atol = rtol = {ATOL} for "
        f"SOL-ExecBench workloads, {KERNELBENCH_ATOL} for KernelBench problems. TF32 is off. KernelBench: the "
        "reference is a copy of the Model converted to float64 with its floating inputs; integer inputs and "
        "outputs stay integers. Where the float64 run is impossible (an operator without a float64 kernel on the "
        "GPU) the case says so and is checked against the float32 eager run instead, and its bundle records that "
        "reference. A program whose forward draws random numbers (two unseeded calls disagree beyond the "
        "tolerance: dropout in training mode, torch.randn in forward) is checked against its float32 eager run "
        "under the same seed, which a float64 run could not match draw for draw; the case records that. The "
        "first call on a case (compilation and autotuning happen there, untimed) is checked, and so are the "
        "outputs of the last timed call of every trial; any failure fails the case.",
    ),
    (
        "timing",
        "CUDA events around every single call. Per call: the L2 is flushed by writing a buffer "
        f"{L2_FLUSH_FACTOR}× its size; a blocking kernel is enqueued that spins on its own flag in pinned host "
        "memory; then the start event, the call on the next of the rotated input sets, the stop event; only then "
        "does the host set the flag, releasing the GPU. The GPU therefore runs the start event, the call and the "
        "stop event back to back from a full queue: host launch cost cannot enter the interval, however long the "
        f"host takes. The blocking kernel gives up after {BLOCK_MAX_POLLS:,} polls and marks the sample timed out. "
        f"{WARMUP_ITERATIONS} warm-up calls under exactly these conditions, then {TIMED_ITERATIONS} timed calls, in "
        f"{TRIALS} trials. Inputs rotate among up to {ROTATION_SETS} copies (fewer when {ROTATION_SETS} copies would "
        f"take more than {ROTATION_MEMORY_FRACTION:.0%} of the GPU's memory; the count is recorded).",
    ),
    (
        "timing method",
        "Recorded per case: blocking_kernel as above, or cuda_graph_replay when the blocking kernel timed out in any "
        "call, warm-ups included (the call waits for the host, or queues more launches than the GPU accepts while "
        "held): the case is then measured again from its first trial, the call captured once per input set as a "
        "CUDA graph and each replay timed behind the same blocking kernel. A time-out under graph replay, or a call "
        "that cannot be captured, makes the case an error.",
    ),
    (
        "clocks",
        "SM and memory clocks, temperature, power and throttle reasons of the GPU, read (NVML where pynvml is "
        "installed, else nvidia-smi) before the first trial and after every trial of every case, and kept with the "
        "case. The runner never changes clocks or power settings.",
    ),
    (
        "statistics",
        f"Per case, the median of all {TRIALS * TIMED_ITERATIONS} timed samples, with a {BOOTSTRAP_CONFIDENCE:.0%} "
        f"percentile-bootstrap interval ({BOOTSTRAP_RESAMPLES} resamples of the pooled samples with replacement, "
        f"Python's random.Random seeded with {SEED} plus the case index), p10–p90, quartiles and min–max; every raw "
        "sample is kept. The suite figure is the geometric mean of the per-case medians.",
    ),
    (
        "noise gate",
        f"The trial medians of a case must agree: largest / smallest − 1 ≤ {NOISE_BOUND:.0%}. A case that fails the "
        f"gate is measured again (all trials); after {NOISE_ATTEMPTS} attempts in all it is rejected as an error "
        "naming the spread, and its suite gets no figure. Every attempt's samples are kept.",
    ),
    (
        "ceilings",
        f"Measured in the same session on the same GPU, each the median of {CEILING_REPEATS} repeats after "
        f"{CEILING_WARMUP} warm-ups: a device-to-device copy of {COPY_BYTES:,} bytes, {MATMUL_SIZE}×{MATMUL_SIZE} "
        "bf16 and fp32 matrix products, and a compute-bound fp32 FMA kernel. A roofline bound per case where the "
        "workload's byte and FLOP counts are known (the SOL-ExecBench workloads); none for KernelBench problems.",
    ),
    (
        "signature",
        "Each bundle (one implementation on one suite or one KernelBench problem) is signed with the runner's "
        "Ed25519 key over the RFC 8785 canonical JSON of its payload; the registry imports only bundles signed by "
        "keys it approves, after checking that every figure follows from the raw samples.",
    ),
)


def protocol_spec() -> dict[str, Any]:
    """The v2 protocol as it is written into a bundle (JSON-safe, finite numbers only)."""
    return {
        "name": PROTOCOL_NAME,
        "version": PROTOCOL_VERSION,
        "timer": "cuda_events",
        "timingMethods": [BLOCKING_KERNEL, CUDA_GRAPH],
        "blockMaxPolls": BLOCK_MAX_POLLS,
        "warmupIterations": WARMUP_ITERATIONS,
        "timedIterations": TIMED_ITERATIONS,
        "trials": TRIALS,
        "l2Flush": {"bufferFactorOfL2": L2_FLUSH_FACTOR, "where": "before every call, before the blocking kernel"},
        "rotationSets": ROTATION_SETS,
        "rotationMemoryFraction": ROTATION_MEMORY_FRACTION,
        "firstCall": "the correctness check, untimed; compilation and autotuning happen there",
        "timedCallsChecked": "the last timed call of every trial",
        "outputs": "filled with NaN after every call, outside the timed region, so no later call inherits them",
        "primaryStatistic": PRIMARY_STATISTIC,
        "suiteStatistic": SUITE_STATISTIC,
        "bootstrap": {
            "resamples": BOOTSTRAP_RESAMPLES,
            "confidence": BOOTSTRAP_CONFIDENCE,
            "seed": "seed + case index",
        },
        "noiseGate": {"bound": NOISE_BOUND, "attempts": NOISE_ATTEMPTS, "rule": "max(trial medians) / min - 1"},
        "correctness": {
            "referenceDtype": REFERENCE_DTYPE,
            "atol": ATOL,
            "rtol": RTOL,
            "kernelbenchAtol": KERNELBENCH_ATOL,
            "kernelbenchRtol": KERNELBENCH_RTOL,
            "matchedRatio": MATCHED_RATIO,
            "rule": "|out - ref| <= atol + rtol * |ref| per element; NaN never matches; pass if ratio >= matchedRatio",
            "tf32": False,
        },
        "seed": SEED,
        "ceilings": {"repeats": CEILING_REPEATS, "warmup": CEILING_WARMUP, "statistic": "median"},
        "notes": NOTES,
    }
