"""Pages behind controlled reruns: the protocol a reader judges them by, the signed bundles
anyone can verify again, and the source of the implementations that were measured."""

from __future__ import annotations

from typing import Any, ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

import kernelindex.rerun.protocol
from kernelindex import urls
from kernelindex.ranking import CASE_AGREEMENT_BOUND, SUITE_AGREEMENT_BOUND
from kernelindex.rerun import protocol_faithful, protocol_v2
from kernelindex.rerun.implementations import REGISTRY
from kernelindex.rerun.roofline import ASSUMPTION
from kernelindex.store.manifests import manifest_document, protocol_manifest
from kernelindex.store.protocols import protocol_by_name
from kernelindex.store.rerun_protocols import RERUN_PROTOCOL_FAITHFUL_NAME, RERUN_PROTOCOL_V2_NAME
from kernelindex.store.reruns import RERUN_PROTOCOL_NAME, bundle_text
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import NotFound
from kernelindex.web.manifests import IMMUTABLE
from kernelindex.web.pages import PageContext, cached_response, page_route, render_page
from kernelindex.web.run_page import Fact

router = APIRouter()


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
    p = kernelindex.rerun.protocol
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
        Fact(
            label="speed-of-light bound",
            value="Per case, the bytes the definition must move at the GPU's datasheet memory bandwidth, or the "
            "FLOPs it needs at the fastest datasheet peak among the precisions the tolerance admits (those whose "
            f"rounding alone stays within rtol {p.RTOL}: on an H200, the TF32 and FP16 tensor-core rates), whichever "
            "takes longer; the suite's is the geometric mean. No implementation can beat it: a run faster than it "
            "is held for review. The datasheet figures and their sources are in KernelIndex's GPU table.",
        ),
        Fact(
            label="achievable bound",
            value="Shown beside the speed of light, never in its place: the same counts at the ceilings the runner "
            f"measured in the session, which some kernels legitimately beat. {ASSUMPTION}",
        ),
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
    return [Fact(label=label, value=text) for label, text in protocol_v2.RULES] + _standing()


def rerun_rules_faithful() -> list[Fact]:
    """Every rule of the source-faithful protocol, and how its figures are compared: never with strict ones."""
    comparability = Fact(
        label="comparability",
        value="Ranked only against runs of the same workload, this protocol and the same environment (GPU and "
        "software stack), in a comparability family of its own: never against strict v2 reruns, which time the "
        "same program with TF32 off, nor against the source's figures. Its purpose is to check them: its "
        "settings are KernelBench's, so on the GPU model KernelBench timed, a faithful figure confirms or "
        "contradicts KernelBench's published one. Its timer measures device time only (cold L2, no host launch "
        "time), where KernelBench's mean of CUDA-event intervals includes the host's launch time of small calls.",
    )
    standing = [fact for fact in _standing() if fact.label != "comparability"]
    return [Fact(label=label, value=text) for label, text in protocol_faithful.RULES] + standing + [comparability]


def _standing() -> list[Fact]:
    """How reruns of every protocol version earn evidence and are compared."""
    return [
        Fact(
            label="rechecks",
            value="A signature says who wrote a bundle, not that its claims are possible, so the importer holds "
            "each against what the bundle cannot choose: the GPU's name, compute capability, memory, SM count "
            "and L2 size against its datasheet (where the datasheet states them); the clocks against each other "
            "and the datasheet's boost clock; every measured ceiling against the datasheet peak (a copy above the "
            "memory bandwidth is impossible); every case's bytes, FLOPs and bound against the workload's model at "
            "the bundle's own ceilings. A KernelBench program has no byte and FLOP model, so its bundle may claim "
            "no bound, and it is filed only under the workload whose reference program has the sha256 it "
            "measured. Any mismatch refuses the whole bundle, naming the figure.",
        ),
        Fact(
            label="evidence",
            value="Every imported rerun is “KernelIndex verified”. Another rerun of the same implementation in the "
            "same comparison group (another lease, key or GPU) agrees with it when the suite figures are within "
            f"{SUITE_AGREEMENT_BOUND:.0%} of the smaller and every case agrees: their confidence intervals "
            f"overlap, or their medians are within {CASE_AGREEMENT_BOUND:.0%} of the smaller (an interval "
            "measures one lease's sampling noise, often far less than the drift between two leases). An "
            "agreeing rerun on another physical GPU (the GPU UUID each bundle's environment names) by the same "
            "operator makes both “Reproduced by KernelIndex”; the same GPU measured again, in another lease or "
            "under another key, is only “repeated on the same GPU”, which leaves both “KernelIndex verified”, "
            "since it says nothing of another GPU of the model. Only one "
            "signed by a key a maintainer approved for a different operator, on a different GPU, makes them "
            "“Independently replicated”. A key whose operator is not stated never counts as independent.",
        ),
        Fact(
            label="operators",
            value="Besides the registry's own runner, an operator whose runner key a maintainer approved for their "
            "account (stating who they are and the machine) uploads the bundles that key signs, one at a time, "
            f"at {urls.api_reruns()} with an API key of the reruns scope. Each upload passes every check above, "
            "the signature first; a bundle already stored, its payload signed again by another key, or its raw "
            "samples under a new id, is not a second measurement and is refused. Its runs are credited to that "
            "operator, so an agreeing rerun of "
            "theirs on another GPU makes both “Independently replicated”. A revoked key signs no later upload.",
        ),
        Fact(
            label="comparability",
            value="Ranked only against runs of the same workload, protocol version and environment (GPU and "
            "software stack); never against the source's figures measured on other hardware. On a KernelBench "
            "problem the reruns sit beside KernelBench's own timings as a group of their own: KernelBench reports "
            "a mean with PyTorch's defaults, under which cuDNN convolutions use TF32, while these report a median "
            "with TF32 off, so a convolution can take several times longer here than on a comparable GPU there.",
        ),
    ]


RULES = {
    RERUN_PROTOCOL_NAME: rerun_rules,
    RERUN_PROTOCOL_V2_NAME: rerun_rules_v2,
    RERUN_PROTOCOL_FAITHFUL_NAME: rerun_rules_faithful,
}


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
