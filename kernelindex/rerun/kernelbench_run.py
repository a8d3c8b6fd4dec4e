"""Measuring KernelBench problems under protocol v2 or the source-faithful protocol: each problem's own
PyTorch program, eager and through torch.compile, one signed bundle per (problem, mode).

Per problem: the program is imported from its file; with torch's default device set to the GPU and
torch.manual_seed(SEED) before each of get_init_inputs(), Model(...) and get_inputs(), its weights and
inputs are drawn on the GPU, the same on every run. The float64 reference is a deep copy of the Model
converted to float64, called on float64 copies of the floating inputs; where that fails, the float32
eager program is the reference and the case says so. Every call runs under torch.no_grad().
"""

from __future__ import annotations

import copy
import functools
import gc
import importlib.util
import json
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from kernelindex.rerun import RUNNER_VERSION, protocol_faithful, protocol_v2
from kernelindex.rerun.cases import Case, cases_sha256
from kernelindex.rerun.correctness import check_outputs
from kernelindex.rerun.environment import smi_query
from kernelindex.rerun.kernelbench_problems import Problem, Progress
from kernelindex.rerun.measure import rotation_sets, tensor_bytes, timed_record
from kernelindex.rerun.payload import build_payload, case_record, new_id, utc_now
from kernelindex.rerun.timing import poison, rotated_inputs
from kernelindex.rerun.timing_v2 import CaseTiming
from kernelindex.rerun.unsigned import write_unsigned

IMPLEMENTATIONS = {
    "eager": ("pytorch-eager", "PyTorch eager", "The problem's Model called as written, under torch.no_grad()."),
    "compile": (
        "torch-compile-inductor-default",
        "PyTorch torch.compile (Inductor, default mode)",
        "The problem's Model through torch.compile (default mode), called under torch.no_grad().",
    ),
}
TOLERANCE = {"dtype": None, "atol": protocol_v2.KERNELBENCH_ATOL, "rtol": protocol_v2.KERNELBENCH_RTOL}
# The protocols a KernelBench run can measure under, by the name the command line takes.
STRICT, FAITHFUL = "v2", "faithful"
PROTOCOLS = {STRICT: protocol_v2, FAITHFUL: protocol_faithful}
RANDOM_REFERENCE = (
    "float32 eager program, reseeded as before every call: its forward draws random numbers, which a float64 "
    "run would not draw alike, so eager is checked only for drawing the same ones every call"
)


@dataclass
class Built:
    """A problem made ready on the device: its model, inputs, reference outputs and their story."""

    model: torch.nn.Module
    inputs: list[Any]
    refs: list[torch.Tensor]
    reference: str  # "float64", or why the float32 program stands in
    random_forward: bool = False


@contextmanager
def default_device(device: torch.device) -> Iterator[None]:
    previous = torch.get_default_device()
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(previous)


def load_module(problem: Problem) -> ModuleType:
    name = f"kernelbench_l{problem.level}_{problem.number}_{problem.sha256[:8]}"
    spec = importlib.util.spec_from_file_location(name, problem.path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {problem.path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def constants(module: ModuleType) -> dict[str, int]:
    """The program's module-level integer constants (its sizes): the axes of its one case."""
    return {k: v for k, v in vars(module).items() if type(v) is int and not k.startswith("_") and abs(v) <= 2**53 - 1}


def outputs_of(result: Any) -> list[Any]:
    """What a forward returned, as a flat list (a tensor, or a tuple or list of them)."""
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in outputs_of(item)]
    return [result]


def build(module: ModuleType, device: torch.device, seed: int = protocol_v2.SEED) -> Built:
    with default_device(device):
        torch.manual_seed(seed)
        init = module.get_init_inputs()
        torch.manual_seed(seed)
        model = module.Model(*init)
        torch.manual_seed(seed)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    model = model.to(device)
    random = draws_random_numbers(model, inputs)
    if random:
        torch.manual_seed(seed)
        with torch.no_grad():
            refs = [t.detach().clone() for t in outputs_of(model(*inputs))]
        return Built(model, inputs, refs, RANDOM_REFERENCE, random_forward=True)
    try:
        reference_model = copy.deepcopy(model).double()
        wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        torch.manual_seed(seed)
        with torch.no_grad():
            refs = [t.detach() for t in outputs_of(reference_model(*wide))]
        del reference_model, wide
        reference = "float64"
    except Exception as exc:
        torch.manual_seed(seed)
        with torch.no_grad():
            refs = [t.detach().clone() for t in outputs_of(model(*inputs))]
        reference = f"float32 eager program (float64 failed: {_message(exc)[:300]})"
    return Built(model, inputs, refs, reference)


def draws_random_numbers(model: torch.nn.Module, inputs: Sequence[Any]) -> bool:
    """Whether the forward draws random numbers (dropout in training mode, torch.randn inside forward):
    two calls on the same inputs, without reseeding, disagree beyond the tolerance. Differences within it
    (the order of atomic additions) do not count."""
    with torch.no_grad():
        first = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in outputs_of(model(*inputs))]
        second = outputs_of(model(*inputs))
    names = [f"output{i}" for i in range(len(first))]
    return not all(c["passed"] for c in check_outputs(names, second, first, **TOLERANCE))


