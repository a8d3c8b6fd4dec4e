"""Building a bundle's payload from measured figures: pure functions (no torch), tested on the CPU."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kernelindex.rerun import RUNNER_VERSION, protocol, protocol_v2, roofline, stats
from kernelindex.rerun.cases import Case

PASSED, FAILED, ERROR = "passed", "failed", "error"


def utc_now() -> str:
    """Now as an RFC 3339 UTC timestamp with milliseconds and a `Z`."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    return uuid.uuid4().hex


def ceiling_rates(ceilings: Mapping[str, Any]) -> tuple[float, float] | None:
    """(copy bytes/s, fp32 FMA FLOP/s) when both were measured, else None."""
    try:
        copy, fma = float(ceilings["copyBytesPerSecond"]["value"]), float(ceilings["fp32FmaFlops"]["value"])
    except (KeyError, TypeError, ValueError):
        return None
    return (copy, fma) if copy > 0 and fma > 0 and math.isfinite(copy) and math.isfinite(fma) else None


def case_record(
    slug: str,
    case: Case,
    ceilings: Mapping[str, Any],
    *,
    correctness: Sequence[Mapping[str, Any]] | None = None,
    samples_ns: Sequence[Sequence[int]] | None = None,
    error: str | None = None,
    measurement: Mapping[str, Any] | None = None,
    bootstrap_seed: int | None = None,
) -> dict[str, Any]:
    """One case of a bundle. Status: `error` when `error` is given, else `failed` when any output failed
    the tolerance, else `passed` (which needs timing samples).

    Protocol v2 adds `measurement` (timing method, attempts, clock readings, checks of timed calls, kept
    under the case's `measurement` key) and `bootstrap_seed` (the timing then carries the median's
    bootstrap interval). The roofline is computed only for workloads whose counts are known."""
    rates = ceiling_rates(ceilings)
    bound = roofline.case_roofline(slug, case.axes, *rates) if rates and slug in roofline.COUNTERS else None
    if error is not None:
        status = ERROR
    elif correctness is None or not all(c.get("passed") for c in correctness):
        status = FAILED
        error = "correctness: " + "; ".join(
            c.get("message") or f"{c['name']} matched {c.get('matchedRatio', 0):.6f} < {protocol.MATCHED_RATIO}"
            for c in (correctness or [])
            if not c.get("passed")
        )
    elif not samples_ns:
        status, error = ERROR, "no timing samples"
    else:
        status = PASSED
    timing = stats.summarize_case(samples_ns) if status == PASSED and samples_ns else None
    if timing is not None and bootstrap_seed is not None:
        pooled = [s for trial in timing["samplesNs"] for s in trial]
        timing["medianIntervalNs"] = list(
            stats.bootstrap_median_interval(
                pooled,
                resamples=protocol_v2.BOOTSTRAP_RESAMPLES,
                confidence=protocol_v2.BOOTSTRAP_CONFIDENCE,
                seed=bootstrap_seed,
            )
        )
        timing["medianIntervalConfidence"] = protocol_v2.BOOTSTRAP_CONFIDENCE
    record = {
        "index": case.index,
        "axes": dict(case.axes),
        "status": status,
        "message": error,
        "correctness": list(correctness) if correctness is not None else None,
        "timing": timing,
        "roofline": bound,
        "boundFraction": bound["boundNs"] / timing["medianNs"] if bound and timing else None,
    }
    if measurement is not None:
        record["measurement"] = dict(measurement)
    return record


def suite_record(cases: Sequence[Mapping[str, Any]], suite_case_count: int) -> dict[str, Any]:
    """The suite figure: geometric mean of the per-case medians, only when every measured case passed."""
    passed = [c for c in cases if c["status"] == PASSED]
    all_passed = bool(cases) and len(passed) == len(cases)
    latency = stats.suite_latency_ns([c["timing"]["medianNs"] for c in passed]) if all_passed else None
    bounds = [c["roofline"]["boundNs"] for c in cases if c.get("roofline")]
    bound = stats.geometric_mean(bounds) if bounds and len(bounds) == len(cases) else None
    return {
        "statistic": protocol.SUITE_STATISTIC,
        "latencyNs": latency,
        "boundNs": bound,
        "boundFraction": bound / latency if bound is not None and latency else None,
        "casesMeasured": len(cases),
        "casesPassed": len(passed),
        "suiteCaseCount": suite_case_count,
        "complete": len(cases) == suite_case_count,
    }


def bundle_status(cases: Sequence[Mapping[str, Any]]) -> str:
    statuses = {c["status"] for c in cases}
    if not cases or ERROR in statuses:
        return ERROR
    return FAILED if FAILED in statuses else PASSED


def build_payload(
    *,
    suite: Mapping[str, Any],
    implementation: Mapping[str, Any],
    environment: Mapping[str, Any],
    ceilings: Mapping[str, Any],
    cases: Sequence[Mapping[str, Any]],
    started_at: str,
    finished_at: str,
    session_id: str,
    protocol_spec: Mapping[str, Any],
    bundle_id: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The payload of one bundle: one implementation on one workload's (selected) cases, measured under
    `protocol_spec` (the `protocol_spec()` of the protocol version that was run)."""
    status = ERROR if error else bundle_status(cases)
    failures = [f"case {c['index']}: {c['message']}" for c in cases if c["status"] != PASSED]
    return {
        "bundleId": bundle_id or new_id(),
        "sessionId": session_id,
        "runnerVersion": RUNNER_VERSION,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "workload": dict(suite),
        "implementation": dict(implementation),
        "protocol": dict(protocol_spec),
        "environment": dict(environment),
        "ceilings": dict(ceilings),
        "status": status,
        "message": error or ("; ".join(failures) if failures else None),
        "suite": suite_record(cases, int(suite["caseCount"])),
        "cases": [dict(c) for c in cases],
    }
