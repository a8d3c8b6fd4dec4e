"""The source-faithful protocol for KernelBench on the CPU: its published differences from strict v2, a run
under it (settings applied and recorded, bundles signed under its own spec, a progress file of its own),
problem selection by pattern, and the command line. Its import is tested in test_rerun_faithful_import.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.rerun import protocol_faithful, protocol_v2
from kernelindex.rerun.bundle import key_id, public_key_b64, public_key_raw, read_bundle, verify_bundle
from kernelindex.rerun.cli import build_parser
from kernelindex.rerun.kernelbench_problems import Problem, ProblemError, Progress, list_problems, matching_problems
from kernelindex.rerun.kernelbench_run import FAITHFUL, STRICT, apply_settings, read_settings, run_problems
from kernelindex.rerun.timing_v2 import CaseTiming

CONV = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(self.conv(x))

batch = 2
channels = 3

def get_inputs():
    return [torch.randn(batch, channels, 8, 8)]

def get_init_inputs():
    return [channels]
"""


def _problem(tmp_path: Path, number: int, words: str, code: str) -> Problem:
    import hashlib

    path = tmp_path / f"{number}_{words}.py"
    path.write_text(code, encoding="utf-8")
    return Problem(2, path.name, "c" * 40, path, hashlib.sha256(code.encode()).hexdigest())


def _stand_in_timer(fn: Any, sets: Any, flush: Any, *, check: Any) -> CaseTiming:
    for inputs in sets:
        outputs = fn(*inputs)
    samples = [[7000 + i for i in range(protocol_v2.TIMED_ITERATIONS)] for _ in range(protocol_v2.TRIALS)]
    return CaseTiming(protocol_v2.BLOCKING_KERNEL, samples, [{"trialSpread": 0.0}], [check(outputs)], [{}])


@pytest.fixture
def restore_settings():
    before = read_settings()
    yield
    torch.backends.cuda.matmul.allow_tf32 = before["torch.backends.cuda.matmul.allow_tf32"]
    torch.backends.cudnn.allow_tf32 = before["torch.backends.cudnn.allow_tf32"]
    torch.backends.cudnn.benchmark = before["torch.backends.cudnn.benchmark"]
    torch.set_float32_matmul_precision(before["torch.get_float32_matmul_precision()"])


def test_the_published_differences_are_exactly_the_settings_that_differ_from_strict_v2() -> None:
    spec = protocol_faithful.protocol_spec()
    differing = {k for k, v in protocol_faithful.SETTINGS.items() if protocol_faithful.STRICT_SETTINGS[k] != v}
    assert differing == set(protocol_faithful.DIFFERENCES) == {"torch.backends.cudnn.allow_tf32"}
    assert set(spec["differsFromStrict"]) - {"protocol"} == differing
    assert spec["differsFromStrict"]["protocol"] == "kernelindex-rerun-v2"
    assert (spec["name"], spec["version"], spec["family"]) == (
        "kernelindex-rerun-kernelbench-faithful",
        "1",
        "kernelindex_rerun_faithful",
    )
    # Everything else is v2's: the timer, the statistics, the noise gate, the tolerance.
    strict = protocol_v2.protocol_spec()
    for key in ("timer", "timingMethods", "warmupIterations", "timedIterations", "trials", "bootstrap", "noiseGate"):
        assert spec[key] == strict[key], key
    assert spec["correctness"]["kernelbenchAtol"] == strict["correctness"]["kernelbenchAtol"]
    assert spec["correctness"]["tf32"] != strict["correctness"]["tf32"]
    for name in differing:
        assert name in spec["notes"]
    assert "training mode" in spec["notes"] and "torch.no_grad()" in spec["notes"]
    assert json.loads(json.dumps(spec)) == spec  # JSON-safe, as a bundle carries it


def test_settings_are_applied_and_read_back(restore_settings) -> None:
    assert apply_settings(FAITHFUL) == protocol_faithful.SETTINGS
    assert torch.backends.cudnn.allow_tf32 is True and torch.backends.cuda.matmul.allow_tf32 is False
    assert apply_settings(STRICT) == protocol_faithful.STRICT_SETTINGS
    assert torch.backends.cudnn.allow_tf32 is False


def test_a_faithful_run_signs_under_its_own_protocol_and_records_its_settings(tmp_path: Path, restore_settings) -> None:
    torch.backends.cudnn.allow_tf32 = False  # as the strict protocol leaves the process
    key = Ed25519PrivateKey.generate()
    problem = _problem(tmp_path, 1, "Conv2d_BatchNorm", CONV)
    out = tmp_path / "faithful"
    out.mkdir()
    common: dict[str, Any] = {
        "device": torch.device("cpu"), "env": {"gpu": {"name": "stand-in"}}, "ceilings": {},
        "flush": torch.empty(4), "timer": _stand_in_timer, "private_key": key, "session_id": "e" * 32,
        "log": lambda _: None,
    }  # fmt: skip
    rows = run_problems([problem], ["eager", "compile"], out_dir=out, protocol=FAITHFUL, **common)
    assert [(r["mode"], r["status"]) for r in rows] == [("eager", "passed"), ("compile", "passed")]
    assert torch.backends.cudnn.allow_tf32 is True  # PyTorch's default, as KernelBench leaves it

    approved = {key_id(public_key_raw(key.public_key())): public_key_b64(key)}
    files = sorted(out.glob("kernelbench-l2-1-*--faithful--*.json"))
    assert len(files) == 2
    body = verify_bundle(read_bundle(files[0]), approved)
    assert body["protocol"] == protocol_faithful.protocol_spec()
    assert body["cases"][0]["measurement"]["settings"] == protocol_faithful.SETTINGS
    assert body["cases"][0]["measurement"]["reference"] == "float64"
    assert "--protocol faithful" in body["implementation"]["installRecipe"]
    assert json.loads((out / "progress.json").read_text())["protocol"] == "kernelindex-rerun-kernelbench-faithful-v1"

    # A folder of one protocol is never continued under the other: its pairs were not measured there.
    with pytest.raises(ProblemError, match="records a run under kernelindex-rerun-kernelbench-faithful-v1"):
        run_problems([problem], ["eager"], out_dir=out, protocol=STRICT, **common)
    strict_out = tmp_path / "strict"
    strict_out.mkdir()
    run_problems([problem], ["eager"], out_dir=strict_out, **common)
    strict = verify_bundle(read_bundle(next(strict_out.glob("kernelbench-*.json"))), approved)
    assert strict["protocol"] == protocol_v2.protocol_spec() and "settings" not in strict["cases"][0]["measurement"]
    with pytest.raises(ProblemError, match="records a run under kernelindex-rerun-v2"):
        Progress(strict_out / "progress.json", "kernelindex-rerun-kernelbench-faithful-v1")


