"""The KernelBench mode of the runner on the CPU: the problem list and its names, seeded building on the
device, the float64 reference and its fallback, and a whole run with a stand-in timer (progress file,
signed bundles). Timing itself is the v2 timer's, tested in test_rerun_timing_v2.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.ingest.github import Commit
from kernelindex.ingest.kernelbench.files import Problem as IngestedProblem
from kernelindex.ingest.kernelbench.manifests import workload_name
from kernelindex.rerun import protocol_v2
from kernelindex.rerun.bundle import key_id, public_key_b64, public_key_raw, read_bundle, verify_bundle
from kernelindex.rerun.kernelbench_problems import Problem, ProblemError, Progress, list_problems, select_problems
from kernelindex.rerun.kernelbench_run import build, constants, default_device, load_module, run_problems
from kernelindex.rerun.timing_v2 import CaseTiming

TINY = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x, y):
        return torch.relu(self.linear(x)) * self.scale + y, x.sum()

batch = 4
features = 8

def get_inputs():
    return [torch.randn(batch, features), torch.rand(batch, features)]

def get_init_inputs():
    return [features, 2.0]
"""

# float64 has no kernel for this operator's integer-only path: the reference falls back to float32
NO_FLOAT64 = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        if x.dtype == torch.float64:
            raise RuntimeError("no float64 kernel")
        return x * 3

def get_inputs():
    return [torch.randn(16)]

def get_init_inputs():
    return []
"""

BROKEN = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("this program does not build")

def get_inputs():
    return []

def get_init_inputs():
    return []
"""


def _problem(tmp_path: Path, number: int, words: str, code: str) -> Problem:
    path = tmp_path / f"{number}_{words}.py"
    path.write_text(code, encoding="utf-8")
    import hashlib

    return Problem(1, path.name, "c" * 40, path, hashlib.sha256(code.encode()).hexdigest())


def test_problems_are_the_newest_commits_levels_1_to_3_named_as_the_registry_names_them() -> None:
    problems = list_problems()
    assert [sum(p.level == level for p in problems) for level in (1, 2, 3)] == [100, 100, 50]
    assert problems[0].key == "level1/1_Square_matrix_multiplication_.py" and problems[-1].level == 3
    assert len({p.commit for p in problems}) == 1
    commit = Commit(problems[0].commit, datetime(2025, 12, 31, tzinfo=UTC), "newest")
    for p in problems:
        ingested = IngestedProblem("x", f"level{p.level}", p.file_name, commit, b"", p.sha256)
        assert p.slug == workload_name(ingested), p.key
    chosen = select_problems(problems, ["level2/1_Conv2D_ReLU_BiasAdd.py", "level1/19_ReLU.py"])
    assert [p.key for p in chosen] == ["level1/19_ReLU.py", "level2/1_Conv2D_ReLU_BiasAdd.py"]
    with pytest.raises(ProblemError, match="unknown problem"):
        select_problems(problems, ["level1/999_Nothing.py"])


def test_build_draws_weights_and_inputs_from_the_seed_on_the_device(tmp_path: Path) -> None:
    problem = _problem(tmp_path, 1, "Tiny", TINY)
    module = load_module(problem)
    assert constants(module) == {"batch": 4, "features": 8}
    before = torch.get_default_device()
    first, second = build(module, torch.device("cpu")), build(module, torch.device("cpu"))
    assert torch.get_default_device() == before  # restored
    assert torch.equal(first.model.linear.weight, second.model.linear.weight)
    assert all(torch.equal(a, b) for a, b in zip(first.inputs, second.inputs, strict=True))
    torch.manual_seed(protocol_v2.SEED)
    torch.randn(1)  # the model's init and the inputs are drawn right after a reseed: not this state
    other = build(module, torch.device("cpu"), seed=protocol_v2.SEED + 1)
    assert not torch.equal(first.model.linear.weight, other.model.linear.weight)
    assert first.reference == "float64" and [r.dtype for r in first.refs] == [torch.float64, torch.float64]
    expected = torch.relu(first.inputs[0].double() @ first.model.linear.weight.double().T
                          + first.model.linear.bias.double()) * 2.0 + first.inputs[1].double()  # fmt: skip
    assert torch.allclose(first.refs[0], expected) and first.model.linear.weight.dtype == torch.float32
    with default_device(torch.device("meta")):
        assert torch.empty(1).device.type == "meta"
    assert torch.get_default_device() == before

    fallback = build(load_module(_problem(tmp_path, 2, "NoDouble", NO_FLOAT64)), torch.device("cpu"))
    assert fallback.reference.startswith("float32 eager program (float64 failed: RuntimeError: no float64 kernel")
    assert fallback.refs[0].dtype == torch.float32


