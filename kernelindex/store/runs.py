"""Runs as the pages see them: one flat, typed view per run, loaded with its references.

Also what a run's row and its view both derive, so that the pages and the JSON API say
the same: its ranking facts, its availability text and its environment's stack.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import Session, defer, joinedload

from kernelindex.db.tables import Implementation, Run
from kernelindex.figures import DATASHEET, SOL_EXECBENCH, Share, share
from kernelindex.manifests.types import EvidenceLevel, RunStatus
from kernelindex.ranking import RunFacts
from kernelindex.store.by_spec import BySpec
from kernelindex.store.manifests import Stored, environment_manifest, implementation_manifest, run_manifest
from kernelindex.store.spreads import stored_uncertainty
from kernelindex.uncertainty import Uncertainty


@dataclass(frozen=True)
class RunView:
    name: str
    digest: str
    comparison_key: str
    status: RunStatus
    evidence: EvidenceLevel
    latency_ns: int
    primary_statistic: str
    sol_score: float | None
    # The share of a known bound the latency reaches, naming the bound (``bound_share``); None: no bound.
    share_of_bound: Share | None
    metrics: dict[str, Any]
    # How many cases the run's caseResults hold; None for a run that publishes its suite figure only.
    cases_measured: int | None
    observed_at: datetime
    held_for_review: bool
    review_state: str | None  # a maintainer's decision on a held run: "released" or "rejected"
    review_note: str | None
    reviewed_at: datetime | None
    upstream_withdrawn: bool
    upstream_withdrawn_reason: str | None
    withdrawn_at: datetime | None
    withdrawn_reason: str | None
    missing_since: datetime | None
    external_id: str | None
    source_name: str | None
    source_slug: str | None
    workload_slug: str
    workload_title: str
    implementation_name: str
    implementation_title: str
    project: str
    project_slug: str
    revision: str
    runtime: str | None
    license: str | None
    source_available: bool
    has_install_recipe: bool
    gpu_product: str
    gpu_slug: str
    architecture: str | None
    environment_name: str
    environment_title: str
    environment_label: str  # ``environment_label``: the one name every page gives the environment
    provider: str | None  # the machine setup the environment names; two setups of one GPU are two groups
    stack: str | None
    software: str  # every library, version and driver the environment names (``stack_text``)
    protocol_name: str
    protocol_title: str
    harness_version: str
    # The interval around ``latency_ns`` and what it rests on; None: unknown (``store.spreads``).
    uncertainty: Uncertainty | None = None

    @property
    def facts(self) -> RunFacts:
        return run_facts(self)

    @property
    def availability(self) -> str:
        return availability_text(self.license, self.source_available, self.has_install_recipe)


def run_facts(run: Run | RunView) -> RunFacts:
    """What ranking needs to know about a run, from its row or its view."""
    return RunFacts(
        name=run.name,
        comparison_key=run.comparison_key,
        latency_ns=run.latency_ns,
        observed_at=run.observed_at,
        status=run.status,
        implementation=(
            run.implementation_title if isinstance(run, RunView) else implementation_identity(run.implementation)
        ),
        withdrawn=run.withdrawn_at is not None,
        upstream_withdrawn=run.upstream_withdrawn,
        held_for_review=run.held_for_review,
        rejected_on_review=run.review_state == "rejected",
        uncertainty=run.uncertainty if isinstance(run, RunView) else run_uncertainty(run),
    )


def run_uncertainty(run: Run) -> Uncertainty | None:
    """The interval a run's row keeps (``store.spreads``)."""
    return stored_uncertainty(run.spread_kind, run.spread_low_ns, run.spread_high_ns)


def implementation_identity(implementation: Implementation) -> str:
    """What one implementation is across its revisions: its manifest's title, or its project.

    A manifest is one revision, so its name cannot say it, nor can the project, which one
    library's several variants share: the title names a SOL-ExecBench submitter, a KernelBench
    mode ("PyTorch torch.compile, inductor max-autotune"), a Liger-Kernel provider
    ("Liger-Kernel · liger_triton") or a rerun's kernel and runtime, whatever its revision."""
    return implementation_manifest(implementation).metadata.title or implementation.project


def availability_text(license: str | None, source_available: bool, install_recipe: bool) -> str:
    """As PRODUCT.md §4 words it: "license unknown · no source · no install recipe"."""
    return " · ".join(
        [
            f"license {license}" if license else "license unknown",
            "source available" if source_available else "no source",
            "install recipe" if install_recipe else "no install recipe",
        ]
    )


@dataclass(frozen=True)
class _SpecFacts:
    """What a run view reads of a run's manifest, all of it from the spec."""

    metrics: Mapping[str, Any]  # the parsed manifest's, shared: copied before it is handed out
    cases_measured: int | None


def _spec_facts_of(run: Stored) -> _SpecFacts:
    spec = run_manifest(run).spec
    native = spec.source_native
    return _SpecFacts(
        metrics=native.metrics if native else {},
        cases_measured=None if spec.case_results is None else len(spec.case_results),
    )


# Kept by digest: the run views of a page read no manifest text (``run_views_query`` defers it).
_spec_facts = BySpec(_spec_facts_of, size=4096)


# The comparability family of SOL-ExecBench's leaderboard, whose runs its own T_SOL bounds.
SOL_EXECBENCH_FAMILY = "sol_execbench_leaderboard"


