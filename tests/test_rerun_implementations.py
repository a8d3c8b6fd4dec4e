"""Each open implementation against the float64 reference on small shapes, on the CPU.

Eager runs directly; torch.compile runs one tiny case per workload (Inductor's CPU backend, a C compiler);
the Triton kernels run under Triton's interpreter in a subprocess (TRITON_INTERPRET=1 must be set before
triton is imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelindex.rerun import protocol
from kernelindex.rerun.cases import WORKLOADS
from kernelindex.rerun.correctness import check_outputs
from kernelindex.rerun.implementations import REGISTRY, for_workload
from kernelindex.rerun.inputs import make_inputs
from kernelindex.rerun.references import REFERENCES

ADAIN, CONV = sorted(WORKLOADS)
CONV_CONST = {"in_channels": 3, "hidden_channels": 32, "out_channels": 3, "kernel_size": 3, "padding": 1}
REPO = Path(__file__).resolve().parents[1]
SMALL = {
    ADAIN: [{"N": 2, "C": 32, "H": 5, "W": 7}, {"N": 1, "C": 32, "H": 1, "W": 3}],
    CONV: [
        CONV_CONST | {"batch_size": 2, "height": 6, "width": 9},
        CONV_CONST | {"batch_size": 1, "height": 1, "width": 1},
    ],
}
OUTPUTS = {ADAIN: ["grad_input", "grad_weight", "grad_bias"], CONV: ["output"]}


def _check(slug: str, name: str, axes: dict[str, int], seed: int = 11) -> list[dict]:
    inputs = make_inputs(slug, axes, seed)
    refs = REFERENCES[slug](*[t.double() for t in inputs])
    outs = REGISTRY[name].load()(*inputs)
    return check_outputs(OUTPUTS[slug], outs, refs)


def test_registry_lists_three_implementations_per_workload_with_metadata() -> None:
    assert len(REGISTRY) == 6
    for slug in WORKLOADS:
        impls = for_workload(slug)
        assert {i.runtime for i in impls} == {"PyTorch eager", "PyTorch torch.compile (Inductor)", "Triton"}
        for impl in impls:
            record = impl.record({"torch": "2.11.0", "triton": "3.6.0"})
            assert record["project"] == "KernelIndex"
            assert record["license"] == "Apache-2.0"
            assert (REPO / record["sourcePath"]).is_file()
            assert len(record["sourceSha256"]) == 64
            assert record["name"] in record["installRecipe"]
            assert "python3 -m kernelindex.rerun measure" in record["installRecipe"]


@pytest.mark.parametrize("slug", sorted(WORKLOADS))
def test_eager_implementation_matches_the_reference(slug: str) -> None:
    name = next(i.name for i in for_workload(slug) if i.runtime == "PyTorch eager")
    for axes in SMALL[slug]:
        checks = _check(slug, name, axes)
        assert all(c["passed"] for c in checks), checks
        assert all(c["maxAbsError"] < 1e-5 for c in checks), checks


def test_compiled_implementations_match_the_reference() -> None:
    """One tiny case per workload: Inductor compiles C++ on the CPU, which costs seconds per graph."""
    for slug in sorted(WORKLOADS):
        name = next(i.name for i in for_workload(slug) if "compile" in i.runtime)
        checks = _check(slug, name, SMALL[slug][0])
        assert all(c["passed"] for c in checks), checks


TRITON_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    from kernelindex.rerun.correctness import check_outputs
    from kernelindex.rerun.implementations import REGISTRY
    from kernelindex.rerun.inputs import make_inputs
    from kernelindex.rerun.references import REFERENCES
    results = []
    for slug, name, names, axes in json.loads(sys.argv[1]):
        inputs = make_inputs(slug, axes, 5)
        refs = REFERENCES[slug](*[t.double() for t in inputs])
        results.append(check_outputs(names, REGISTRY[name].load()(*inputs), refs))
    print(json.dumps(results))
    """
)


