"""The run detail page's context (PRODUCT.md §6, ten sections)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from typing import Any, ClassVar

from kernelindex.accounts.markup import render_body
from kernelindex.citations import FORMAT_LABELS, FORMATS, RENDERERS, CitableRecord, plain_text
from kernelindex.store.attestations import REPORT_REASONS, AttestationView
from kernelindex.store.run_queries import Run, RunStanding
from kernelindex.store.runs import to_view
from kernelindex.store.schemas import ManifestVersionItem
from kernelindex.web.errors import BadRequest
from kernelindex.web.format import latency, ratio
from kernelindex.web.leaderboard import Part
from kernelindex.web.pages import PageContext
from kernelindex.web.rerun_part import RerunPart

EVIDENCE_SENTENCES = {
    "reported": "Reported by source; not independently reproduced.",
    "reproducible": "Reproducible: source, licence and install recipe are available.",
    "verified": "KernelIndex verified: a KernelIndex-controlled rerun produced this figure.",
    "replicated": "Independently replicated: two or more controlled reruns agree.",
}
SOL_STATISTIC_NOTE = (
    "The source publishes one suite figure per submission and calls it a mean. Its figures fit the "
    "geometric mean of the per-case latencies: the source's own SOL-bound and baseline aggregates "
    "equal the geometric means of their per-case values exactly. Per-case latencies of submissions "
    "are not published."
)


class Fact(Part):
    label: str
    value: str
    url: str | None = None
    mono: bool = False


class ManifestBlock(Part):
    role: str
    kind: str
    name: str
    digest: str
    manifest: dict[str, Any]
    url: str


class VersionRow(Part):
    digest: str
    recorded_at: datetime
    superseded_at: datetime | None


class CitationFormat(Part):
    key: str  # "bib", "ris", "csl.json" or "txt": the suffix of the URL that serves it
    label: str
    url: str
    media_type: str
    text: str


class Citation(Part):
    permalink: str
    digest: str
    accessed: date
    text: str  # the plain-text line
    formats: list[CitationFormat]


def run_citable(run: Run, permalink: str, accessed: date) -> CitableRecord:
    """What a run's citation says (PRODUCT.md §8), for the page's "Cite this record" and
    ``/runs/{name}/cite.*`` alike: the implementation's project as author, the source and its
    external id, the observed date as issued."""
    manifest = json.loads(run.manifest_json)
    native = manifest["spec"].get("sourceNative") or {}
    external_id = run.external_id
    if external_id and native.get("source") == "sol-execbench":
        external_id = f"submission {external_id}"
    observed = run.observed_at if run.observed_at.tzinfo else run.observed_at.replace(tzinfo=UTC)
    return CitableRecord(
        key=run.name,
        title=manifest["metadata"].get("title") or run.name,
        author=run.implementation.project,
        source=run.source.name if run.source else "KernelIndex",
        external_id=external_id,
        permalink=permalink,
        digest=run.digest,
        issued=observed.astimezone(UTC).date(),
        accessed=accessed,
    )


def citation_part(record: CitableRecord, cite_path: str) -> Citation:
    """``record`` in the four formats, each with the URL serving it: ``{cite_path}.{key}?accessed=…``,
    so that what is downloaded is what the page shows."""
    query = f"?accessed={record.accessed.isoformat()}"
    return Citation(
        permalink=record.permalink,
        digest=record.digest,
        accessed=record.accessed,
        text=plain_text(record),
        formats=[
            CitationFormat(
                key=key,
                label=FORMAT_LABELS[key],
                url=f"{cite_path}.{key}{query}",
                media_type=FORMATS[key],
                text=render(record),
            )
            for key, render in RENDERERS.items()
        ],
    )


class AttestationPart(Part):
    name: str
    url: str
    digest: str
    type: str
    type_label: str
    author: str
    created_at: datetime
    body_html: str
    evidence_url: str | None
    measured_latency: str | None
    environment_summary: str | None


ATTESTATION_TYPES = {
    "reproduced": "Reproduced",
    "could_not_reproduce": "Could not reproduce",
    "environment_note": "Environment note",
    "regression_observed": "Regression observed",
}


def attestation_part(view: AttestationView) -> AttestationPart:
    return AttestationPart(
        name=view.name,
        url=f"/attestations/{view.name}",
        digest=view.digest,
        type=view.type,
        type_label=ATTESTATION_TYPES.get(view.type, view.type),
        author=view.author,
        created_at=view.created_at,
        body_html=render_body(view.body, view.body_format),
        evidence_url=view.evidence_url,
        measured_latency=latency(view.measured_latency_ns) if view.measured_latency_ns else None,
        environment_summary=view.environment_summary,
    )


class FormState(Part):
    """A form's errors by field and the values to show again."""

    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    done: bool = False


