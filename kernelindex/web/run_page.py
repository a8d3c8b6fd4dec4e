"""The run detail page's context (PRODUCT.md §6, ten sections)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any, ClassVar

from kernelindex import figures, urls
from kernelindex.accounts.markup import render_body
from kernelindex.citations import FORMAT_LABELS, FORMATS, RENDERERS, CitableRecord, plain_text, run_title
from kernelindex.manifests import BenchmarkProtocol, BenchmarkRun, ExecutionEnvironment
from kernelindex.manifests.types import AttestationType, EvidenceLevel, RunStatus
from kernelindex.store.attestations import REPORT_REASONS, AttestationView
from kernelindex.store.manifests import (
    Stored,
    environment_manifest,
    implementation_manifest,
    load_manifest,
    manifest_document,
    protocol_manifest,
    run_manifest,
    workload_manifest,
)
from kernelindex.store.reruns import RerunAgreements
from kernelindex.store.run_queries import Run, RunStanding, review_of
from kernelindex.store.runs import RunView, to_view
from kernelindex.store.schemas import FigureChange, ManifestVersionItem, Review
from kernelindex.store.submissions import SubmittedRun
from kernelindex.store.upstream import UpstreamRecord, upstream_record
from kernelindex.uncertainty import Uncertainty, rank_text
from kernelindex.web.charts.case import CaseDistribution, case_distribution
from kernelindex.web.confirmation import ConfirmationPart
from kernelindex.web.errors import BadRequest
from kernelindex.web.field_labels import field_label, field_value
from kernelindex.web.format import date as day_text
from kernelindex.web.format import latency
from kernelindex.web.leaderboard import ShareOfBound, share_part
from kernelindex.web.pages import PageContext, Part
from kernelindex.web.rank_part import UncertaintyPart, uncertainty_part
from kernelindex.web.rerun_part import RerunPart
from kernelindex.web.statistic import TIMING_LABELS, StatisticName, statistic_name
from kernelindex.web.sweep_part import cases_text

EVIDENCE_SENTENCES = {
    EvidenceLevel.REPORTED: "Reported by source; not independently reproduced.",
    EvidenceLevel.REPRODUCIBLE: "Reproducible: source, licence and install recipe are available.",
    EvidenceLevel.VERIFIED: "KernelIndex verified: a KernelIndex-controlled rerun produced this figure.",
    EvidenceLevel.REPRODUCED: (
        "Reproduced by KernelIndex: another controlled rerun by the same operator, on another physical GPU (its "
        "UUID), agrees case by case. Not independent: one operator ran both."
    ),
    EvidenceLevel.REPLICATED: (
        "Independently replicated: a controlled rerun by a different approved operator, on a different GPU, "
        "agrees case by case."
    ),
}


def evidence_sentence(evidence: EvidenceLevel, rerun: RerunPart | None) -> str:
    """What the run's evidence level means; a rerun an operator uploaded names the operator, not KernelIndex."""
    key = rerun.approved_key if rerun is not None else None
    if key is None:
        return EVIDENCE_SENTENCES[evidence]
    who = f"{key.operator_name} (account {key.handle})"
    if evidence == EvidenceLevel.VERIFIED:
        return (
            f"Verified rerun by {who}: measured on their machine under the published KernelIndex rerun protocol, "
            "signed by a runner key a maintainer approved for them, every figure rechecked here from its raw samples."
        )
    if evidence == EvidenceLevel.REPRODUCED:
        return (
            f"Reproduced by {who}: another rerun of theirs, on another physical GPU (its UUID), agrees case by "
            "case. Not independent: one operator ran both."
        )
    return EVIDENCE_SENTENCES[evidence]


def submitted_sentence(handle: str) -> str:
    """Who stands behind a submitted run's figure, in place of "Reported by source"."""
    return f"Reported by {handle}, reviewed by maintainers; not independently reproduced."


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
    native: str | None = None  # the field's name at its source, shown beside the label
    digest: bool = False  # a sha256 digest: shown short, whole on hover and in a copy button


def native_fact(name: str, value: object, url: str | None = None) -> Fact:
    """A source-native field under its human label, its own name kept beside it."""
    label = field_label(name)
    # "Timer" needs no "timer" beside it; "SOL score" keeps "sol_score".
    native = None if label.label.casefold() == name else name
    return Fact(label=label.label, value=field_value(name, value), url=url, mono=label.mono, native=native)


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


