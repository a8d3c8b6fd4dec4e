"""Reading a signed rerun bundle and mapping it to manifests (no database here).

``read_bundle`` trusts nothing until the signature checks out against an approved runner
key, then validates the payload, checks that its figures follow from its own raw samples,
and rechecks its GPU, clocks, ceilings and bounds against the GPU's datasheet and the
workload's model (``reruns.checks``). ``map_bundle`` turns it into the manifests the registry stores: the published
rerun protocol, the environment as found, the implementation, one suite-scoped run and
one case-scoped run per case, as the ``RerunRecord`` the store writes. The importer
(``reruns.importer``) checks that the bundle fits the registry (the workload exists and has
the same cases) before mapping it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from kernelindex.gpu_specs import GpuSpec, fastest_admitted_peak, speed_of_light_ns
from kernelindex.ingest.reruns.checks import check_claims
from kernelindex.ingest.reruns.payload import Payload
from kernelindex.manifests import API_VERSION, BenchmarkProtocol, BenchmarkRun, ExecutionEnvironment, Implementation
from kernelindex.rerun import protocol_faithful as rerun_protocol_faithful
from kernelindex.rerun import protocol_v2 as rerun_protocol_v2
from kernelindex.rerun.bundle import BundleError, verify_bundle
from kernelindex.rerun.cases import Case, cases_sha256
from kernelindex.rerun.stats import (
    bootstrap_median_interval,
    geometric_mean,
    passes_noise_gate,
    suite_latency_ns,
    summarize_case,
)
from kernelindex.store.batch import RerunCaseRecord, RerunRecord
from kernelindex.store.rerun_protocols import (
    RERUN_PROTOCOL_FAITHFUL_NAME,
    RERUN_PROTOCOL_NAMES,
    V2_TIMER_PROTOCOLS,
    published_name,
    rerun_protocol_manifest,
)
from kernelindex.store.reruns import RERUN_SOURCE

MAX_BUNDLE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class VerifiedBundle:
    """A bundle whose signature and claims checked out, with the datasheet entry of its GPU."""

    payload: Payload
    key_id: str
    text: str
    file_sha256: str
    gpu: GpuSpec


class BundleRefused(BundleError):
    """A bundle refused by one named check (``check``): the upload API names it in its answer."""

    def __init__(self, check: str, message: str):
        super().__init__(message)
        self.check = check


@contextmanager
def _check(name: str) -> Iterator[None]:
    """Turn a ``BundleError`` raised inside into a ``BundleRefused`` by check ``name`` (a named one stays as it is)."""
    try:
        yield
    except BundleRefused:
        raise
    except BundleError as exc:
        raise BundleRefused(name, str(exc)) from exc


def read_bundle(data: bytes, approved_keys: dict[str, str], *, checked_key: str | None = None) -> VerifiedBundle:
    """The bundle's validated payload if its signature is by an approved key; ``BundleError`` if not
    (a ``BundleRefused`` naming the check that failed).

    ``checked_key``: these exact bytes were checked in full before, signed by this approved key
    (the bundled dataset's ``checked.json``, pinned by its file's sha256), so the signature and the
    figures recomputed from the raw samples (the costly part: a seeded bootstrap per case) are not
    checked again; the payload, its status and its claims are, as for any bundle.
    """
    document, raw_payload = signed_payload(data, approved_keys, checked_key=checked_key)
    return checked_bundle(data, document, raw_payload, samples=checked_key is None)


def signed_payload(
    data: bytes, approved_keys: dict[str, str], *, checked_key: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bundle document and its payload, once the signature is found to be by an approved key
    (the cheap half of ``read_bundle``: nothing of the payload is checked yet)."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleRefused("size", f"the bundle is {len(data)} bytes, over the {MAX_BUNDLE_BYTES}-byte limit")
    document = parse_bundle(data)
    with _check("signature"):
        if checked_key is None:
            raw_payload = verify_bundle(document, approved_keys)
        else:
            raw_payload = _checked_payload(document, approved_keys, checked_key)
    return document, raw_payload


def parse_bundle(data: bytes) -> Any:
    """The bundle's JSON, nothing of it checked."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleRefused("json", f"the bundle is not UTF-8 JSON: {exc}") from exc