class RunPage(PageContext):
    template: ClassVar[str] = "run.html"

    name: str
    title: str
    digest: str
    latency_ns: int
    latency: str
    statistic: str
    evidence: str
    evidence_sentence: str
    availability: str
    observed_at: datetime
    rank: int | None
    group_size: int
    group_label: str
    group_url: str
    comparison_key: str
    not_ranked_because: list[str]
    sol_score: str | None
    times_reference: str | None
    cases_faster: str | None
    banners: list[str]
    identity: list[Fact]
    correctness: str
    workload: list[Fact]
    measurements: list[Fact]
    source_metrics: list[Fact]
    protocol: list[Fact]
    protocol_note: str | None
    environment: list[Fact]
    artifacts: list[Fact]
    manifests: list[ManifestBlock]
    history: list[VersionRow]
    citation: Citation
    workload_slug: str
    attestations: list[AttestationPart]
    signed_in: bool
    attestation_types: dict[str, str]
    attestation_form: FormState
    report_reasons: dict[str, str]
    report_form: FormState
    rerun: RerunPart | None = None


_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_day(name: str, value: str | None) -> date | None:
    """A ``YYYY-MM-DD`` query parameter; ``None`` when it is absent or empty, ``BadRequest`` when it is
    anything else (``date.fromisoformat`` alone would also take ``20260901`` or ``2026-W36``)."""
    if value is None or value == "":
        return None
    if _DAY.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    shown = value if len(value) <= 40 else value[:40] + "…"
    raise BadRequest(f"{name} must be a date as YYYY-MM-DD; got {shown!r}.")


def parse_accessed(value: str | None) -> date:
    """The access date a citation names: ``?accessed=YYYY-MM-DD``, or today (UTC)."""
    return parse_day("accessed", value) or datetime.now(UTC).date()


def _block(role: str, record: Any) -> ManifestBlock:
    manifest = json.loads(record.manifest_json)
    return ManifestBlock(
        role=role,
        kind=manifest["kind"],
        name=record.name,
        digest=record.digest,
        manifest=manifest,
        url=f"/manifests/{record.digest}",
    )


