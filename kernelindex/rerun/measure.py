"""A measurement session on one GPU: environment, ceilings, then every (workload, implementation, case).

For each case the inputs are drawn once, the float64 reference is computed once, and each
implementation is checked and (when correct) timed. An implementation that fails or crashes is recorded
as such in its bundle and the others go on. One signed bundle per (workload, implementation).
"""

from __future__ import annotations

import functools
import gc
import json
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from kernelindex.rerun import protocol_v2
from kernelindex.rerun.cases import Case, Suite, load_suite, select_cases
from kernelindex.rerun.ceilings import measure_ceilings
from kernelindex.rerun.correctness import check_outputs
from kernelindex.rerun.environment import clock_sampler, environment, smi_query
from kernelindex.rerun.implementations import REGISTRY, Implementation, for_workload
from kernelindex.rerun.inputs import make_inputs
from kernelindex.rerun.payload import build_payload, case_record, new_id, utc_now
from kernelindex.rerun.references import REFERENCES
from kernelindex.rerun.timing import flush_buffer, poison, rotated_inputs
from kernelindex.rerun.timing_v2 import CaseTiming, time_case_v2


def _log(line: str) -> None:
    print(line, flush=True)


def _case_line(name: str, record: dict[str, Any]) -> str:
    if record["timing"]:
        t = record["timing"]
        us = {k: t[k] / 1000 for k in ("medianNs", "p10Ns", "p90Ns")}
        return f"  {name}: passed, median {us['medianNs']:.1f} us (p10 {us['p10Ns']:.1f}, p90 {us['p90Ns']:.1f})"
    return f"  {name}: {record['status']}: {(record['message'] or '')[:300]}"


def _message(exc: BaseException) -> str:
    tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return tail[:2000]