def checked_bundle(
    data: bytes, document: dict[str, Any], raw_payload: dict[str, Any], *, samples: bool = True
) -> VerifiedBundle:
    """The costly half of ``read_bundle``: the payload's form, its figures against its raw samples
    (``samples`` False: checked before) and its claims against the GPU's datasheet."""
    try:
        payload = Payload.model_validate(raw_payload)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise BundleRefused("payload", f"the signed payload is malformed at {where}: {problem['msg']}") from exc
    with _check("figures"):
        _check_figures(payload, samples=samples)
    with _check("claims"):
        gpu = check_claims(payload)
    text = data.decode("utf-8")
    return VerifiedBundle(payload, document["signature"]["keyId"], text, hashlib.sha256(data).hexdigest(), gpu)


def _checked_payload(document: Any, approved_keys: dict[str, str], key: str) -> dict[str, Any]:
    signature = document.get("signature") if isinstance(document, dict) else None
    payload = document.get("payload") if isinstance(document, dict) else None
    if not isinstance(signature, dict) or signature.get("keyId") != key or key not in approved_keys:
        raise BundleError(f"the bundle is not signed by {key}, the approved key it was checked with")
    if not isinstance(payload, dict):
        raise BundleError("the bundle has no payload object")
    return payload


def _check_figures(payload: Payload, *, samples: bool = True) -> None:
    """Every stored figure must follow from the bundle's own raw samples and case list
    (``samples`` False: the figures were recomputed from the samples before, see ``read_bundle``)."""
    name = published_name(payload.protocol)
    if name is None:
        raise BundleRefused(
            "protocol",
            f"bundle {payload.bundle_id} was measured under a protocol other than "
            f"{' or '.join(sorted(RERUN_PROTOCOL_NAMES))} as published here",
        )
    if payload.status != "passed" or not payload.suite.complete or payload.suite.latency_ns is None:
        reason = payload.message or "not every case of the suite was measured and passed"
        raise BundleError(
            f"bundle {payload.bundle_id} ({payload.implementation.name}) is not a complete passing measurement: "
            f"{reason[:300]}. Only complete, correct measurements become runs."
        )
    cases = [Case(index=case.index, axes=case.axes) for case in payload.cases]
    if cases_sha256(cases) != payload.workload.cases_sha256 or len(cases) != payload.workload.case_count:
        raise BundleError(f"bundle {payload.bundle_id}: its cases do not match the suite digest it claims")
    for case in payload.cases:
        if case.status != "passed" or case.timing is None:
            raise BundleError(f"bundle {payload.bundle_id}: case {case.index} has no passing, timed result")
        if not samples:
            continue
        recomputed, claimed = summarize_case(case.timing.samples_ns), case.timing.model_dump(by_alias=True)
        for figure in ("medianNs", "minNs", "maxNs", "p10Ns", "p90Ns", "iqrNs"):
            if recomputed[figure] != claimed[figure]:
                raise BundleError(
                    f"bundle {payload.bundle_id}: case {case.index}'s {figure} does not follow from its samples"
                )
    if not samples:
        return
    medians = [case.timing.median_ns for case in payload.cases if case.timing is not None]
    if suite_latency_ns(medians) != payload.suite.latency_ns:
        raise BundleError(f"bundle {payload.bundle_id}: the suite figure is not the geometric mean of its cases")
    if name in V2_TIMER_PROTOCOLS:
        _check_v2_figures(payload)
    if name == RERUN_PROTOCOL_FAITHFUL_NAME:
        _check_faithful_settings(payload)


def _check_faithful_settings(payload: Payload) -> None:
    """The source-faithful protocol measures KernelBench programs only, and each case must have run under
    exactly the settings it publishes (as the runner read them back)."""
    if payload.workload.source != rerun_protocol_faithful.SOURCE:
        raise BundleError(
            f"bundle {payload.bundle_id}: the source-faithful protocol measures KernelBench programs only, "
            f"not {payload.workload.source}"
        )
    for case in payload.cases:
        settings = (case.measurement or {}).get("settings")
        if settings != rerun_protocol_faithful.SETTINGS:
            raise BundleError(
                f"bundle {payload.bundle_id}: case {case.index} did not record the source-faithful protocol's "
                f"settings ({settings!r} where {rerun_protocol_faithful.SETTINGS!r} is published)"
            )