def build_run_page(
    run: Run,
    standing: RunStanding,
    versions: list[ManifestVersionItem],
    base_url: str,
    accessed: date,
    attestations: list[AttestationView],
    signed_in: bool,
    attestation_form: FormState | None = None,
    report_form: FormState | None = None,
    rerun: RerunPart | None = None,
) -> RunPage:
    view = to_view(run)
    spec = json.loads(run.manifest_json)["spec"]
    protocol_spec = json.loads(run.protocol.manifest_json)["spec"]
    environment_spec = json.loads(run.environment.manifest_json)["spec"]
    workload_spec = json.loads(run.workload.manifest_json)["spec"]
    metrics = view.metrics
    native = spec.get("sourceNative") or {}

    banners = []
    if run.withdrawn_at:
        banners.append(
            f"Withdrawn on {run.withdrawn_at:%Y-%m-%d}: {(run.withdrawn_reason or '').rstrip('.')}. "
            "It is kept here but not ranked."
        )
    if run.upstream_withdrawn:
        banners.append(f"Disqualified by the source: {run.upstream_withdrawn_reason}. Shown, not ranked.")
    if run.held_for_review and rerun is not None:
        banners.append(
            f"Held for review: this suite latency is below its roofline bound on this GPU ({rerun.bound}, the "
            "geometric mean of the per-case bounds), which no correct kernel should reach. Shown, not ranked."
        )
    elif run.held_for_review:
        banners.append(
            "Held for review: this suite latency is below the workload's speed-of-light bound "
            f"({latency(round((run.workload.sol_aggregate_ms or 0) * 1_000_000))}, the geometric mean of the "
            "per-case bounds), which no correct kernel should reach. Shown, not ranked."
        )
    if run.missing_since:
        banners.append(f"No longer listed by the source since {run.missing_since:%Y-%m-%d}; the record is kept.")

    permalink = f"{base_url}/runs/{run.name}"
    title = json.loads(run.manifest_json)["metadata"].get("title") or run.name
    fast, total = metrics.get("fast_1_count"), metrics.get("fast_1_total")
    hardware = environment_spec["hardware"]
    gpu = hardware["product"] + (f" ({hardware['architecture']})" if hardware.get("architecture") else "")
    return RunPage(
        name=run.name,
        title=title,
        digest=run.digest,
        latency_ns=run.latency_ns,
        latency=latency(run.latency_ns),
        statistic=run.primary_statistic,
        evidence=run.evidence,
        evidence_sentence=EVIDENCE_SENTENCES[run.evidence],
        availability=view.availability,
        observed_at=run.observed_at,
        rank=standing.rank,
        group_size=standing.group_size,
        group_label=f"{view.gpu_product} · stack {view.stack}" if view.stack else view.gpu_product,
        group_url=f"/workloads/{view.workload_slug}?group={run.comparison_key.removeprefix('sha256:')[:16]}",
        comparison_key=run.comparison_key,
        not_ranked_because=standing.reasons,
        sol_score=f"{view.sol_score:.4f}" if view.sol_score is not None else None,
        times_reference=ratio(metrics["avg_speedup"]) + " reference" if "avg_speedup" in metrics else None,
        cases_faster=f"{fast}/{total} cases faster" if fast is not None and total is not None else None,
        banners=banners,
        identity=[
            Fact(label="implementation", value=view.implementation_title, url=f"/implementations/{view.project_slug}"),
            Fact(label="project", value=view.project),
            Fact(label="revision", value=view.revision, mono=True),
            Fact(label="workload", value=view.workload_title, url=f"/workloads/{view.workload_slug}"),
            Fact(
                label="source",
                value=view.source_name or "–",
                url=f"/sources/{view.source_slug}" if view.source_slug else None,
            ),
            Fact(label="external id", value=_external_id(view.external_id, rerun), mono=True),
            Fact(label="comparison key", value=run.comparison_key, mono=True),
            Fact(label="run digest", value=run.digest, mono=True),
        ],
        correctness=_correctness(run.status, protocol_spec, rerun),
        workload=[
            Fact(label="suite", value=f"{run.workload.case_count} cases · {run.primary_statistic} latency"),
            Fact(label="comparator", value=protocol_spec["correctness"]["comparator"], mono=True),
            Fact(
                label="definition",
                value=workload_spec["definition"]["name"],
                url=f"/workloads/{view.workload_slug}",
                mono=True,
            ),
        ],
        measurements=[
            Fact(label=f"latency · {stat}", value=latency(ns)) for stat, ns in spec["timing"]["latencyNs"].items()
        ],
        source_metrics=[Fact(label=key, value=json.dumps(value), mono=True) for key, value in metrics.items()],
        protocol=[
            Fact(
                label="harness",
                value=f"{protocol_spec['harness']['name']} {protocol_spec['harness']['version']}",
                url=f"/protocols/{run.protocol.name}",
            ),
            Fact(label="timer", value=protocol_spec["measurement"]["timer"], mono=True),
            Fact(label="primaryStatistic", value=protocol_spec["measurement"]["primaryStatistic"], mono=True),
            Fact(label="correctnessReference", value=protocol_spec["correctness"]["reference"]),
            Fact(label="comparabilityFamily", value=protocol_spec["comparability"]["family"], mono=True),
            Fact(label="notes", value=protocol_spec["comparability"].get("notes", "–")),
        ],
        protocol_note=SOL_STATISTIC_NOTE if native.get("source") == "sol-execbench" else None,
        environment=[
            Fact(label="gpu", value=gpu, url=f"/gpus/{view.gpu_slug}"),
            *[
                Fact(label=name, value=value, mono=True)
                for name, value in environment_spec["software"]["libraries"].items()
            ],
            *(
                [Fact(label="worker", value=labels["worker"], mono=True)]
                if (labels := json.loads(run.manifest_json)["metadata"].get("labels")) and "worker" in labels
                else []
            ),
        ],
        artifacts=_artifacts(rerun),
        manifests=[
            _block("run", run),
            _block("protocol", run.protocol),
            _block("environment", run.environment),
            _block("implementation", run.implementation),
            _block("workload", run.workload),
        ],
        history=[
            VersionRow(digest=v.digest, recorded_at=v.recorded_at, superseded_at=v.superseded_at) for v in versions
        ],
        citation=citation_part(run_citable(run, permalink, accessed), f"/runs/{run.name}/cite"),
        workload_slug=view.workload_slug,
        attestations=[attestation_part(a) for a in attestations],
        signed_in=signed_in,
        attestation_types=ATTESTATION_TYPES,
        attestation_form=attestation_form or FormState(),
        report_reasons=REPORT_REASONS,
        report_form=report_form or FormState(),
        rerun=rerun,
    )


def _external_id(external_id: str | None, rerun: RerunPart | None) -> str:
    if external_id is None:
        return "–"
    return f"bundle/{external_id}" if rerun is not None else f"submission/{external_id}"


def _correctness(status: str, protocol_spec: dict[str, Any], rerun: RerunPart | None) -> str:
    if rerun is None:
        return (
            "Marked passed by the source; the correctness policy was not published."
            if status == "passed"
            else f"Status {status}."
        )
    tolerance = protocol_spec["correctness"]["tolerance"]
    return (
        f"Checked by the KernelIndex runner on every case: each output against a float64 reference computed on "
        f"the same GPU from the same inputs; an element matches when |out − ref| ≤ {tolerance['atol']} + "
        f"{tolerance['rtol']} × |ref|, and an output passes when at least {tolerance['matchedRatio']:.1%} of its "
        f"elements match. {rerun.cases_passed}/{rerun.case_count} cases passed."
    )


def _artifacts(rerun: RerunPart | None) -> list[Fact]:
    if rerun is None:
        return []
    return [
        Fact(label="signed bundle", value=f"{rerun.bundle_id}.json", url=rerun.bundle_url, mono=True),
        Fact(label="bundle sha256", value=rerun.bundle_sha256, mono=True),
        Fact(label="implementation source", value=rerun.source_path, url=rerun.source_url, mono=True),
        Fact(label="source sha256 (as measured)", value=rerun.source_sha256, mono=True),
    ]
