"""The runner without a GPU: suites, inputs, payloads, the measurement loop with a stand-in timer and the CLI.
Its import boundary (nothing of the app) is checked in test_layers.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.rerun import RUNNER_VERSION, payload, protocol_v2
from kernelindex.rerun.bundle import key_id, public_key_b64, public_key_raw, read_bundle, verify_bundle
from kernelindex.rerun.cases import WORKLOADS, Case, SuiteError, cases_sha256, load_suite, select_cases
from kernelindex.rerun.implementations import REGISTRY, Implementation
from kernelindex.rerun.inputs import make_inputs
from kernelindex.rerun.measure import measure_workload, rotation_sets
from kernelindex.rerun.timing_v2 import CaseTiming

REPO = Path(__file__).resolve().parents[1]
ADAIN, CONV = sorted(WORKLOADS)
CEILINGS = {"copyBytesPerSecond": {"value": 4.0e12}, "fp32FmaFlops": {"value": 5.0e13}}


def test_suites_are_read_in_order_from_the_fixtures() -> None:
    adain = load_suite(ADAIN)
    assert len(adain.cases) == 16
    assert adain.cases[0] == Case(0, {"C": 32, "N": 8, "H": 480, "W": 640})
    assert adain.input_names == ["grad_output", "x", "weight", "mean", "std"]
    assert adain.output_names == ["grad_input", "grad_weight", "grad_bias"]
    conv = load_suite(CONV)
    assert [c.index for c in conv.cases] == list(range(16))
    assert conv.cases[2].axes["batch_size"] == 2 and conv.cases[2].axes["height"] == 256
    record = conv.record()
    assert record["fixturePath"] == "fixtures/sol-execbench/api/kernels/40.json"
    assert record["casesSha256"] == cases_sha256(conv.cases) and len(record["casesSha256"]) == 64
    assert cases_sha256(tuple(reversed(conv.cases))) != record["casesSha256"]
    assert [c.index for c in select_cases(conv, [5, 1])] == [1, 5]


def test_suites_refuse_unknown_workloads_cases_and_fixtures(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="unknown workload"):
        load_suite("l1-999-nothing")
    with pytest.raises(SuiteError, match="no case"):
        select_cases(load_suite(CONV), [16])
    with pytest.raises(SuiteError, match="cannot read"):
        load_suite(CONV, tmp_path)
    (tmp_path / "40.json").write_text('{"data": {"workloads": []}}', encoding="utf-8")
    with pytest.raises(SuiteError):
        load_suite(CONV, tmp_path)


@pytest.mark.parametrize("slug", sorted(WORKLOADS))
def test_inputs_are_seeded_deterministic_and_never_zeros(slug: str) -> None:
    axes = dict(load_suite(slug).cases[0].axes)
    axes |= {"N": 2, "H": 6, "W": 5} if slug == ADAIN else {"batch_size": 2, "height": 6, "width": 5}
    first, again, other = make_inputs(slug, axes, 1), make_inputs(slug, axes, 1), make_inputs(slug, axes, 2)
    for a, b, c in zip(first, again, other, strict=True):
        assert a.dtype == torch.float32
        assert torch.equal(a, b)
        assert not torch.equal(a, c)
        assert bool(torch.isfinite(a).all()) and int((a == 0).sum()) == 0
    if slug == ADAIN:
        _, x, _, mean, std = first
        x64 = x.double()
        torch.testing.assert_close(mean.double(), x64.mean(dim=(2, 3), keepdim=True), rtol=1e-6, atol=1e-6)
        expected_std = torch.sqrt(x64.var(dim=(2, 3), unbiased=False, keepdim=True) + 1e-5)
        torch.testing.assert_close(std.double(), expected_std, rtol=1e-6, atol=1e-6)


def test_payload_cases_and_suite_figures() -> None:
    case = Case(0, {"N": 1, "C": 32, "H": 4, "W": 4})
    ok = [{"name": "grad_input", "passed": True}]
    passed = payload.case_record(ADAIN, case, CEILINGS, correctness=ok, samples_ns=[[1000, 3000, 2000]])
    assert passed["status"] == "passed" and passed["timing"]["medianNs"] == 2000
    assert passed["boundFraction"] == pytest.approx(passed["roofline"]["boundNs"] / 2000)
    failed = payload.case_record(
        ADAIN, case, CEILINGS, correctness=[{"name": "x", "passed": False, "matchedRatio": 0.5}]
    )
    assert failed["status"] == "failed" and "x matched 0.500000" in failed["message"] and failed["timing"] is None
    error = payload.case_record(ADAIN, case, {}, error="boom")
    assert error["status"] == "error" and error["roofline"] is None

    second = payload.case_record(ADAIN, Case(1, case.axes), CEILINGS, correctness=ok, samples_ns=[[8000]])
    suite = payload.suite_record([passed, second], 16)
    assert suite["latencyNs"] == 4000  # geometric mean of 2000 and 8000
    assert suite["complete"] is False and suite["casesPassed"] == 2
    assert payload.suite_record([passed, failed], 2)["latencyNs"] is None
    assert payload.bundle_status([passed, failed]) == "failed"
    assert payload.bundle_status([passed, failed, error]) == "error"
    assert payload.utc_now().endswith("Z")


def _fake_timer(fn, sets, flush, *, check):
    """Calls every input set once and checks the last outputs, as the v2 timer's last timed call is."""
    for inputs in sets:
        outputs = fn(*inputs)
    samples = [[1000 + 10 * i + t for i in range(protocol_v2.TIMED_ITERATIONS)] for t in range(protocol_v2.TRIALS)]
    return CaseTiming(protocol_v2.BLOCKING_KERNEL, samples, [{"trialSpread": 0.002}], [check(outputs)], [{"via": "x"}])