class FigureChangeLine(Part):
    """ "The source changed this figure on <date>: <figure> was X, now Y", in parts."""

    changed_on: str
    figure: str
    was: str
    now: str


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
    manifest = run_manifest(run)
    external_id = run.external_id
    if external_id and _is_sol_execbench(manifest):
        external_id = f"submission {external_id}"
    observed = run.observed_at if run.observed_at.tzinfo else run.observed_at.replace(tzinfo=UTC)
    return CitableRecord(
        key=run.name,
        title=run_title(*_title_parts(run)),
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
    type: AttestationType
    type_label: str
    author: str
    created_at: datetime
    body_html: str
    evidence_url: str | None
    measured_latency: str | None
    environment_summary: str | None


ATTESTATION_TYPES = {
    AttestationType.REPRODUCED: "Reproduced",
    AttestationType.COULD_NOT_REPRODUCE: "Could not reproduce",
    AttestationType.ENVIRONMENT_NOTE: "Environment note",
    AttestationType.REGRESSION_OBSERVED: "Regression observed",
}


def attestation_part(view: AttestationView) -> AttestationPart:
    return AttestationPart(
        name=view.name,
        url=f"/attestations/{view.name}",
        digest=view.digest,
        type=view.type,
        type_label=ATTESTATION_TYPES[view.type],
        author=view.author,
        created_at=view.created_at,
        body_html=render_body(view.body, view.body_format),
        evidence_url=view.evidence_url,
        measured_latency=latency(view.measured_latency_ns) if view.measured_latency_ns else None,
        environment_summary=view.environment_summary,
    )


class SourceCredit(Part):
    """The source a run's figures come from, with the credit they are shown with."""

    slug: str
    name: str
    attribution: str
    page_url: str  # /sources/{slug}: its licence and terms


class FormState(Part):
    """A form's errors by field and the values to show again."""

    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    done: bool = False


class RunPage(PageContext):
    template: ClassVar[str] = "run.html"

    name: str
    title: str  # "Geometric · Conv2d residual block · NVIDIA B200"
    digest: str
    latency_ns: int
    latency: str
    statistic: str  # the primary statistic as the manifest names it ("mean")
    statistic_name: str  # what the figure is, in words ("geometric mean of case latencies")
    statistic_inferred: bool  # how the suite figure aggregates its cases is inferred, not published
    evidence: EvidenceLevel
    evidence_sentence: str
    availability: str
    observed_at: datetime  # when the source dates the measurement: its publication, as far as is known
    first_recorded_at: datetime  # when KernelIndex first recorded it
    last_observed_at: datetime | None  # when KernelIndex last found it at the source
    upstream: UpstreamRecord | None
    rank: int | None
    # Its place as a range given the intervals, and its figure's interval (``web.rank_part``).
    rank_range: list[int] | None
    rank_text: str | None
    distinct_from_best: bool | None
    uncertainty: UncertaintyPart | None
    group_size: int
    group_label: str
    group_url: str
    comparison_key: str
    not_ranked_because: list[str]
    sol_score: float | None  # the source's own score, a number as in every JSON twin and the API
    sol_score_text: str | None  # "0.806"
    sol_score_figure: str | None  # "SOL score 0.806": the score under the source's own name
    share_of_bound: ShareOfBound | None  # computed by the registry, only where the bound is known
    times_reference: str | None
    cases_faster: str | None
    cases_measured: str | None  # "measured 6 of 8 cases" for a run that timed part of the suite
    banners: list[str]
    review: Review | None  # a maintainer's decision on a run held for review
    identity: list[Fact]
    correctness: str
    workload: list[Fact]
    measurements: list[Fact]
    source_metrics: list[Fact]
    protocol: list[Fact]
    protocol_note: str | None
    environment: list[Fact]
    artifacts: list[Fact]
    cases: CaseDistribution
    manifests: list[ManifestBlock]
    history: list[VersionRow]
    figure_changes: list[FigureChangeLine]  # figures the source changed, oldest first
    citation: Citation
    workload_slug: str
    attestations: list[AttestationPart]
    signed_in: bool
    attestation_types: dict[AttestationType, str]
    attestation_form: FormState
    report_reasons: dict[str, str]
    report_form: FormState
    source: SourceCredit | None
    rerun: RerunPart | None = None
    # A reported KernelBench figure against the reruns that check it (None for any other run).
    confirmation: ConfirmationPart | None = None
    # A rerun's agreeing reruns (names): on another physical GPU, and on the same GPU measured again.
    reproduced_by: list[str] = []
    repeated_on_same_gpu: list[str] = []
    # Of ``reproduced_by``, those by another approved operator under another key: an independent replication.
    replicated_by: list[str] = []
    # The handle of whoever submitted the run (``/submit``), for a run published from a submission.
    submitted_by: str | None = None


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


def _block(role: str, name: str, record: Stored) -> ManifestBlock:
    return ManifestBlock(
        role=role,
        kind=load_manifest(record.digest, record.manifest_json).kind,
        name=name,
        digest=record.digest,
        manifest=manifest_document(record),
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
    rerun: RerunPart | None = None,
    confirmation: ConfirmationPart | None = None,
    agreements: RerunAgreements | None = None,
    submitted: SubmittedRun | None = None,
) -> RunPage:
    view = to_view(run)
    manifest = run_manifest(run)
    protocol = protocol_manifest(run.protocol)
    metrics = view.metrics
    fast, total = metrics.get("fast_1_count"), metrics.get("fast_1_total")
    statistic = statistic_name(manifest, protocol, run.workload.case_count)
    return RunPage(
        name=run.name,
        title=" · ".join(_title_parts(run)),
        digest=run.digest,
        latency_ns=run.latency_ns,
        latency=latency(run.latency_ns),
        statistic=run.primary_statistic,
        statistic_name=statistic.text,
        statistic_inferred=statistic.inferred,
        evidence=run.evidence,
        evidence_sentence=submitted_sentence(submitted.handle) if submitted else evidence_sentence(run.evidence, rerun),
        availability=view.availability,
        observed_at=run.observed_at,
        first_recorded_at=run.created_at,
        last_observed_at=run.last_seen_at or (run.source.last_observed_at if run.source else None),
        upstream=upstream_record(run),
        rank=standing.rank,
        **_standing_fields(standing, view.uncertainty),
        group_size=standing.group_size,
        group_label=view.environment_label,
        group_url=urls.workload(view.workload_slug, group=run.comparison_key.removeprefix("sha256:")[:16]),
        comparison_key=run.comparison_key,
        not_ranked_because=standing.reasons,
        sol_score=view.sol_score,
        sol_score_text=None if view.sol_score is None else figures.source_score(view.sol_score),
        sol_score_figure=figures.sol_score(view.sol_score),
        share_of_bound=share_part(view.share_of_bound),
        times_reference=figures.times_reference(_number(metrics.get("avg_speedup"))),
        cases_faster=figures.cases_faster(_count(fast), _count(total)),
        cases_measured=f"measured {part}"
        if (part := cases_text(view.cases_measured, run.workload.case_count))
        else None,
        banners=_banners(run, rerun),
        review=review_of(run),
        identity=_identity(run, view, rerun),
        correctness=_correctness(run.status, protocol, rerun),
        workload=_workload(run, view, protocol, statistic),
        measurements=_measurements(manifest, statistic),
        source_metrics=[native_fact(key, value) for key, value in metrics.items()],
        protocol=_protocol(run.protocol.name, protocol, statistic),
        protocol_note=SOL_STATISTIC_NOTE if _is_sol_execbench(manifest) else None,
        environment=_environment(manifest, environment_manifest(run.environment), view.gpu_slug),
        artifacts=_artifacts(rerun) + _submitted_artifacts(submitted),
        cases=case_distribution(
            manifest, [case.axes for case in workload_manifest(run.workload).spec.cases], rerun.cases if rerun else None
        ),
        manifests=[
            _block("run", run.name, run),
            _block("protocol", run.protocol.name, run.protocol),
            _block("environment", run.environment.name, run.environment),
            _block("implementation", run.implementation.name, run.implementation),
            _block("workload", run.workload.name, run.workload),
        ],
        history=[
            VersionRow(digest=v.digest, recorded_at=v.recorded_at, superseded_at=v.superseded_at) for v in versions
        ],
        figure_changes=[
            _change_line(version.recorded_at, change) for version in versions for change in version.figure_changes
        ],
        citation=citation_part(
            run_citable(run, f"{base_url}{urls.run(run.name)}", accessed), f"{urls.run(run.name)}/cite"
        ),
        workload_slug=view.workload_slug,
        attestations=[attestation_part(a) for a in attestations],
        signed_in=signed_in,
        attestation_types=ATTESTATION_TYPES,
        attestation_form=attestation_form or FormState(),
        report_reasons=REPORT_REASONS,
        report_form=FormState(),
        source=(
            SourceCredit(
                slug=run.source.slug,
                name=run.source.name,
                attribution=run.source.attribution,
                page_url=urls.source(run.source.slug),
            )
            if run.source
            else None
        ),
        rerun=rerun,
        confirmation=confirmation,
        reproduced_by=agreements.reproduced_by if agreements else [],
        repeated_on_same_gpu=agreements.repeated_on_same_gpu if agreements else [],
        replicated_by=agreements.replicated_by if agreements else [],
        submitted_by=submitted.handle if submitted else None,
    )


def _change_line(changed_at: datetime, change: FigureChange) -> FigureChangeLine:
    statistic = change.figure.removeprefix("latencyNs.")
    latency_figure = statistic != change.figure
    label = f"latency ({statistic})" if latency_figure else field_label(change.figure).label

    def shown(value: int | float | None) -> str:
        if value is None:
            return "absent"
        return latency(value) if latency_figure else field_value(change.figure, value)

    return FigureChangeLine(changed_on=day_text(changed_at), figure=label, was=shown(change.was), now=shown(change.now))


def _is_sol_execbench(manifest: BenchmarkRun) -> bool:
    native = manifest.spec.source_native
    return native is not None and native.source == "sol-execbench"


def _banners(run: Run, rerun: RerunPart | None) -> list[str]:
    """Why the page needs a warning above all else: withdrawn, disqualified, held, gone upstream."""
    banners = []
    if run.withdrawn_at:
        banners.append(
            f"Withdrawn on {run.withdrawn_at:%Y-%m-%d}: {(run.withdrawn_reason or '').rstrip('.')}. "
            "It is kept here but not ranked."
        )
    if run.upstream_withdrawn:
        banners.append(f"Disqualified by the source: {run.upstream_withdrawn_reason}. Shown, not ranked.")
    bound = (
        f"its speed-of-light bound on this GPU from datasheet peaks ({rerun.sol_bound}"
        if rerun is not None
        else f"the workload's speed-of-light bound ({latency(round((run.workload.sol_aggregate_ms or 0) * 1_000_000))}"
    )
    beats = f"this suite latency is below {bound}, the geometric mean of the per-case bounds)"
    decided, note = day_text(run.reviewed_at), (run.review_note or "").rstrip(".")
    if run.review_state == "rejected":
        banners.append(f"Rejected on review on {decided}: {note}. It is kept here, never ranked.")
    elif run.review_state == "released":
        banners.append(
            f"Released on review on {decided}: {note}. Held at first because {beats}; "
            "a maintainer checked it and released it to the rankings."
        )
    elif run.held_for_review:
        banners.append(f"Held for review: {beats}, which no correct kernel should reach. Shown, not ranked.")
    if run.missing_since:
        banners.append(f"No longer listed by the source since {run.missing_since:%Y-%m-%d}; the record is kept.")
    return banners


def _number(value: Any) -> float | None:
    """A source's metric as a number, or None where it is missing or not one."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _title_parts(run: Run) -> tuple[str, str, str]:
    """(implementation, workload, GPU) as a reader names them; one case of a suite says which."""
    implementation = implementation_manifest(run.implementation).metadata.title or run.implementation.project
    case = run_manifest(run).spec.case_index
    workload = run.workload.title + (f", case {case}" if case is not None else "")
    # Titles like "Liger-Kernel · liger" would read as two parts of the run's title.
    return (
        implementation.replace(" · ", " / "),
        workload,
        environment_manifest(run.environment).spec.hardware.product,
    )


def _identity(run: Run, view: RunView, rerun: RerunPart | None) -> list[Fact]:
    return [
        Fact(label="Implementation", value=view.implementation_title, url=urls.implementation(view.project_slug)),
        Fact(label="Project", value=view.project),
        Fact(label="Revision", value=view.revision, mono=True),
        Fact(label="Workload", value=view.workload_title, url=urls.workload(view.workload_slug)),
        Fact(
            label="Source",
            value=view.source_name or "–",
            url=urls.source(view.source_slug) if view.source_slug else None,
        ),
        Fact(label="Id at the source", value=_external_id(view.external_id, view.source_slug, rerun), mono=True),
        Fact(label="Comparison key", value=run.comparison_key, digest=True),
        Fact(label="Run digest", value=run.digest, digest=True),
    ]


def _workload(run: Run, view: RunView, protocol: BenchmarkProtocol, statistic: StatisticName) -> list[Fact]:
    cases = run.workload.case_count
    return [
        Fact(label="Suite", value=f"{cases} case{'s' if cases != 1 else ''} · {statistic.text}"),
        Fact(label="Comparator", value=protocol.spec.correctness.comparator, mono=True),
        Fact(
            label="Definition",
            value=workload_manifest(run.workload).spec.definition.name,
            url=urls.workload(view.workload_slug),
            mono=True,
        ),
    ]


def _measurements(run: BenchmarkRun, statistic: StatisticName) -> list[Fact]:
    """The primary latency named as computed, then every other statistic the run carries."""
    timing = run.spec.timing
    return [
        Fact(
            label="Latency, " + statistic.text
            if key == timing.primary_statistic
            else TIMING_LABELS.get(key, key.replace("_", " ").capitalize()),
            value=latency(ns),
            native=f"latencyNs.{key}",
        )
        for key, ns in timing.latency_ns.items()
    ]


def _protocol(name: str, protocol: BenchmarkProtocol, statistic: StatisticName) -> list[Fact]:
    spec = protocol.spec
    published = spec.measurement.primary_statistic
    inferred = f" (published as “{published}”; the aggregate is inferred)" if statistic.inferred else ""
    stated = statistic.text + inferred
    return [
        native_fact("harness", f"{spec.harness.name} {spec.harness.version}", url=f"/protocols/{name}"),
        native_fact("timer", spec.measurement.timer),
        native_fact("primaryStatistic", stated),
        native_fact("correctnessReference", spec.correctness.reference),
        native_fact("comparabilityFamily", spec.comparability.family),
        native_fact("notes", spec.comparability.notes),
    ]


def _environment(run: BenchmarkRun, environment: ExecutionEnvironment, gpu_slug: str) -> list[Fact]:
    """The GPU, every library the environment names, and the worker that measured the run (if labelled)."""
    hardware = environment.spec.hardware
    gpu = hardware.product + (f" ({hardware.architecture})" if hardware.architecture else "")
    labels = run.metadata.labels or {}
    return [
        Fact(label="GPU", value=gpu, url=urls.gpu(gpu_slug)),
        *[native_fact(name, value) for name, value in environment.spec.software.libraries.items()],
        *([native_fact("worker", labels["worker"])] if "worker" in labels else []),
    ]


def _external_id(external_id: str | None, source_slug: str | None, rerun: RerunPart | None) -> str:
    if external_id is None:
        return "–"
    if rerun is not None:
        return f"bundle {external_id}"
    return f"submission {external_id}" if source_slug == "sol-execbench" else external_id


def _correctness(status: RunStatus, protocol: BenchmarkProtocol, rerun: RerunPart | None) -> str:
    if rerun is None:
        return (
            "Marked passed by the source; the correctness policy was not published."
            if status == RunStatus.PASSED
            else f"Status {status}."
        )
    tolerance = protocol.spec.correctness.tolerance
    if tolerance is None or tolerance.matched_ratio is None:
        raise ValueError(f"the rerun protocol {protocol.metadata.name} states no tolerance and matched ratio")
    return (
        f"Checked by the KernelIndex runner on every case: each output against a float64 reference computed on "
        f"the same GPU from the same inputs; an element matches when |out − ref| ≤ {tolerance.atol} + "
        f"{tolerance.rtol} × |ref|, and an output passes when at least {tolerance.matched_ratio:.1%} of its "
        f"elements match. {rerun.cases_passed}/{rerun.case_count} cases passed."
    )


def _artifacts(rerun: RerunPart | None) -> list[Fact]:
    if rerun is None:
        return []
    return [
        Fact(label="Signed bundle", value=f"{rerun.bundle_id}.json", url=rerun.bundle_url, mono=True),
        Fact(label="Bundle sha256", value=rerun.bundle_sha256, mono=True),
        Fact(label="Implementation source", value=rerun.source_path, url=rerun.source_url, mono=True),
        Fact(label="Source sha256 (as measured)", value=rerun.source_sha256, mono=True),
    ]


def _submitted_artifacts(submitted: SubmittedRun | None) -> list[Fact]:
    """The evidence a submitter gave with the run, as they gave it (links they vouch for)."""
    if submitted is None:
        return []
    facts = [Fact(label="Evidence (from the submitter)", value=submitted.evidence_url, url=submitted.evidence_url)]
    for name, url, sha256 in submitted.artifacts:
        facts.append(Fact(label=name, value=url, url=url, mono=True))
        if sha256:
            facts.append(Fact(label=f"{name} sha256", value=sha256, mono=True))
    return facts


def _standing_fields(standing: RunStanding, uncertainty: Uncertainty | None) -> dict[str, Any]:
    """The run's rank range where it is ranked, and its interval either way."""
    span = standing.span
    return {
        "rank_range": list(span.rank_range) if span else None,
        "rank_text": rank_text(*span.rank_range) if span else None,
        "distinct_from_best": span.distinct_from_best if span else None,
        "uncertainty": uncertainty_part(uncertainty),
    }