def test_triton_kernels_match_the_reference_under_the_interpreter() -> None:
    jobs = [
        (ADAIN, "kernelindex-039-triton", OUTPUTS[ADAIN], {"N": 2, "C": 3, "H": 5, "W": 7}),
        (ADAIN, "kernelindex-039-triton", OUTPUTS[ADAIN], {"N": 1, "C": 2, "H": 3, "W": 1}),
        (ADAIN, "kernelindex-039-triton", OUTPUTS[ADAIN], {"N": 2, "C": 2, "H": 64, "W": 128}),  # = PLANE_MAX
        # H*W = 16770 > CHUNK (and > PLANE_MAX): three chunks per plane, partial sums reduced across chunks
        # and over N; the shapes above take the one-pass path
        (ADAIN, "kernelindex-039-triton", OUTPUTS[ADAIN], {"N": 2, "C": 2, "H": 129, "W": 130}),
        (CONV, "kernelindex-040-triton", OUTPUTS[CONV], CONV_CONST | {"batch_size": 1, "height": 9, "width": 33}),
    ]
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="error")
    done = subprocess.run(
        [sys.executable, "-c", TRITON_SCRIPT, json.dumps(jobs)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for job, checks in zip(jobs, results, strict=True):
        assert all(c["passed"] for c in checks), (job, checks)
        assert all(c["relativeL2Error"] < 1e-6 for c in checks), (job, checks)


def test_a_wrong_output_fails_the_tolerance_and_nan_never_passes() -> None:
    inputs = make_inputs(CONV, SMALL[CONV][0], 3)
    (ref,) = REFERENCES[CONV](*[t.double() for t in inputs])
    good = ref.float()
    off = good.clone()
    off.view(-1)[: max(1, off.numel() // 100)] += 1.0  # 1% of elements wrong: under the matched ratio
    nan = good.clone()
    nan.view(-1)[0] = float("nan")
    assert check_outputs(["output"], (good,), [ref])[0]["passed"]
    wrong = check_outputs(["output"], (off,), [ref])[0]
    assert not wrong["passed"] and wrong["matchedRatio"] < protocol.MATCHED_RATIO
    nan_check = check_outputs(["output"], (nan,), [ref])[0]
    assert not nan_check["passed"] and nan_check["nonFiniteCount"] == 1 and nan_check["maxAbsError"] is None
    shape = check_outputs(["output"], (good[:, :2],), [ref])[0]
    assert not shape["passed"] and "shape" in shape["message"]
    assert not check_outputs(["output"], (good, good), [ref])[0]["passed"]
    assert not check_outputs(["output"], (good.double(),), [ref])[0]["passed"]


COMPILE_SCRIPT = textwrap.dedent(
    """
    import json, pathlib, subprocess, tempfile
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from kernelindex.rerun import fma
    from kernelindex.rerun.implementations import adain_bwd_triton as a, conv_res_triton as c

    P = "*fp32"
    conv = dict(x_ptr=P, wi_ptr=P, bi_ptr=P, wo_ptr=P, bo_ptr=P, out_ptr=P, H="i32", W="i32", zero="i32")
    stats = dict(go_ptr=P, x_ptr=P, mean_ptr=P, std_ptr=P, part_ptr=P, HW="i32", S="i32")
    apply = dict(go_ptr=P, x_ptr=P, w_ptr=P, mean_ptr=P, std_ptr=P, part_ptr=P, gi_ptr=P, C="i32", HW="i32",
                 S="i32", inv_hw="fp32")
    jobs = [(c._fused.fn, conv, dict(HID=32, BH=cfg.kwargs["BH"], BW=cfg.kwargs["BW"]), cfg.num_warps)
            for cfg in c._fused.configs]
    jobs += [(a._stats.fn, stats, dict(CHUNK=a.CHUNK, BLOCK=cfg.kwargs["BLOCK"]), cfg.num_warps)
             for cfg in a._stats.configs]
    jobs += [(a._apply.fn, apply, dict(CHUNK=a.CHUNK, S_POW2=512, BLOCK=cfg.kwargs["BLOCK"]), cfg.num_warps)
             for cfg in a._apply.configs]
    plane = dict(go_ptr=P, x_ptr=P, w_ptr=P, mean_ptr=P, std_ptr=P, part_ptr=P, gi_ptr=P, C="i32", HW="i32",
                 inv_hw="fp32")
    jobs.append((a._plane, plane, dict(BLOCK=a.PLANE_MAX), 8))
    channels = dict(part_ptr=P, gw_ptr=P, gb_ptr=P, N="i32", C="i32", S="i32")
    jobs += [(a._channels, channels, dict(S_POW2=512), 4), (a._channels, channels, dict(S_POW2=1), 4)]
    jobs.append((fma._fma_kernel, dict(out_ptr=P, a="fp32", b="fp32"),
                 dict(ITERS=fma.ITERS, UNROLL=fma.UNROLL, BLOCK=fma.BLOCK), 4))
    cuobjdump = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    usage = []
    for fn, sig, consts, warps in jobs:
        src = ASTSource(fn=fn, signature={**sig, **{k: "constexpr" for k in consts}}, constexprs=consts)
        kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(kernel.asm["cubin"])
            f.flush()
            out = subprocess.run([str(cuobjdump), "--dump-resource-usage", f.name], capture_output=True, text=True)
        usage.append([fn.__name__, [line.strip() for line in out.stdout.splitlines() if "REG:" in line]])
    print(json.dumps(usage))
    """
)


def test_triton_kernels_compile_for_sm90_without_spilling() -> None:
    """Triton compiles for a Hopper target without a GPU (its own ptxas); no kernel may use local memory."""
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=300,
        # Fusion on, as in the Triton 3.6 the shipped bundles were measured with (3.9 warns it will change).
        env=dict(os.environ, PYTHONWARNINGS="error", TRITON_DEFAULT_FP_FUSION="1"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    usage = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(usage) == 3 + 2 + 2 + 1 + 2 + 1
    for name, lines in usage:
        assert lines, name
        assert all(" STACK:0 " in line for line in lines), (name, lines)