def _broken(*args):
    raise RuntimeError("kernel exploded")


def _identity(x, *weights):
    return (x.clone(),)


@dataclass(frozen=True)
class _Stub(Implementation):
    """An implementation whose callable is given, not imported."""

    fn: Callable[..., Any] | None = None

    def load(self) -> Callable[..., Any]:
        assert self.fn is not None
        return self.fn


def test_measure_loop_writes_one_verified_bundle_per_implementation(tmp_path: Path) -> None:
    """The whole loop on the CPU with a stand-in timer: a correct, a wrong and a crashing implementation."""
    key = Ed25519PrivateKey.generate()
    good = REGISTRY["kernelindex-040-eager"]
    wrong = _Stub("test-wrong", CONV, "conv_res_eager", "Python", "PyTorch eager", "wrong", "torch", _identity)
    crash = _Stub("test-crash", CONV, "conv_res_eager", "Python", "PyTorch eager", "crash", "torch", _broken)
    suite = load_suite(CONV)
    small = {**suite.cases[0].axes, "batch_size": 1, "height": 5, "width": 6}
    cases = [Case(0, small), Case(3, {**small, "height": 3})]
    env = {"gpu": {"name": "stand-in"}, "software": {"triton": "3.6.0"}}

    written = measure_workload(
        suite, cases, [good, wrong, crash], env=env, ceilings=CEILINGS, flush=torch.empty(8),
        device=torch.device("cpu"), session_id="s1", private_key=key, out_dir=tmp_path,
        log=lambda _: None, timer=_fake_timer, clocks=lambda: {"via": "none"},
    )  # fmt: skip

    assert [w["status"] for w in written] == ["passed", "failed", "error"]
    approved = {key_id(public_key_raw(key.public_key())): public_key_b64(key)}
    bodies = [verify_bundle(read_bundle(w["path"]), approved) for w in written]
    body = bodies[0]
    assert set(body) == {
        "bundleId", "sessionId", "runnerVersion", "startedAt", "finishedAt", "workload", "implementation",
        "protocol", "environment", "ceilings", "status", "message", "suite", "cases",
    }  # fmt: skip
    assert body["runnerVersion"] == RUNNER_VERSION and body["sessionId"] == "s1"
    assert body["workload"]["slug"] == CONV and body["workload"]["caseCount"] == 16
    assert body["implementation"]["sourceSha256"] == good.source_sha256()
    assert "torch==" in body["implementation"]["installRecipe"]
    assert body["protocol"] == protocol_v2.protocol_spec()
    assert body["environment"]["clocksAtEnd"] == {"via": "none"}
    assert [c["index"] for c in body["cases"]] == [0, 3]
    timing = body["cases"][0]["timing"]
    assert len(timing["samplesNs"]) == protocol_v2.TRIALS
    assert len(timing["samplesNs"][0]) == protocol_v2.TIMED_ITERATIONS
    low, high = timing["medianIntervalNs"]
    assert low <= timing["medianNs"] <= high and timing["medianIntervalConfidence"] == 0.95
    measured = body["cases"][0]["measurement"]
    assert measured["method"] == "blocking_kernel" and measured["rotationSets"] == protocol_v2.ROTATION_SETS
    assert measured["timedCallChecks"][0][0]["passed"] is True and measured["clocks"] == [{"via": "x"}]
    assert body["suite"]["latencyNs"] > 0 and body["suite"]["complete"] is False
    assert len({b["bundleId"] for b in bodies}) == 3
    assert "correctness" in bodies[1]["message"] and bodies[1]["suite"]["latencyNs"] is None
    assert "kernel exploded" in bodies[2]["cases"][0]["message"]