def implementation(model: torch.nn.Module, mode: str, seed: int = protocol_v2.SEED) -> Callable[..., Any]:
    """The call the timer makes. The default generator is reseeded before every call, so a forward that
    draws random numbers draws the same ones each time (host work only, which v2 does not measure); not
    while a CUDA graph is being captured, where reseeding is not allowed."""
    target: Callable[..., Any] = torch.compile(model) if mode == "compile" else model

    def call(*inputs: Any) -> Any:
        if not (torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()):
            torch.manual_seed(seed)
        with torch.no_grad():
            return target(*inputs)

    return call


def apply_settings(protocol: str) -> dict[str, Any]:
    """Set the backend settings `protocol` measures under and return them as read back. The faithful
    protocol sets PyTorch's defaults (KernelBench's settings); strict v2 sets TF32 off everywhere."""
    wanted = protocol_faithful.SETTINGS if protocol == FAITHFUL else protocol_faithful.STRICT_SETTINGS
    torch.backends.cuda.matmul.allow_tf32 = bool(wanted["torch.backends.cuda.matmul.allow_tf32"])
    torch.backends.cudnn.allow_tf32 = bool(wanted["torch.backends.cudnn.allow_tf32"])
    torch.backends.cudnn.benchmark = bool(wanted["torch.backends.cudnn.benchmark"])
    torch.set_float32_matmul_precision(str(wanted["torch.get_float32_matmul_precision()"]))
    return read_settings()


def read_settings() -> dict[str, Any]:
    """The backend settings in force, under the names `protocol_faithful.SETTINGS` uses."""
    return {
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
    }


def implementation_record(problem: Problem, mode: str, protocol: str = STRICT) -> dict[str, Any]:
    name, runtime, description = IMPLEMENTATIONS[mode]
    versions = f"torch=={torch.__version__}"
    return {
        "name": name,
        "project": "PyTorch",
        "revision": f"torch-{torch.__version__}",
        "language": "Python",
        "runtime": runtime,
        "license": "BSD-3-Clause (PyTorch); problem program MIT (KernelBench)",
        "sourceAvailable": True,
        "sourcePath": problem.shown_path,
        "sourceSha256": problem.sha256,
        "description": description,
        "installRecipe": (
            f"pip install {versions} triton numpy cryptography rfc8785; python3 -m kernelindex.rerun kernelbench "
            f"--key KEYFILE --out DIR --problem {problem.key} --mode {mode}"
            + (f" --protocol {protocol}" if protocol != STRICT else "")
        ),
    }


def suite_record(problem: Problem, case: Case) -> dict[str, Any]:
    return {
        "slug": problem.slug,
        "source": "kernelbench",
        "sourceName": problem.file_name.removesuffix(".py"),
        "sourcePath": problem.source_path,
        "commit": problem.commit,
        "level": problem.level,
        "fixturePath": problem.shown_path,
        "fixtureSha256": problem.sha256,
        "casesSha256": cases_sha256([case]),
        "caseCount": 1,
    }