def _check_v2_figures(payload: Payload) -> None:
    """Protocol v2's own figures: each case passed the noise gate, and its median interval is the seeded
    bootstrap of its samples."""
    for case in payload.cases:
        assert case.timing is not None  # _check_figures admits timed cases only
        samples = case.timing.samples_ns
        if not passes_noise_gate(samples, rerun_protocol_v2.NOISE_BOUND):
            raise BundleError(
                f"bundle {payload.bundle_id}: case {case.index}'s trials disagree by more than the noise gate's "
                f"{rerun_protocol_v2.NOISE_BOUND:.0%}"
            )
        interval = bootstrap_median_interval(
            [s for trial in samples for s in trial],
            resamples=rerun_protocol_v2.BOOTSTRAP_RESAMPLES,
            confidence=rerun_protocol_v2.BOOTSTRAP_CONFIDENCE,
            seed=rerun_protocol_v2.SEED + case.index,
        )
        if case.timing.median_interval_ns != interval:
            raise BundleError(
                f"bundle {payload.bundle_id}: case {case.index}'s median interval is not the seeded bootstrap of "
                "its samples"
            )


# --- Manifests ----------------------------------------------------------------------


def protocol_manifest(payload: Payload) -> BenchmarkProtocol:
    """The published protocol the bundle was measured under (``read_bundle`` checked it is one)."""
    return rerun_protocol_manifest(payload.protocol)


def environment_manifest(payload: Payload) -> ExecutionEnvironment:
    env = payload.environment
    product = env.gpu.name if env.gpu.name.lower().startswith(env.gpu.vendor.lower()) else f"NVIDIA {env.gpu.name}"
    libraries = {"torch": env.software.torch, "python": env.software.python}
    if env.software.triton:
        libraries["triton"] = env.software.triton
    if env.cuda_version:
        libraries["cuda"] = env.cuda_version
    software: dict[str, Any] = {"libraries": libraries}
    if env.driver_version:
        software["driver"] = env.driver_version
    # One name per GPU and software stack: reruns on the same stack share a comparison group.
    stack = "-".join(f"{key}{value}" for key, value in sorted(libraries.items()))
    name = _name(f"rerun-{product}-{stack}-driver{env.driver_version or 'unknown'}")
    title = f"{product} · PyTorch {env.software.torch}" + (f" · CUDA {env.cuda_version}" if env.cuda_version else "")
    return ExecutionEnvironment.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "ExecutionEnvironment",
            "metadata": {"name": name, "title": title},
            "spec": {
                "hardware": {"vendor": env.gpu.vendor, "product": product, "architecture": env.gpu.architecture},
                "software": software,
            },
        }
    )


def implementation_manifest(payload: Payload) -> Implementation:
    impl = payload.implementation
    return Implementation.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "Implementation",
            "metadata": {
                "name": _name(f"{impl.name}-{impl.source_sha256[:12]}"),
                "title": f"{impl.name} ({impl.runtime})",
                "labels": {"sourcePath": impl.source_path, "sourceSha256": impl.source_sha256},
            },
            "spec": {
                # One project per way of writing the kernel, so a leaderboard lists each apart.
                "project": {"name": f"KernelIndex {impl.runtime}"},
                "revision": impl.revision,
                "runtime": impl.runtime,
                "language": impl.language,
                "license": impl.license,
                "source": {"available": impl.source_available},
                "install": {"recipe": impl.install_recipe},
            },
        }
    )


