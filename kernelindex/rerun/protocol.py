"""The published rerun protocol: every constant that shapes a measurement, in one place.

`protocol_spec()` is copied verbatim into every bundle, so a reader sees the numbers that produced it.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_NAME = "kernelindex-rerun"
PROTOCOL_VERSION = "1"

# Timing: CUDA events around every single iteration; the L2 is flushed before each one (outside the
# timed region) by writing a buffer of L2_FLUSH_FACTOR x the device's L2 size; the inputs rotate among
# ROTATION_SETS copies so that consecutive iterations never read the same buffers.
TIMER = "cuda_events"
WARMUP_ITERATIONS = 10
TIMED_ITERATIONS = 50
TRIALS = 3
L2_FLUSH_FACTOR = 2
ROTATION_SETS = 4
# Before each start event the GPU spins this many cycles (torch.cuda._sleep) so that the host has
# queued the implementation's launches before the clock starts: the figure is device time, not host
# launch overhead. About 200 microseconds at the H200's clocks (plus the flush itself); no spin where
# torch.cuda._sleep is unavailable.
PRE_LAUNCH_SPIN_CYCLES = 400_000

# Statistics: per case and trial the median of the timed iterations; per case the median of all
# TRIALS x TIMED_ITERATIONS samples (the primary figure) with its spread; per suite the geometric mean
# of the per-case medians, the same statistic family as SOL-ExecBench's suite figure (which the
# published data fit as a geometric mean of per-case latencies).
PRIMARY_STATISTIC = "median"
SUITE_STATISTIC = "geometric_mean_of_case_medians"

# Correctness: every output is compared with the reference computed in float64 on the same GPU from
# the same inputs. An element matches when |out - ref| <= ATOL + RTOL * |ref| (NaN never matches);
# an output passes when the fraction of matching elements is at least MATCHED_RATIO; a case passes
# when every output passes; the suite passes when every case passes. TF32 is switched off for the
# run (torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 both False): the
# workloads are float32 and the reference precision is float32.
ATOL = 1e-3
RTOL = 1e-3
MATCHED_RATIO = 0.999
REFERENCE_DTYPE = "float64"

# Inputs: drawn per case from a generator seeded with SEED + case index, on the device.
SEED = 20261202

# Ceilings: each the median of CEILING_REPEATS timed repeats after CEILING_WARMUP untimed ones.
CEILING_REPEATS = 10
CEILING_WARMUP = 3
COPY_BYTES = 2 * 1024**3
MATMUL_SIZE = 8192

NOTES = (
    "KernelIndex controlled rerun. Latency per case is the median of all timed iterations "
    f"({TRIALS} trials x {TIMED_ITERATIONS} iterations after {WARMUP_ITERATIONS} warm-ups per trial), "
    "each iteration timed by CUDA events with a cold L2 and rotated input buffers. The suite figure is "
    "the geometric mean of the per-case medians. Comparable only within one workload, GPU type and "
    "protocol version."
)


def protocol_spec() -> dict[str, Any]:
    """The protocol as it is written into a bundle (JSON-safe, finite numbers only)."""
    return {
        "name": PROTOCOL_NAME,
        "version": PROTOCOL_VERSION,
        "timer": TIMER,
        "warmupIterations": WARMUP_ITERATIONS,
        "timedIterations": TIMED_ITERATIONS,
        "trials": TRIALS,
        "l2Flush": {"bufferFactorOfL2": L2_FLUSH_FACTOR, "where": "before every iteration, outside the timed region"},
        "rotationSets": ROTATION_SETS,
        "preLaunchSpinCycles": PRE_LAUNCH_SPIN_CYCLES,
        "firstCall": "the correctness check, untimed; compilation and autotuning happen there",
        "outputs": "filled with NaN after every call, outside the timed region, so no later call inherits them",
        "primaryStatistic": PRIMARY_STATISTIC,
        "suiteStatistic": SUITE_STATISTIC,
        "correctness": {
            "reference": "kernelindex.rerun.references (PyTorch, written from the published semantics)",
            "referenceDtype": REFERENCE_DTYPE,
            "atol": ATOL,
            "rtol": RTOL,
            "matchedRatio": MATCHED_RATIO,
            "rule": "|out - ref| <= atol + rtol * |ref| per element; NaN never matches; pass if ratio >= matchedRatio",
            "tf32": False,
        },
        "seed": SEED,
        "ceilings": {"repeats": CEILING_REPEATS, "warmup": CEILING_WARMUP, "statistic": "median"},
        "notes": NOTES,
    }
