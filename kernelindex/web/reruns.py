"""Pages behind controlled reruns: the protocol a reader judges them by, the signed bundles
anyone can verify again, and the source of the implementations that were measured."""

from __future__ import annotations

from typing import Any, ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.rerun import protocol as rerun_protocol
from kernelindex.rerun import protocol_v2 as rerun_protocol_v2
from kernelindex.rerun.implementations import REGISTRY
from kernelindex.rerun.roofline import ASSUMPTION
from kernelindex.store.manifests import manifest_document, protocol_manifest
from kernelindex.store.protocols import protocol_by_name
from kernelindex.store.reruns import AGREEMENT_BOUND, RERUN_PROTOCOL_NAME, bundle_text
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import NotFound
from kernelindex.web.manifests import IMMUTABLE
from kernelindex.web.pages import PageContext, cached_response, page_route, render_page
from kernelindex.web.run_page import Fact

router = APIRouter()

RERUN_PROTOCOL_V2_NAME = f"{rerun_protocol_v2.PROTOCOL_NAME}-v{rerun_protocol_v2.PROTOCOL_VERSION}"


class ProtocolPage(PageContext):
    template: ClassVar[str] = "protocol.html"

    name: str
    title: str
    digest: str
    facts: list[Fact]
    rules: list[Fact]
    run_count: int
    manifest: dict[str, Any]


def rerun_rules() -> list[Fact]:
    """Every rule of the rerun protocol, in words, from the constants the runner uses."""
    p = rerun_protocol
    return [
        Fact(
            label="implementations",
            value="Open source only, kept in the registry with their licence and install recipe; the bundle records "
            "the sha256 of the exact source file measured.",
        ),
        Fact(
            label="inputs",
            value=f"Per case, random inputs of the workload's dtypes and shapes from a generator seeded with {p.SEED} "
            "plus the case index; never all zeros. Inputs derived by the definition (AdaIN's mean and std) are "
            "computed from the drawn tensors so that they are consistent.",
        ),
        Fact(
            label="correctness",
            value=f"Every output against a {p.REFERENCE_DTYPE} reference computed on the same GPU from the same "
            f"inputs. An element matches when |out − ref| ≤ {p.ATOL} + {p.RTOL} × |ref| (NaN never matches); an "
            f"output passes when at least {p.MATCHED_RATIO:.1%} of its elements match; a case passes when every "
            "output passes. TF32 is off. Only suites whose every case passes become runs.",
        ),
        Fact(
            label="timing",
            value=f"CUDA events around every single iteration. Before each one, outside the timed region, the L2 is "
            f"flushed by writing a buffer {p.L2_FLUSH_FACTOR}× its size, the GPU spins {p.PRE_LAUNCH_SPIN_CYCLES:,} "
            "cycles so that the host has queued the launches before the clock starts (device time, not launch "
            f"overhead), and the inputs rotate among {p.ROTATION_SETS} copies. {p.WARMUP_ITERATIONS} warm-up "
            f"iterations, then {p.TIMED_ITERATIONS} timed iterations, in {p.TRIALS} trials.",
        ),
        Fact(
            label="statistics",
            value=f"Per case, the median of all {p.TRIALS * p.TIMED_ITERATIONS} timed samples, with p10–p90 and "
            "min–max as its spread; every raw sample is kept in the bundle. The suite figure is the geometric mean "
            "of the per-case medians, the statistic family of SOL-ExecBench's suite figure.",
        ),
        Fact(label="speed-of-light bound", value=f"A roofline bound per case. {ASSUMPTION}"),
        Fact(
            label="ceilings",
            value=f"Measured in the same session on the same GPU, each the median of {p.CEILING_REPEATS} repeats "
            f"after {p.CEILING_WARMUP} warm-ups: a device-to-device copy of {p.COPY_BYTES:,} bytes, "
            f"{p.MATMUL_SIZE}×{p.MATMUL_SIZE} bf16 and fp32 matrix products, and a compute-bound fp32 FMA kernel.",
        ),
        Fact(
            label="environment",
            value="GPU name, architecture, SM count, memory and L2 size, clocks as found at the start and end "
            "(never changed), driver, CUDA, PyTorch, Triton and Python versions.",
        ),
        Fact(
            label="signature",
            value="Each bundle (one implementation on one suite) is signed with the runner's Ed25519 key over the "
            "RFC 8785 canonical JSON of its payload. The registry imports only bundles signed by keys it approves, "
            "and checks that every figure follows from the raw samples and that the cases are the workload's.",
        ),
        *_standing(),
    ]