def map_bundle(bundle: VerifiedBundle, workload_digest: str, operator: str | None = None) -> RerunRecord:
    """The manifests and figures the store writes for a verified bundle filed under the workload.

    Two bounds per case: the speed of light (``bound_ns``: bytes at the datasheet bandwidth, FLOPs at
    the fastest datasheet peak the tolerance admits), which no implementation can beat, and the
    achievable bound the bundle computed from the ceilings it measured, which some kernels beat.
    """
    payload = bundle.payload
    protocol, environment = protocol_manifest(payload), environment_manifest(payload)
    implementation = implementation_manifest(payload)
    digests = {
        "protocolDigest": protocol.digest,
        "workloadDigest": workload_digest,
        "environmentDigest": environment.digest,
        "implementationDigest": implementation.digest,
    }
    latency = payload.suite.latency_ns
    assert latency is not None  # read_bundle admits complete measurements only
    rtol = float(payload.protocol["correctness"]["rtol"])
    precision, _ = fastest_admitted_peak(bundle.gpu, rtol)
    # 0: no bound is known (the workload has no byte and FLOP model, as for a KernelBench program).
    sol_by_case = {case.index: 0.0 for case in payload.cases}
    achievable_by_case = dict(sol_by_case)
    for case in payload.cases:
        if case.roofline is not None:
            sol_by_case[case.index] = speed_of_light_ns(case.roofline.bytes, case.roofline.flops, bundle.gpu, rtol)
            achievable_by_case[case.index] = case.roofline.bound_ns
    bounded = all(sol_by_case.values())
    sol = geometric_mean(list(sol_by_case.values())) if bounded else 0.0
    achievable = payload.suite.bound_ns or 0.0
    metrics: dict[str, Any] = {
        "runner_key_id": bundle.key_id,
        "session_id": payload.session_id,
        "cases_passed": payload.suite.cases_passed,
        "case_count": payload.suite.suite_case_count,
    }
    if bounded:
        metrics |= {
            "sol_bound_ns": round(sol),
            "percent_of_sol_bound": round(100 * sol / latency, 3),
            "sol_compute_precision": precision,
            "achievable_bound_ns": round(achievable),
            "percent_of_achievable_bound": round(100 * achievable / latency, 3),
        }
    base = f"rerun-{payload.bundle_id[:12]}"
    title = f"{payload.implementation.name} · {payload.workload.slug} · {environment.spec.hardware.product}"
    suite_run = _run_manifest(base, title, payload, digests, {"median": latency}, metrics, None)
    case_runs = []
    for case in payload.cases:
        assert case.timing is not None
        timing = {
            "median": case.timing.median_ns,
            "min": case.timing.min_ns,
            "p10": case.timing.p10_ns,
            "p90": case.timing.p90_ns,
            "max": case.timing.max_ns,
        }
        if case.timing.median_interval_ns is not None:
            timing["median_ci_low"], timing["median_ci_high"] = case.timing.median_interval_ns
        case_metrics: dict[str, Any] = {}
        if case.roofline is not None:
            case_metrics = {
                "sol_bound_ns": round(sol_by_case[case.index]),
                "achievable_bound_ns": round(case.roofline.bound_ns),
                "achievable_limiter": case.roofline.limiter,
            }
        manifest = _run_manifest(
            f"{base}-case-{case.index}",
            f"{title} · case {case.index}",
            payload,
            digests,
            timing,
            case_metrics,
            case.index,
        )
        case_runs.append(
            RerunCaseRecord(case.index, round(sol_by_case[case.index]), round(achievable_by_case[case.index]), manifest)
        )
    return RerunRecord(
        bundle_id=payload.bundle_id,
        key_id=bundle.key_id,
        operator=operator,
        session_id=payload.session_id,
        file_sha256=bundle.file_sha256,
        machine_id=payload.environment.gpu.uuid or payload.environment.hostname,
        started_at=payload.started_at,
        finished_at=payload.finished_at,
        bundle_json=bundle.text,
        protocol=protocol,
        environment=environment,
        implementation=implementation,
        suite_run=suite_run,
        cases=case_runs,
        bound_ns=round(sol),
        achievable_bound_ns=round(achievable),
        cases_passed=payload.suite.cases_passed,
        case_count=payload.suite.suite_case_count,
    )


def _run_manifest(
    name: str,
    title: str,
    payload: Payload,
    digests: dict[str, str],
    latency: dict[str, int],
    metrics: dict[str, Any],
    case_index: int | None,
) -> BenchmarkRun:
    spec: dict[str, Any] = {
        "status": "passed",
        "timing": {"latencyNs": latency, "primaryStatistic": "median"},
        "observedAt": payload.observed_at,
        "sourceNative": {
            "source": RERUN_SOURCE.slug,
            "benchmark": payload.workload.slug,
            "externalId": payload.bundle_id,
            "metrics": metrics,
        },
        **digests,
    }
    if case_index is not None:
        spec["caseIndex"] = case_index
    return BenchmarkRun.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {"name": name, "title": title[:300]},
            "spec": spec,
        }
    )


def _name(text: str) -> str:
    """A manifest name from free text: lower case, dots and dashes, at most 200 characters."""
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return slug[:200].rstrip("-.")