def _fp32_settings() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def choose_implementations(slug: str, names: Sequence[str] | None) -> list[Implementation]:
    impls = for_workload(slug)
    if names:
        unknown = sorted(set(names) - set(REGISTRY))
        if unknown:
            raise ValueError(f"unknown implementation(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
        impls = [i for i in impls if i.name in set(names)]
    return impls


def run_session(
    workloads: Sequence[str],
    implementations: Sequence[str] | None,
    case_indices: Sequence[int] | None,
    fixtures: Path | str | None,
    private_key: Any,
    out_dir: Path,
    *,
    device: str = "cuda",
    log: Callable[[str], None] = _log,
) -> dict[str, Any]:
    """Measure, sign and write bundles under `out_dir`; returns a summary for the CLI table."""
    dev = cuda_device(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    session_id = new_id()

    suites = {slug: load_suite(slug, fixtures) for slug in workloads}
    plan = {
        slug: (
            select_cases(suites[slug], list(case_indices) if case_indices else None),
            choose_implementations(slug, implementations),
        )
        for slug in workloads
    }

    env, ceilings, flush, timer = prepare(dev, log)
    summary: dict[str, Any] = {"sessionId": session_id, "ceilings": ceilings, "bundles": []}
    for slug, (cases, impls) in plan.items():
        if impls:
            summary["bundles"] += measure_workload(
                suites[slug],
                cases,
                impls,
                env=env,
                ceilings=ceilings,
                flush=flush,
                device=dev,
                session_id=session_id,
                private_key=private_key,
                out_dir=out_dir,
                log=log,
                timer=timer,
            )
    summary_path = out_dir / f"session-{session_id[:12]}.json"
    summary_path.write_text(json.dumps(summary, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return summary


def cuda_device(device: str) -> torch.device:
    """The CUDA device to measure on, made current, with TF32 off; ValueError/RuntimeError if unusable."""
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: timing uses CUDA events and needs a GPU")
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"--device must be a CUDA device (timing uses CUDA events), not {device!r}")
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.set_device(dev)
    _fp32_settings()
    return dev


def prepare(
    dev: torch.device, log: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, Any], torch.Tensor, Callable[..., CaseTiming]]:
    """What every measurement of a session shares: the environment, the ceilings, the L2 flush buffer and
    the v2 timer."""
    env = environment(dev)
    log(
        f"GPU {env['gpu']['name']} ({env['gpu']['architecture']}, {env['gpu']['smCount']} SMs), "
        f"torch {env['software']['torch']}, triton {env['software']['triton']}"
    )
    log("measuring ceilings ...")
    ceilings = measure_ceilings(dev)
    l2 = env["gpu"]["l2CacheBytes"] or 50 * 1024**2
    return env, ceilings, flush_buffer(l2, dev), v2_timer(dev, env)


def v2_timer(device: torch.device, env: dict[str, Any]) -> Callable[..., CaseTiming]:
    """`time_case_v2` bound to this GPU's blocking gate and clock reader."""
    from kernelindex.rerun.blocking import BlockingGate

    gate = BlockingGate(protocol_v2.WARMUP_ITERATIONS + protocol_v2.TIMED_ITERATIONS)
    sampler = clock_sampler(device.index or 0, env["gpu"].get("uuid"))
    return functools.partial(time_case_v2, gate=gate, sample_clocks=sampler)


def rotation_sets(input_bytes: int, device_bytes: int) -> int:
    """How many input copies to rotate among: ROTATION_SETS, fewer when they would take more than
    ROTATION_MEMORY_FRACTION of the device's memory, never fewer than one."""
    if input_bytes <= 0 or device_bytes <= 0:
        return protocol_v2.ROTATION_SETS
    fits = int(protocol_v2.ROTATION_MEMORY_FRACTION * device_bytes // input_bytes)
    return max(1, min(protocol_v2.ROTATION_SETS, fits))


def tensor_bytes(tensors: Sequence[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def timed_record(
    slug: str,
    case: Any,
    ceilings: dict[str, Any],
    checks: list[dict[str, Any]],
    timing: CaseTiming,
    rotation: int,
) -> dict[str, Any]:
    """The case record of a correct first call that was then timed under protocol v2: failed when a
    timed call's outputs failed the check, an error when the trials never passed the noise gate."""
    measurement = {
        "method": timing.method,
        "rotationSets": rotation,
        "attempts": timing.attempts,
        "clocks": timing.clocks,
        "timedCallChecks": timing.checks,
    }
    failing = next((trial for trial in timing.checks if not all(c["passed"] for c in trial)), None)
    if failing is not None:
        return case_record(slug, case, ceilings, correctness=failing, measurement=measurement)
    if not timing.passed_gate:
        spread = timing.attempts[-1]["trialSpread"]
        message = (
            f"noise gate: trial medians {spread:.1%} apart after {len(timing.attempts)} attempts "
            f"(bound {protocol_v2.NOISE_BOUND:.0%})"
        )
        return case_record(slug, case, ceilings, correctness=checks, error=message, measurement=measurement)
    return case_record(
        slug,
        case,
        ceilings,
        correctness=checks,
        samples_ns=timing.samples,
        measurement=measurement,
        bootstrap_seed=protocol_v2.SEED + case.index,
    )


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def measure_workload(
    suite: Suite,
    cases: Sequence[Case],
    impls: Sequence[Implementation],
    *,
    env: dict[str, Any],
    ceilings: dict[str, Any],
    flush: torch.Tensor,
    device: torch.device,
    session_id: str,
    private_key: Any,
    out_dir: Path,
    log: Callable[[str], None] = _log,
    timer: Callable[..., CaseTiming],
    clocks: Callable[[], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Measure `impls` on `cases` of one suite and write one signed bundle per implementation.

    `timer` is `v2_timer(...)` (CUDA events behind the blocking kernel); the CPU tests pass a stand-in.
    """
    slug = suite.slug
    started = utc_now()
    loaded: dict[str, Any] = {}
    load_errors: dict[str, str] = {}
    for impl in impls:
        try:
            loaded[impl.name] = impl.load()
        except Exception as exc:
            load_errors[impl.name] = f"import failed: {_message(exc)}"
    records: dict[str, list[dict[str, Any]]] = {impl.name: [] for impl in impls}
    for case in cases:
        log(f"{slug} case {case.index} {case.axes}")
        try:
            inputs = make_inputs(slug, case.axes, protocol_v2.SEED + case.index, device)
            refs = list(REFERENCES[slug](*[t.double() for t in inputs]))
            _sync(device)
        except Exception as exc:
            for impl in impls:
                records[impl.name].append(case_record(slug, case, ceilings, error=f"inputs/reference: {_message(exc)}"))
            _free(device)
            continue
        total = int(env["gpu"].get("memoryBytes") or 0)
        sets = rotated_inputs(inputs, rotation_sets(tensor_bytes(inputs), total))
        for impl in impls:
            records[impl.name].append(
                _measure_one(
                    slug,
                    case,
                    suite.output_names,
                    impl,
                    loaded,
                    load_errors,
                    sets,
                    refs,
                    flush,
                    ceilings,
                    device,
                    timer,
                )
            )
            log(_case_line(impl.name, records[impl.name][-1]))
        del inputs, refs, sets
        _free(device)
    finished = utc_now()
    env_end = dict(env, clocksAtEnd=clocks() if clocks else smi_query(device.index or 0, env["gpu"].get("uuid")))
    written = []
    for impl in impls:
        payload = build_payload(
            suite=suite.record(),
            implementation=impl.record({"torch": torch.__version__, "triton": env["software"].get("triton") or ""}),
            environment=env_end,
            ceilings=ceilings,
            cases=records[impl.name],
            started_at=started,
            finished_at=finished,
            session_id=session_id,
            protocol_spec=protocol_v2.protocol_spec(),
        )
        from kernelindex.rerun.bundle import sign_payload, write_bundle  # needs cryptography: only when signing

        bundle = sign_payload(payload, private_key)
        path = out_dir / f"{slug}--{impl.name}--{payload['bundleId'][:12]}.json"
        write_bundle(bundle, path)
        written.append(
            {
                "path": str(path),
                "workload": slug,
                "implementation": impl.name,
                "status": payload["status"],
                "suite": payload["suite"],
                "message": payload["message"],
            }
        )
    return written


def _measure_one(
    slug: str,
    case: Any,
    output_names: list[str],
    impl: Implementation,
    loaded: dict[str, Any],
    load_errors: dict[str, str],
    sets: list[list[torch.Tensor]],
    refs: list[torch.Tensor],
    flush: torch.Tensor,
    ceilings: dict[str, Any],
    device: torch.device,
    timer: Callable[..., CaseTiming],
) -> dict[str, Any]:
    if impl.name in load_errors:
        return case_record(slug, case, ceilings, error=load_errors[impl.name])
    fn = loaded[impl.name]
    try:
        outs = fn(*sets[0])
        _sync(device)
        checks = check_outputs(output_names, outs, refs)
        poison(outs, sets[0])
        del outs
    except Exception as exc:
        _free(device)
        return case_record(slug, case, ceilings, error=f"first call: {_message(exc)}")
    if not all(c["passed"] for c in checks):
        return case_record(slug, case, ceilings, correctness=checks)
    try:
        timing = timer(fn, sets, flush, check=functools.partial(check_outputs, output_names, refs=refs))
    except Exception as exc:
        _free(device)
        return case_record(slug, case, ceilings, correctness=checks, error=f"timing: {_message(exc)}")
    return timed_record(slug, case, ceilings, checks, timing, len(sets))