def _run(args: list[str], **kw) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="error")
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, **kw)


def test_cli_help_keygen_and_verify(tmp_path: Path) -> None:
    helped = _run(["-m", "kernelindex.rerun", "measure", "--help"])
    assert helped.returncode == 0 and "--implementation" in helped.stdout and "--cases" in helped.stdout
    made = _run(["-m", "kernelindex.rerun", "keygen", str(tmp_path / "k.pem")])
    assert made.returncode == 0, made.stderr
    lines = dict(line.split(": ", 1) for line in made.stdout.splitlines())
    assert lines["keyId"].startswith("ed25519:") and len(lines["keyId"]) == len("ed25519:") + 16
    again = _run(["-m", "kernelindex.rerun", "keygen", str(tmp_path / "k.pem")])
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr

    from kernelindex.rerun.bundle import load_private_key, sign_payload, write_bundle

    write_bundle(
        sign_payload({"bundleId": "b1", "status": "passed"}, load_private_key(tmp_path / "k.pem")), tmp_path / "b.json"
    )
    ok = _run(["-m", "kernelindex.rerun", "verify", str(tmp_path / "b.json"), "--public-key", lines["publicKey"]])
    assert ok.returncode == 0 and "b1" in ok.stdout, ok.stderr
    other = public_key_b64(Ed25519PrivateKey.generate())
    refused = _run(["-m", "kernelindex.rerun", "verify", str(tmp_path / "b.json"), "--public-key", other])
    assert refused.returncode == 1 and "refused" in refused.stderr
    bad_cases = _run(["-m", "kernelindex.rerun", "measure", "--key", "k", "--out", "o", "--cases", "x"])
    assert bad_cases.returncode == 2 and "--cases" in bad_cases.stderr
    assert json.loads((tmp_path / "b.json").read_text())["format"] == "kernelindex-rerun-bundle/v1"