def rerun_rules_v2() -> list[Fact]:
    """Every rule of rerun protocol v2, in the words the runner publishes with its constants."""
    return [Fact(label=label, value=text) for label, text in rerun_protocol_v2.RULES] + _standing()


def _standing() -> list[Fact]:
    """How reruns of every protocol version earn evidence and are compared."""
    return [
        Fact(
            label="evidence",
            value="Every imported rerun is “KernelIndex verified”. It becomes “Independently replicated” when another "
            "rerun of the same implementation revision in the same comparison group, signed by a different runner "
            f"key on a different GPU, agrees with it: suite figures within {AGREEMENT_BOUND:.0%} of the smaller.",
        ),
        Fact(
            label="comparability",
            value="Ranked only against runs of the same workload, protocol version and environment (GPU and "
            "software stack); never against the source's figures measured on other hardware.",
        ),
    ]


RULES = {RERUN_PROTOCOL_NAME: rerun_rules, RERUN_PROTOCOL_V2_NAME: rerun_rules_v2}


@page_route(router, "/protocols/{name}")
def protocol_page(request: Request, name: str, session: SessionDep) -> Response:
    protocol = protocol_by_name(session, name)
    if protocol is None:
        raise NotFound(f"No benchmark protocol is named {name!r}.")
    spec = protocol_manifest(protocol).spec
    measurement = spec.measurement
    facts = [
        Fact(label="harness", value=f"{spec.harness.name} {spec.harness.version}"),
        Fact(label="correctness reference", value=spec.correctness.reference),
        Fact(label="comparator", value=spec.correctness.comparator, mono=True),
        Fact(label="timer", value=measurement.timer, mono=True),
        Fact(label="primary statistic", value=measurement.primary_statistic, mono=True),
        Fact(label="comparability family", value=spec.comparability.family, mono=True),
        Fact(label="notes", value=_or_dash(spec.comparability.notes)),
        Fact(label="digest", value=protocol.digest, url=urls.manifest(protocol.digest), mono=True),
    ]
    context = ProtocolPage(
        name=protocol.name,
        title=protocol.title,
        digest=protocol.digest,
        facts=facts,
        rules=RULES[name]() if name in RULES else [],
        run_count=protocol.run_count,
        manifest=manifest_document(protocol),
    )
    return render_page(request, context)


def _or_dash(text: str | None) -> str:
    return "–" if text is None else text


@router.get("/reruns/bundles/{bundle_id}.json", include_in_schema=False)
def bundle(request: Request, bundle_id: str, session: SessionDep) -> Response:
    text = bundle_text(session, bundle_id) if len(bundle_id) == 32 else None
    if text is None:
        raise NotFound(f"No rerun bundle has the id {bundle_id!r}.")
    return cached_response(request, text.encode(), "application/json", cache_control=IMMUTABLE)


@router.get("/reruns/sources/{name}.py", include_in_schema=False)
def source(request: Request, name: str) -> Response:
    implementation = REGISTRY.get(name)
    if implementation is None:
        raise NotFound(f"No implementation measured by KernelIndex is named {name!r}.")
    body = implementation.source_path.read_bytes()
    headers = {"X-Source-Sha256": implementation.source_sha256()}
    return cached_response(request, body, "text/plain; charset=utf-8", headers)