def test_problems_are_chosen_by_a_pattern_ignoring_case() -> None:
    problems = list_problems(levels=(1, 2))
    convs = matching_problems(problems, "conv")
    assert 90 <= len(convs) < len(problems)
    assert all("conv" in p.key.lower() for p in convs)
    assert "level2/1_Conv2D_ReLU_BiasAdd.py" in [p.key for p in convs]
    assert matching_problems(problems, None) == problems
    with pytest.raises(ProblemError, match="not a regular expression"):
        matching_problems(problems, "conv(")


def test_the_command_line_takes_the_protocol_and_a_pattern() -> None:
    parser = build_parser()
    args = parser.parse_args(["kernelbench", "--key", "k", "--out", "o", "--protocol", "faithful", "--match", "conv"])
    assert (args.protocol, args.match) == ("faithful", "conv")
    assert parser.parse_args(["kernelbench", "--key", "k", "--out", "o"]).protocol == "v2"
    with pytest.raises(SystemExit):
        parser.parse_args(["kernelbench", "--key", "k", "--out", "o", "--protocol", "v3"])


def test_an_unsigned_run_is_signed_elsewhere_into_the_same_bundle(tmp_path: Path, restore_settings) -> None:
    from kernelindex.rerun.cli import main
    from kernelindex.rerun.unsigned import UnsignedError, read_unsigned, sign_files

    problem = _problem(tmp_path, 1, "Conv2d_BatchNorm", CONV)
    out = tmp_path / "unsigned"
    out.mkdir()
    common: dict[str, Any] = {
        "device": torch.device("cpu"), "env": {"gpu": {"name": "stand-in"}}, "ceilings": {},
        "flush": torch.empty(4), "timer": _stand_in_timer, "session_id": "d" * 32, "log": lambda _: None,
    }  # fmt: skip
    rows = run_problems([problem], ["eager"], out_dir=out, protocol=FAITHFUL, private_key=None, **common)
    unsigned = sorted(out.glob("*.unsigned.json"))
    assert len(unsigned) == 1 and rows[0]["path"] == unsigned[0].name and "--faithful--" in unsigned[0].name
    assert [p.name for p in out.glob("kernelbench-*.json") if not p.name.endswith(".unsigned.json")] == []
    payload = read_unsigned(unsigned[0])
    assert payload["protocol"] == protocol_faithful.protocol_spec()

    key_file = tmp_path / "runner.key"
    assert main(["keygen", str(key_file)]) == 0
    assert main(["sign", "--key", str(key_file), str(unsigned[0])]) == 0
    signed_path = unsigned[0].with_name(unsigned[0].name.removesuffix(".unsigned.json") + ".json")
    from kernelindex.rerun.bundle import load_private_key

    key = load_private_key(key_file)
    approved = {key_id(public_key_raw(key.public_key())): public_key_b64(key)}
    assert verify_bundle(read_bundle(signed_path), approved) == payload
    with pytest.raises(UnsignedError, match="exists already"):
        sign_files([unsigned[0]], key)  # signed once
    assert main(["sign", "--key", str(key_file), str(unsigned[0])]) == 2

    for name, text in [
        ("bad.unsigned.json", '{"format": "something-else", "payload": {}}'),
        ("nan.unsigned.json", '{"format": "kernelindex-rerun-payload/v1", "payload": {"x": NaN}}'),
        ("extra.unsigned.json", '{"format": "kernelindex-rerun-payload/v1", "payload": {}, "signature": {}}'),
    ]:
        (tmp_path / name).write_text(text)
        with pytest.raises(UnsignedError):
            read_unsigned(tmp_path / name)
    with pytest.raises(UnsignedError, match="not named"):
        read_unsigned(signed_path)


def test_an_unsigned_run_needs_no_signing_package() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['cryptography'] = None; sys.modules['rfc8785'] = None\n"
        "import kernelindex.rerun.kernelbench_run, kernelindex.rerun.measure, kernelindex.rerun.unsigned\n"
        "from kernelindex.rerun.cli import build_parser\n"
        "args = build_parser().parse_args(['kernelbench', '--unsigned', '--out', 'o'])\n"
        "assert args.unsigned and args.key is None\n"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["kernelbench", "--out", "o"])  # a key or --unsigned
    with pytest.raises(SystemExit):
        build_parser().parse_args(["kernelbench", "--unsigned", "--key", "k", "--out", "o"])