def test_cli_names_missing_packages_before_any_work(tmp_path: Path, monkeypatch, capsys) -> None:
    from kernelindex.rerun import cli

    monkeypatch.setitem(cli.NEEDED, "measure", ["torch", "kernelindex_no_such_package"])
    code = cli.main(["measure", "--key", str(tmp_path / "k"), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "kernelindex_no_such_package" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert cli.missing_packages("verify") == []


def test_cli_summary_table_prints_figures_ceilings_and_failures(capsys) -> None:
    from kernelindex.rerun import cli

    suite = {"casesPassed": 16, "casesMeasured": 16, "latencyNs": 1_234_567, "boundNs": 61_900.5}
    failed = {"casesPassed": 15, "casesMeasured": 16, "latencyNs": None, "boundNs": None}
    summary = {
        "ceilings": {
            "copyBytesPerSecond": {"value": 4.3e12, "unit": "bytes/s", "method": "copy"},
            "fp32FmaFlops": {"error": "RuntimeError: no triton"},
        },
        "bundles": [
            {"implementation": "kernelindex-039-eager", "suite": suite, "status": "passed", "message": None,
             "path": "out/a.json"},
            {"implementation": "kernelindex-039-triton", "status": "failed", "message": "case 3: correctness",
             "suite": failed, "path": "out/b.json"},
        ],
    }  # fmt: skip
    cli._print_summary(summary)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("kernelindex-039-eager"))
    assert row.split() == ["kernelindex-039-eager", "16/16", "1.235", "ms", "61.9", "us", "passed"]
    assert "61.9 us" in out and "4.30 TB/s" in out and "no triton" in out
    assert "kernelindex-039-triton failed: case 3: correctness" in out and "wrote out/b.json" in out


def test_rotation_sets_shrink_for_large_inputs() -> None:
    gib = 1024**3
    assert rotation_sets(1 * gib, 140 * gib) == protocol_v2.ROTATION_SETS
    assert rotation_sets(20 * gib, 140 * gib) == 1  # 4 copies would take over a quarter of the memory
    assert rotation_sets(12 * gib, 100 * gib) == 2
    assert rotation_sets(200 * gib, 140 * gib) == 1
    assert rotation_sets(0, 140 * gib) == protocol_v2.ROTATION_SETS


def test_timed_record_fails_a_wrong_timed_call_and_rejects_noisy_trials() -> None:
    from kernelindex.rerun.measure import timed_record

    case = Case(2, {"N": 1, "C": 32, "H": 4, "W": 4})
    ok = [{"name": "grad_input", "passed": True}]
    wrong = [{"name": "grad_input", "passed": False, "matchedRatio": 0.25}]
    samples = [[1000, 1100], [1050, 1000], [1000, 1020]]
    timing = CaseTiming(protocol_v2.CUDA_GRAPH, samples, [{"trialSpread": 0.05}], [ok, wrong, ok], [])
    failed = timed_record(ADAIN, case, CEILINGS, ok, timing, 4)
    assert failed["status"] == "failed" and "grad_input matched 0.250000" in failed["message"]
    assert failed["measurement"]["method"] == protocol_v2.CUDA_GRAPH and failed["timing"] is None

    noisy = CaseTiming(protocol_v2.BLOCKING_KERNEL, samples, [{"trialSpread": 0.3}] * 2, [ok], [], passed_gate=False)
    rejected = timed_record(ADAIN, case, CEILINGS, ok, noisy, 4)
    assert (
        rejected["status"] == "error"
        and "noise gate: trial medians 30.0% apart after 2 attempts" in (rejected["message"])
    )
    passed = timed_record(ADAIN, case, CEILINGS, ok, CaseTiming(protocol_v2.BLOCKING_KERNEL, samples), 3)
    assert passed["status"] == "passed" and passed["measurement"]["rotationSets"] == 3
    low, high = passed["timing"]["medianIntervalNs"]
    assert passed["timing"]["medianNs"] == 1010 and low <= 1010 <= high


def test_measure_loop_with_the_real_v2_timer_on_a_stand_in_device(tmp_path: Path) -> None:
    import functools

    from kernelindex.rerun.timing_v2 import time_case_v2
    from tests.fake_device import Device

    device = Device()
    timer = functools.partial(time_case_v2, gate=device, sample_clocks=dict, event=device.event, sync=device.sync)
    suite = load_suite(CONV)
    small = {**suite.cases[0].axes, "batch_size": 1, "height": 5, "width": 6}
    env = {"gpu": {"name": "stand-in", "memoryBytes": 1 << 30}, "software": {"triton": "3.6.0"}}
    written = measure_workload(
        suite, [Case(0, small)], [REGISTRY["kernelindex-040-eager"]], env=env, ceilings=CEILINGS, flush=device,
        device=torch.device("cpu"), session_id="s2", private_key=Ed25519PrivateKey.generate(), out_dir=tmp_path,
        log=lambda _: None, timer=timer, clocks=lambda: {"via": "none"},
    )  # fmt: skip
    assert [w["status"] for w in written] == ["passed"]
    case = json.loads(Path(written[0]["path"]).read_text())["payload"]["cases"][0]
    assert case["measurement"]["method"] == "blocking_kernel"
    assert [c["name"] for c in case["measurement"]["timedCallChecks"][0]] == ["output"]
    assert case["timing"]["sampleCount"] == protocol_v2.TRIALS * protocol_v2.TIMED_ITERATIONS