def _stand_in_timer(fn: Any, sets: Any, flush: Any, *, check: Any) -> CaseTiming:
    for inputs in sets:
        outputs = fn(*inputs)
    samples = [[5000 + i for i in range(protocol_v2.TIMED_ITERATIONS)] for _ in range(protocol_v2.TRIALS)]
    return CaseTiming(protocol_v2.BLOCKING_KERNEL, samples, [{"trialSpread": 0.0}], [check(outputs)], [{}])


def test_a_run_signs_one_bundle_per_problem_and_mode_and_continues_where_it_stopped(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    problems = [
        _problem(tmp_path, 1, "Tiny", TINY),
        _problem(tmp_path, 2, "NoDouble", NO_FLOAT64),
        _problem(tmp_path, 3, "Broken", BROKEN),
    ]
    out = tmp_path / "out"
    out.mkdir()
    env = {"gpu": {"name": "stand-in"}, "software": {"torch": torch.__version__}}
    common: dict[str, Any] = {
        "device": torch.device("cpu"), "env": env, "ceilings": {}, "flush": torch.empty(4),
        "timer": _stand_in_timer, "private_key": key, "out_dir": out, "session_id": "f" * 32, "log": lambda _: None,
    }  # fmt: skip

    rows = run_problems(problems[:1], ["eager"], **common)
    assert [(r["problem"], r["mode"], r["status"]) for r in rows] == [("level1/1_Tiny.py", "eager", "passed")]
    Progress(out / "progress.json").start(problems[1], "eager", "2026-12-05T00:00:00.000Z")  # then killed
    rows = run_problems(problems, ["eager"], **common)
    assert [(r["problem"], r["status"]) for r in rows] == [("level1/3_Broken.py", "error")]  # 1 done, 2 cut off
    progress = json.loads((out / "progress.json").read_text())
    assert progress["started"] == {} and progress["done"]["level1/2_NoDouble.py::eager"]["status"] == "interrupted"
    assert run_problems(problems, ["eager"], **common) == []

    approved = {key_id(public_key_raw(key.public_key())): public_key_b64(key)}
    tiny, broken = sorted(out.glob("kernelbench-l1-1-tiny-*.json")), sorted(out.glob("kernelbench-l1-3-*.json"))
    body = verify_bundle(read_bundle(tiny[0]), approved)
    assert body["protocol"] == protocol_v2.protocol_spec() and body["status"] == "passed"
    assert body["workload"]["slug"] == problems[0].slug and body["workload"]["source"] == "kernelbench"
    assert body["workload"]["sourcePath"] == "KernelBench/level1/1_Tiny.py" and body["workload"]["caseCount"] == 1
    assert body["implementation"]["name"] == "pytorch-eager" and body["implementation"]["sourceSha256"] == (
        problems[0].sha256
    )
    case = body["cases"][0]
    assert case["axes"] == {"batch": 4, "features": 8} and case["roofline"] is None
    assert [c["name"] for c in case["correctness"]] == ["output0", "output1"]
    assert all(c["passed"] and c["dtype"] == "float32" for c in case["correctness"])
    assert case["measurement"]["reference"] == "float64" and case["timing"]["medianNs"] == 5024
    assert body["suite"]["latencyNs"] == 5024
    failed = verify_bundle(read_bundle(broken[0]), approved)
    assert "this program does not build" in failed["cases"][0]["message"]


def test_a_wrong_result_fails_the_case(tmp_path: Path) -> None:
    wrong = TINY.replace("* self.scale + y", "* self.scale + y * 1.1")
    problem = _problem(tmp_path, 4, "Wrong", wrong)
    module = load_module(problem)
    built = build(module, torch.device("cpu"))
    built.refs[0] = built.refs[0] - built.inputs[1].double() * 0.1  # the reference of the unchanged program
    from kernelindex.rerun.cases import Case
    from kernelindex.rerun.kernelbench_run import measure_mode

    record = measure_mode(
        problem, Case(0, {}), built, "eager", device=torch.device("cpu"), flush=torch.empty(1),
        timer=_stand_in_timer, ceilings={},
    )  # fmt: skip
    assert record["status"] == "failed" and record["timing"] is None
    assert record["correctness"][0]["passed"] is False and record["correctness"][1]["passed"] is True


def _graph_aware_timer(replay_ns: int | None) -> Any:
    """The stand-in timer, with CUDA-graph replay (`graph_only`) at `replay_ns` a call, or failing to
    capture when `replay_ns` is None."""

    def timer(fn: Any, sets: Any, flush: Any, *, check: Any, graph_only: bool = False) -> CaseTiming:
        if not graph_only:
            return _stand_in_timer(fn, sets, flush, check=check)
        if replay_ns is None:
            raise RuntimeError("operation not permitted when stream is capturing")
        outputs = fn(*sets[0])
        samples = [[replay_ns] * protocol_v2.TIMED_ITERATIONS for _ in range(protocol_v2.TRIALS)]
        return CaseTiming(protocol_v2.CUDA_GRAPH, samples, [{"trialSpread": 0.0}], [check(outputs)], [{}])

    return timer


def test_the_graph_check_keeps_the_replay_figure_beside_the_blocking_one(tmp_path: Path) -> None:
    from kernelindex.rerun.cases import Case
    from kernelindex.rerun.kernelbench_run import measure_mode

    problem = _problem(tmp_path, 5, "Graphed", TINY)
    built = build(load_module(problem), torch.device("cpu"))
    common: dict[str, Any] = {"device": torch.device("cpu"), "flush": torch.empty(1), "ceilings": {}}
    checked = measure_mode(problem, Case(0, {}), built, "eager", timer=_graph_aware_timer(4000), graph_check=True,
                           **common)  # fmt: skip
    replay = checked["measurement"]["graphReplay"]
    assert checked["status"] == "passed" and checked["timing"]["medianNs"] == 5024  # the figure is unchanged
    assert replay["method"] == protocol_v2.CUDA_GRAPH and replay["samplesNs"][0][0] == 4000
    assert replay["passedNoiseGate"] and replay["timedCallsCorrect"]

    uncapturable = measure_mode(problem, Case(0, {}), built, "eager", timer=_graph_aware_timer(None),
                                graph_check=True, **common)  # fmt: skip
    assert uncapturable["status"] == "passed"
    assert "stream is capturing" in uncapturable["measurement"]["graphReplay"]["error"]

    unchecked = measure_mode(problem, Case(0, {}), built, "eager", timer=_graph_aware_timer(4000), **common)
    assert "graphReplay" not in unchecked["measurement"]


def test_outputs_are_checked_chunk_by_chunk_with_the_same_result(monkeypatch) -> None:
    from kernelindex.rerun import correctness

    gen = torch.Generator().manual_seed(3)
    ref = torch.randn(1000, 7, dtype=torch.float64, generator=gen)
    out = (ref + 1e-4 * torch.randn(ref.shape, dtype=torch.float64, generator=gen)).float()
    out[5, 1] += 1.0
    whole = correctness.check_output("x", out, ref)
    monkeypatch.setattr(correctness, "CHUNK_ELEMENTS", 333)
    chunked = correctness.check_output("x", out, ref)
    assert chunked["matchedRatio"] == whole["matchedRatio"] == 6999 / 7000
    assert chunked["maxAbsError"] == whole["maxAbsError"] and chunked["relativeL2Error"] == pytest.approx(
        whole["relativeL2Error"]
    )
    out[0, 0] = float("nan")
    assert correctness.check_output("x", out, ref)["maxAbsError"] is None  # NaN anywhere: not finite
    ints = correctness.check_output("i", torch.arange(5), torch.arange(5.0, dtype=torch.float64), dtype=None)
    assert ints["passed"] and ints["dtype"] == "int64"


RANDOM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        return self.dropout(x) + torch.randn_like(x) * 0.001

def get_inputs():
    return [torch.rand(64, 64) + 1]

def get_init_inputs():
    return []
"""


def test_a_forward_that_draws_random_numbers_is_reseeded_and_said_so(tmp_path: Path) -> None:
    from kernelindex.rerun.cases import Case
    from kernelindex.rerun.kernelbench_run import RANDOM_REFERENCE, draws_random_numbers, implementation, measure_mode

    problem = _problem(tmp_path, 5, "Random", RANDOM)
    built = build(load_module(problem), torch.device("cpu"))
    assert built.random_forward and built.reference == RANDOM_REFERENCE and built.refs[0].dtype == torch.float32
    call = implementation(built.model, "eager")
    assert torch.equal(call(*built.inputs), call(*built.inputs))  # reseeded before every call
    assert torch.equal(call(*built.inputs), built.refs[0])
    record = measure_mode(
        problem, Case(0, {}), built, "eager", device=torch.device("cpu"), flush=torch.empty(1),
        timer=_stand_in_timer, ceilings={},
    )  # fmt: skip
    assert record["status"] == "passed" and record["measurement"]["forwardDrawsRandomNumbers"] is True
    tiny = build(load_module(_problem(tmp_path, 6, "Tiny", TINY)), torch.device("cpu"))
    assert not tiny.random_forward and not draws_random_numbers(tiny.model, tiny.inputs)


def test_the_real_v2_timer_drives_a_kernelbench_run_with_a_stand_in_device(tmp_path: Path) -> None:
    """The v2 timer itself (not a stand-in) through a whole run: the first call, warm-ups and timed calls
    of every trial behind the gate, the timed calls' outputs checked, a size argument that is no tensor."""
    import functools

    from kernelindex.rerun.timing_v2 import time_case_v2
    from tests.fake_device import Device

    code = TINY.replace("def forward(self, x, y):", "def forward(self, x, y, steps):").replace(
        "return [torch.randn(batch, features), torch.rand(batch, features)]",
        "return [torch.randn(batch, features), torch.rand(batch, features), 3]",
    )
    problem = _problem(tmp_path, 7, "Sized", code)
    device = Device()
    timer = functools.partial(
        time_case_v2, gate=device, sample_clocks=lambda: {"via": "test"}, event=device.event, sync=device.sync
    )
    rows = run_problems(
        [problem], ["eager"], device=torch.device("cpu"), env={"gpu": {}, "software": {}}, ceilings={},
        flush=device, timer=timer, private_key=Ed25519PrivateKey.generate(), out_dir=tmp_path,
        session_id="e" * 32, log=lambda _: None,
    )  # fmt: skip
    assert [r["status"] for r in rows] == ["passed"] and rows[0]["method"] == protocol_v2.BLOCKING_KERNEL
    slots = protocol_v2.WARMUP_ITERATIONS + protocol_v2.TIMED_ITERATIONS
    assert device.log.count("block 0") == protocol_v2.TRIALS and device.log.count(f"release {slots - 1}") == 3
    body = json.loads(next(tmp_path.glob("kernelbench-l1-7-sized-*.json")).read_text())["payload"]
    measured = body["cases"][0]["measurement"]
    assert measured["rotationSets"] == protocol_v2.ROTATION_SETS and len(measured["timedCallChecks"]) == 3
    assert all(c["passed"] for trial in measured["timedCallChecks"] for c in trial)
    assert len(measured["clocks"]) == protocol_v2.TRIALS + 1 and body["cases"][0]["timing"]["medianNs"] == 2000


@pytest.mark.parametrize(
    "replay",
    [
        "fast",
        {"samplesNs": "many"},
        {"samplesNs": []},
        {"samplesNs": [[1000, -5]]},
        {"samplesNs": [[1000, True]]},
        {"samplesNs": [[1000], 7]},
        {"samplesNs": [[10**16]]},
    ],
)
def test_a_malformed_replay_figure_is_no_check_at_all(replay: Any) -> None:
    from kernelindex.rerun import graph_check

    case = {"timing": {"medianNs": 2000}, "measurement": {"method": protocol_v2.BLOCKING_KERNEL, "graphReplay": replay}}
    assert graph_check.check_case(0, case) is None
    good = {**case, "measurement": {**case["measurement"], "graphReplay": {"samplesNs": [[1900, 2100, 2000]]}}}
    assert graph_check.check_cases([good, "junk", case]) == [
        graph_check.GraphCheck(0, graph_check.AGREES, 2000, 2000, 1.0, graph_check.BOUND)
    ]