def bound_share(run: Run) -> Share | None:
    """The share of a known bound the run's latency reaches (PRODUCT.md §5), naming the bound; None
    where no bound is known for the run's GPU and cases: then no share is shown at all.

    A controlled rerun's import computed its GPU's datasheet speed of light (``sol_bound_ns``, the
    geometric mean of the per-case bounds). A SOL-ExecBench run is bounded by the source's own per-case
    T_SOL, published for the GPU its leaderboard runs on, whose geometric mean over the suite is the
    workload's ``sol_aggregate_ms``; it applies to a run that measured the whole suite.
    """
    facts = _spec_facts(run)
    bound_ns = facts.metrics.get("sol_bound_ns")
    if isinstance(bound_ns, int | float) and not isinstance(bound_ns, bool):
        return share(bound_ns, run.latency_ns, DATASHEET)
    aggregate = run.workload.sol_aggregate_ms
    if run.protocol.family == SOL_EXECBENCH_FAMILY and aggregate and facts.cases_measured is None:
        return share(aggregate * 1_000_000, run.latency_ns, SOL_EXECBENCH)
    return None


def run_metrics(run: Stored) -> dict[str, Any]:
    """The source-native metrics a run's manifest carries, verbatim (a new dict; empty when it has none)."""
    return dict(_spec_facts(run).metrics)


def evaluation_stack(environment: Stored) -> str | None:
    """The evaluation stack an environment's manifest names (e.g. "v1.1"), if it names one."""
    return environment_manifest(environment).spec.software.libraries.get("evaluation_stack")


def environment_label(environment: Stored) -> str:
    """How every page names an environment: its GPU, the machine setup it names and its
    evaluation stack, e.g. "NVIDIA B200 · stack v1.1" or "NVIDIA H100 SXM · H100_together"."""
    spec = environment_manifest(environment).spec
    stack = spec.software.libraries.get("evaluation_stack")
    parts = [spec.hardware.product, *([spec.provider] if spec.provider else []), *([f"stack {stack}"] if stack else [])]
    return " · ".join(parts)


def stack_text(environment: Stored) -> str:
    """The software an environment's manifest names, e.g. "v1.1" for SOL-ExecBench's evaluation stack."""
    software = environment_manifest(environment).spec.software
    parts = [
        version if name == "evaluation_stack" else f"{name} {version}"
        for name, version in sorted(software.libraries.items())
    ]
    if software.driver:
        parts.append(f"driver {software.driver}")
    return ", ".join(parts) or "unknown"


AnySelect = TypeVar("AnySelect", bound="Select[*tuple[Any, ...]]")


def with_references(stmt: AnySelect) -> AnySelect:
    """``stmt`` (a SELECT of ``Run``) loading each run's workload, implementation, environment and protocol."""
    return stmt.options(
        joinedload(Run.workload),
        joinedload(Run.implementation),
        joinedload(Run.environment),
        joinedload(Run.protocol),
    )


def run_views_query() -> Select[Run]:
    # The workload is left out of the join: the runs of a page share it, and the page has
    # already loaded it (with its large manifest), so the session hands it over without a query.
    return select(Run).options(
        joinedload(Run.implementation),
        joinedload(Run.environment),
        joinedload(Run.protocol),
        joinedload(Run.source),
        # A view reads its manifest's spec only, kept by digest (``_spec_facts``): the text,
        # 76 kB for each run of the largest sweep, is read where that misses.
        defer(Run.manifest_json),
    )


def to_view(run: Run) -> RunView:
    facts = _spec_facts(run)
    return RunView(
        name=run.name,
        digest=run.digest,
        comparison_key=run.comparison_key,
        status=run.status,
        evidence=run.evidence,
        latency_ns=run.latency_ns,
        primary_statistic=run.primary_statistic,
        sol_score=run.sol_score,
        share_of_bound=bound_share(run),
        metrics=dict(facts.metrics),
        cases_measured=facts.cases_measured,
        observed_at=run.observed_at,
        held_for_review=run.held_for_review,
        review_state=run.review_state,
        review_note=run.review_note,
        reviewed_at=run.reviewed_at,
        upstream_withdrawn=run.upstream_withdrawn,
        upstream_withdrawn_reason=run.upstream_withdrawn_reason,
        withdrawn_at=run.withdrawn_at,
        withdrawn_reason=run.withdrawn_reason,
        missing_since=run.missing_since,
        external_id=run.external_id,
        source_name=run.source.name if run.source else None,
        source_slug=run.source.slug if run.source else None,
        workload_slug=run.workload.name,
        workload_title=run.workload.title,
        implementation_name=run.implementation.name,
        implementation_title=implementation_identity(run.implementation),
        project=run.implementation.project,
        project_slug=run.implementation.project_slug,
        revision=run.implementation.revision,
        runtime=run.implementation.runtime,
        license=run.implementation.license,
        source_available=run.implementation.source_available,
        has_install_recipe=run.implementation.has_install_recipe,
        gpu_product=run.environment.gpu_product,
        gpu_slug=run.environment.gpu_slug,
        architecture=run.environment.architecture,
        environment_name=run.environment.name,
        environment_title=run.environment.title,
        environment_label=environment_label(run.environment),
        provider=environment_manifest(run.environment).spec.provider,
        stack=evaluation_stack(run.environment),
        software=stack_text(run.environment),
        protocol_name=run.protocol.name,
        protocol_title=run.protocol.title,
        harness_version=run.protocol.harness_version,
        uncertainty=run_uncertainty(run),
    )


def run_views(session: Session, *where: ColumnElement[bool]) -> list[RunView]:
    """The runs that ``where`` selects, fastest first (equal latencies by name)."""
    runs = session.scalars(run_views_query().where(*where).order_by(Run.latency_ns, Run.name))
    return [to_view(run) for run in runs.unique()]


def implementations_by_id(session: Session, ids: Collection[int]) -> dict[int, Implementation]:
    if not ids:
        return {}
    found = session.scalars(select(Implementation).where(Implementation.id.in_(sorted(ids))))
    return {implementation.id: implementation for implementation in found}
