"""`python3 -m kernelindex.rerun keygen | measure | verify` (argparse only: nothing extra to install)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelindex.rerun import RUNNER_VERSION
from kernelindex.rerun.cases import WORKLOADS, SuiteError
from kernelindex.rerun.implementations import REGISTRY

NEEDED = {
    "keygen": ["cryptography"],
    "verify": ["cryptography", "rfc8785"],
    "measure": ["cryptography", "rfc8785", "numpy", "torch", "triton"],
    "host-proof": ["numpy", "torch", "triton"],
    "kernelbench": ["cryptography", "rfc8785", "numpy", "torch", "triton"],
    "kernelbench-unsigned": ["numpy", "torch", "triton"],
    "sign": ["cryptography", "rfc8785"],
}


def missing_packages(command: str) -> list[str]:
    """The packages `command` needs that cannot be imported here (checked before any GPU work)."""
    import importlib.util

    return [name for name in NEEDED[command] if importlib.util.find_spec(name) is None]


def _cases(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--cases takes comma-separated case indices, got {text!r}") from exc
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("--cases needs one or more non-negative indices")
    return values


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--levels takes comma-separated levels, got {text!r}") from exc
    if not levels or not set(levels) <= {1, 2, 3}:
        raise argparse.ArgumentTypeError("--levels takes levels among 1, 2, 3")
    return levels


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m kernelindex.rerun", description="KernelIndex controlled reruns.")
    parser.add_argument("--version", action="version", version=f"kernelindex-rerun {RUNNER_VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)

    keygen = sub.add_parser("keygen", help="create an Ed25519 signing key (mode 0600; never overwrites)")
    keygen.add_argument("keyfile", type=Path)
    keygen.add_argument("--raw", action="store_true", help="write the raw 32 private bytes instead of PEM")

    measure = sub.add_parser(
        "measure",
        help="measure implementations on the GPU and write signed bundles",
        description="Measure the open implementations of each workload on a CUDA GPU (CUDA-event timing, cold "
        "L2, rotated inputs, correctness against a float64 reference) and write one signed bundle per "
        "(workload, implementation).",
    )
    measure.add_argument("--key", type=Path, required=True, help="Ed25519 private key file (from keygen)")
    measure.add_argument("--out", type=Path, required=True, help="directory for the bundle files")
    measure.add_argument("--workload", action="append", choices=sorted(WORKLOADS), help="repeatable; default all")
    measure.add_argument(
        "--implementation", action="append", choices=sorted(REGISTRY), help="repeatable; default all for the workload"
    )
    measure.add_argument("--cases", type=_cases, help="comma-separated case indices, e.g. 0,1,5; default all")
    measure.add_argument("--fixtures", type=Path, help="directory of SOL-ExecBench kernel JSON (<id>.json)")
    measure.add_argument("--device", default="cuda", help="torch device (default cuda)")

    kb = sub.add_parser(
        "kernelbench",
        help="measure KernelBench problems (eager and torch.compile) and write one signed bundle per pair",
        description="Time each KernelBench problem's own PyTorch program, eagerly and through torch.compile "
        "(default mode), under protocol v2, checked against a float64 run; one signed bundle per (problem, mode). "
        "A progress file in --out lets a later call continue where this one stopped.",
    )
    signing = kb.add_mutually_exclusive_group(required=True)
    signing.add_argument("--key", type=Path, help="Ed25519 private key file (from keygen)")
    signing.add_argument(
        "--unsigned",
        action="store_true",
        help="write each payload unsigned (*.unsigned.json), to be signed elsewhere with `sign`: for a GPU "
        "machine without cryptography and rfc8785",
    )
    kb.add_argument("--out", type=Path, required=True, help="directory for bundles and progress.json")
    kb.add_argument("--levels", type=_levels, default=(1, 2, 3), help="comma-separated levels (default 1,2,3)")
    kb.add_argument("--problem", action="append", help="repeatable, e.g. level1/19_ReLU.py; default all")
    kb.add_argument("--mode", action="append", choices=["eager", "compile"], help="repeatable; default both")
    kb.add_argument("--match", help="only problems whose key (level2/1_Conv2D_ReLU_BiasAdd.py) this regex finds")
    kb.add_argument(
        "--protocol",
        choices=["v2", "faithful"],
        default="v2",
        help="v2: strict protocol v2 (TF32 off); faithful: KernelBench's own settings (PyTorch's defaults), "
        "protocol kernelindex-rerun-kernelbench-faithful-v1 (default v2)",
    )
    kb.add_argument("--limit", type=int, help="at most this many problems from the list (after --problem)")
    kb.add_argument("--budget-s", type=float, help="start no new problem after this many seconds")
    kb.add_argument("--device", default="cuda", help="torch device (default cuda)")
    kb.add_argument(
        "--graph-check",
        action="store_true",
        help="also time each blocking-kernel case by CUDA-graph replay (kept as measurement.graphReplay), so a "
        "host-bound network shows as a gap between the two figures",
    )

    proof = sub.add_parser(
        "host-proof",
        help="time a light and a host-heavy call of one kernel under protocols v1 and v2",
        description="Time the same kernel called directly and after a host busy-wait per call, under v1 and v2; "
        "under v2 both medians must agree (no host time in the interval).",
    )
    proof.add_argument("--host-us", type=float, default=500.0, help="host busy-wait per call (default 500 us)")
    proof.add_argument("--device", default="cuda", help="torch device (default cuda)")
    proof.add_argument("--out", type=Path, help="also write the figures as JSON here")

    sign = sub.add_parser(
        "sign",
        help="sign payloads written by `kernelbench --unsigned`",
        description="Sign each *.unsigned.json with your key, writing the signed bundle *.json beside it.",
    )
    sign.add_argument("--key", type=Path, required=True, help="Ed25519 private key file (from keygen)")
    sign.add_argument("files", type=Path, nargs="+")

    verify = sub.add_parser("verify", help="check a bundle's signature against an approved public key")
    verify.add_argument("bundle", type=Path)
    verify.add_argument("--public-key", required=True, help="approved base64 raw Ed25519 public key")
    return parser


def _fmt_ns(ns: Any) -> str:
    if not isinstance(ns, (int, float)):
        return "-"
    us = ns / 1000
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} us"


def _print_summary(summary: dict[str, Any]) -> None:
    rows = [("implementation", "cases", "suite latency", "bound", "status")]
    for b in summary["bundles"]:
        s = b["suite"]
        rows.append(
            (
                b["implementation"],
                f"{s['casesPassed']}/{s['casesMeasured']}",
                _fmt_ns(s["latencyNs"]),
                _fmt_ns(s["boundNs"]),
                b["status"],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
    print("\nceilings (median of repeats):")
    for name, c in summary["ceilings"].items():
        if "value" in c:
            scale, unit = (1e12, "TB/s") if c["unit"] == "bytes/s" else (1e12, "TFLOP/s")
            print(f"  {name}: {c['value'] / scale:.2f} {unit}  ({c['method']})")
        else:
            print(f"  {name}: error {c.get('error')}")
    for b in summary["bundles"]:
        if b["message"]:
            print(f"\n{b['implementation']} {b['status']}: {b['message'][:500]}")
        print(f"wrote {b['path']}")


def _kernelbench(args: argparse.Namespace, key: Any) -> int:
    from kernelindex.rerun.kernelbench_problems import ProblemError, list_problems, matching_problems, select_problems
    from kernelindex.rerun.kernelbench_run import run_kernelbench_session

    try:
        problems = matching_problems(select_problems(list_problems(levels=args.levels), args.problem), args.match)
    except ProblemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.limit is not None:
        problems = problems[: max(0, args.limit)]
    try:
        rows = run_kernelbench_session(
            problems,
            args.mode or ["eager", "compile"],
            key,
            args.out,
            device=args.device,
            budget_s=args.budget_s,
            protocol=args.protocol,
            graph_check=args.graph_check,
        )
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(f"{len(rows)} bundle(s) written this call: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0


def _host_proof(device: str, host_us: float, out: Path | None) -> int:
    import json

    import torch

    from kernelindex.rerun.host_proof import host_proof

    if not torch.cuda.is_available():
        print("error: host-proof needs a CUDA device", file=sys.stderr)
        return 2
    figures = host_proof(torch.device(device), host_us=host_us)
    text = json.dumps(figures, indent=1)
    print(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    unsigned = args.command == "kernelbench" and args.unsigned
    missing = missing_packages("kernelbench-unsigned" if unsigned else args.command)
    if missing:
        print(
            f"error: {args.command} needs {', '.join(missing)}, not importable by {sys.executable}; on a machine "
            "without a package index carry them as wheels (kernelindex/rerun/README.md says how)",
            file=sys.stderr,
        )
        return 2
    if args.command == "host-proof":
        return _host_proof(args.device, args.host_us, args.out)
    if unsigned:
        return _kernelbench(args, None)
    from kernelindex.rerun.bundle import (
        BundleError,
        KeyFileError,
        generate_key,
        key_id,
        load_private_key,
        public_key_b64,
        public_key_raw,
        read_bundle,
        verify_bundle,
    )

    if args.command == "keygen":
        try:
            key = generate_key(args.keyfile, raw=args.raw)
        except KeyFileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"keyId: {key_id(public_key_raw(key.public_key()))}")
        print(f"publicKey: {public_key_b64(key)}")
        return 0
    if args.command == "verify":
        bundle = read_bundle(args.bundle)
        from base64 import b64decode

        try:
            kid = key_id(b64decode(args.public_key, validate=True))
            payload = verify_bundle(bundle, {kid: args.public_key})
        except (BundleError, ValueError) as exc:
            print(f"refused: {exc}", file=sys.stderr)
            return 1
        print(f"ok: {kid} signed bundle {payload.get('bundleId')} ({payload.get('status')})")
        return 0
    try:
        key = load_private_key(args.key)
    except KeyFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.key.stat().st_mode & 0o077:
        print(f"warning: {args.key} is readable by others; a signing key should be mode 0600", file=sys.stderr)
    if args.command == "sign":
        from kernelindex.rerun.unsigned import UnsignedError, sign_files

        try:
            written = sign_files(args.files, key)
        except UnsignedError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"signed {len(written)} payload(s) with {key_id(public_key_raw(key.public_key()))}")
        return 0
    if args.command == "kernelbench":
        return _kernelbench(args, key)
    from kernelindex.rerun.measure import run_session

    try:
        summary = run_session(
            args.workload or sorted(WORKLOADS),
            args.implementation,
            args.cases,
            args.fixtures,
            key,
            args.out,
            device=args.device,
        )
    except (SuiteError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_summary(summary)
    return 0 if all(b["status"] == "passed" for b in summary["bundles"]) else 1