def measure_mode(
    problem: Problem,
    case: Case,
    built: Built,
    mode: str,
    *,
    device: torch.device,
    flush: torch.Tensor,
    timer: Callable[..., CaseTiming],
    ceilings: dict[str, Any],
    settings: dict[str, Any] | None = None,
    graph_check: bool = False,
) -> dict[str, Any]:
    """The case record of one mode: first call checked (compiles), then timed under v2's timer and its
    timed calls checked; the reference used (and `settings`, the backend settings read back, where the
    protocol records them) is written into the record's measurement. With `graph_check`, a case timed
    by the blocking kernel is timed again by CUDA-graph replay, kept as `measurement.graphReplay`."""
    slug, names = problem.slug, [f"output{i}" for i in range(len(built.refs))]
    check = _checker(names, built.refs)
    try:
        fn = implementation(built.model, mode)
        first = fn(*built.inputs)
        _sync(device)
        checks = check(first)
        poison(outputs_of(first), [x for x in built.inputs if isinstance(x, torch.Tensor)])
        del first
    except Exception as exc:
        return case_record(slug, case, ceilings, error=f"first call: {_message(exc)}")
    if not all(c["passed"] for c in checks):
        measurement = {"reference": built.reference, "forwardDrawsRandomNumbers": built.random_forward}
        return case_record(slug, case, ceilings, correctness=checks, measurement=measurement)
    tensors = [x for x in built.inputs if isinstance(x, torch.Tensor)]
    total = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else 0
    sets = rotated_inputs(built.inputs, rotation_sets(tensor_bytes(tensors), total))
    rotation = len(sets)
    try:
        timing = timer(fn, sets, flush, check=check)
        replay = graph_replay(timer, fn, sets, flush, check) if graph_check else None
    except Exception as exc:
        return case_record(slug, case, ceilings, correctness=checks, error=f"timing: {_message(exc)}")
    finally:
        del sets
    record = timed_record(slug, case, ceilings, checks, timing, rotation)
    if replay is not None and timing.method == protocol_v2.BLOCKING_KERNEL:
        record.setdefault("measurement", {})["graphReplay"] = replay
    record.setdefault("measurement", {}).update(
        reference=built.reference, forwardDrawsRandomNumbers=built.random_forward
    )
    if settings is not None:
        record["measurement"]["settings"] = dict(settings)
    return record


def graph_replay(
    timer: Callable[..., CaseTiming],
    fn: Callable[..., Any],
    sets: Sequence[Sequence[Any]],
    flush: torch.Tensor,
    check: Callable[[Any], list[dict[str, Any]]],
) -> dict[str, Any]:
    """The same call timed by CUDA-graph replay, for comparison with its blocking-kernel figure: a
    network whose host work the blocking kernel cannot hide shows up as a gap between the two. A failed
    capture (a program that synchronises, say) is recorded as such, not as a failed case."""
    try:
        replay = timer(fn, sets, flush, check=check, graph_only=True)
    except Exception as exc:
        return {"method": protocol_v2.CUDA_GRAPH, "error": _message(exc)}
    passed = all(c["passed"] for trial in replay.checks for c in trial)
    return {
        "method": replay.method,
        "samplesNs": replay.samples,
        "passedNoiseGate": replay.passed_gate,
        "timedCallsCorrect": passed,
    }


def _checker(names: list[str], refs: Sequence[torch.Tensor]) -> Callable[[Any], list[dict[str, Any]]]:
    def check(result: Any) -> list[dict[str, Any]]:
        return check_outputs(names, outputs_of(result), refs, **TOLERANCE)

    return check


def run_problems(
    problems: Sequence[Problem],
    modes: Sequence[str],
    *,
    device: torch.device,
    env: dict[str, Any],
    ceilings: dict[str, Any],
    flush: torch.Tensor,
    timer: Callable[..., CaseTiming],
    private_key: Any,
    out_dir: Path,
    session_id: str,
    deadline: float | None = None,
    clocks: Callable[[], dict[str, Any]] | None = None,
    log: Callable[[str], None] = print,
    protocol: str = STRICT,
    graph_check: bool = False,
) -> list[dict[str, Any]]:
    """Measure every (problem, mode) not yet done in `out_dir`'s progress file, writing one signed bundle
    each under `protocol` (`STRICT` or `FAITHFUL`); stops starting new problems once `deadline` (a
    time.monotonic() value) has passed. `clocks` reads the GPU's clocks for each bundle's `clocksAtEnd`
    (the CPU tests pass none). The faithful protocol's settings are applied here, after the ceilings."""
    progress = Progress(out_dir / "progress.json", _protocol_name(protocol))
    settings = apply_settings(protocol) if protocol == FAITHFUL else None
    written = []
    for problem in problems:
        todo = [m for m in modes if not progress.is_done(problem, m)]
        if not todo:
            continue
        if deadline is not None and time.monotonic() > deadline:
            log(f"deadline reached; {problem.key} and later problems are left for the next call")
            break
        log(f"{problem.key} ({problem.slug})")
        for mode in todo:
            progress.start(problem, mode, utc_now())
        started = utc_now()
        case = Case(0, {})
        try:
            module = load_module(problem)
            case = Case(0, constants(module))
            built: Built | None = build(module, device)
            _sync(device)
            setup_error = None
        except Exception as exc:
            built, setup_error = None, f"program: {_message(exc)}"
        for mode in todo:
            if built is None:
                record = case_record(problem.slug, case, ceilings, error=setup_error)
            else:
                try:
                    record = measure_mode(
                        problem,
                        case,
                        built,
                        mode,
                        device=device,
                        flush=flush,
                        timer=timer,
                        ceilings=ceilings,
                        settings=settings,
                        graph_check=graph_check,
                    )
                except Exception as exc:  # anything the per-step handlers missed: this pair only
                    record = case_record(problem.slug, case, ceilings, error=_message(exc))
            env_end = dict(env, clocksAtEnd=clocks() if clocks else env.get("clocksAtStart"))
            row = _sign(
                problem, mode, case, record, env_end, ceilings, started, session_id, private_key, out_dir, protocol
            )
            written.append(row)
            progress.finish(problem, mode, {k: written[-1][k] for k in ("status", "path", "medianNs", "message")})
            log(f"  {mode}: {written[-1]['status']} {_figure(written[-1])}")
        del built
        _free(device)
    return written


def _sign(
    problem: Problem,
    mode: str,
    case: Case,
    record: dict[str, Any],
    env: dict[str, Any],
    ceilings: dict[str, Any],
    started: str,
    session_id: str,
    private_key: Any,
    out_dir: Path,
    protocol: str = STRICT,
) -> dict[str, Any]:
    payload = build_payload(
        suite=suite_record(problem, case),
        implementation=implementation_record(problem, mode, protocol),
        environment=env,
        ceilings=ceilings,
        cases=[record],
        started_at=started,
        finished_at=utc_now(),
        session_id=session_id,
        protocol_spec=PROTOCOLS[protocol].protocol_spec(),
    )
    tag = "--faithful" if protocol == FAITHFUL else ""
    path = out_dir / f"{problem.slug}--{IMPLEMENTATIONS[mode][0]}{tag}--{payload['bundleId'][:12]}.json"
    if private_key is None:  # signed later, elsewhere (`unsigned.py`)
        path = write_unsigned(payload, path)
    else:
        from kernelindex.rerun.bundle import sign_payload, write_bundle  # needs cryptography: only when signing

        write_bundle(sign_payload(payload, private_key), path)
    timing = record.get("timing") or {}
    return {
        "path": path.name,
        "problem": problem.key,
        "mode": mode,
        "status": payload["status"],
        "medianNs": timing.get("medianNs"),
        "method": (record.get("measurement") or {}).get("method"),
        "message": (payload["message"] or "")[:500] or None,
        "runnerVersion": RUNNER_VERSION,
    }


def _protocol_name(protocol: str) -> str:
    module = PROTOCOLS[protocol]
    return f"{module.PROTOCOL_NAME}-v{module.PROTOCOL_VERSION}"


def _figure(row: dict[str, Any]) -> str:
    if row["medianNs"] is None:
        return (row["message"] or "")[:200]
    return f"median {row['medianNs'] / 1000:.1f} us ({row['method']})"


def _message(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()[:2000]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _free(device: torch.device) -> None:
    torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_kernelbench_session(
    problems: Sequence[Problem],
    modes: Sequence[str],
    private_key: Any,
    out_dir: Path,
    *,
    device: str = "cuda",
    budget_s: float | None = None,
    log: Callable[[str], None] = print,
    protocol: str = STRICT,
    graph_check: bool = False,
) -> list[dict[str, Any]]:
    """Set up the GPU (environment, ceilings, flush buffer, blocking gate) and measure the problems; the
    rows of this call are also appended to `<out>/sessions.jsonl`."""
    from kernelindex.rerun.measure import cuda_device, prepare

    deadline = time.monotonic() + budget_s if budget_s is not None else None
    dev = cuda_device(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    session_id = new_id()
    started = utc_now()
    env, ceilings, flush, timer = prepare(dev, log)
    rows = run_problems(
        problems,
        modes,
        device=dev,
        env=env,
        ceilings=ceilings,
        flush=flush,
        timer=timer,
        private_key=private_key,
        out_dir=out_dir,
        session_id=session_id,
        deadline=deadline,
        clocks=functools.partial(smi_query, dev.index or 0, env["gpu"].get("uuid")),
        log=log,
        protocol=protocol,
        graph_check=graph_check,
    )
    with (out_dir / "sessions.jsonl").open("a", encoding="utf-8") as fh:
        entry = {"sessionId": session_id, "startedAt": started, "finishedAt": utc_now(), "rows": rows}
        fh.write(json.dumps(entry) + "\n")
    return rows
