"""The ORM tables.

Each manifest-backed record keeps its current manifest (``manifest_json``, the JSON as
served, and ``digest``) plus the columns the pages filter and sort on; every digest a
record has ever had is in ``manifest_version``. Nothing is deleted: records missing
upstream get ``missing_since``, withdrawn runs get ``withdrawn_at``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from kernelindex.db.base import Base, StrEnumColumn
from kernelindex.manifests.types import AttestationType, EvidenceLevel, RunStatus

DIGEST = String(71)  # "sha256:" + 64 hex characters


class ManifestRecord:
    """Columns shared by every table whose rows are manifests."""

    name: Mapped[str] = mapped_column(String(200), unique=True)
    digest: Mapped[str] = mapped_column(DIGEST, index=True)
    manifest_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    if TYPE_CHECKING:
        # Every record table is also a Base, whose constructor takes the columns as keywords.
        def __init__(self, **kwargs: Any) -> None: ...


class Source(Base):
    __tablename__ = "source"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text)
    licence: Mapped[str] = mapped_column(Text)
    attribution: Mapped[str] = mapped_column(Text, default="", server_default="")
    gpu_naming: Mapped[str] = mapped_column(Text, default="", server_default="")
    # What the source calls one of its results ("submissions"), in sentences about its counts.
    run_noun: Mapped[str] = mapped_column(String(32), default="runs", server_default="runs")
    last_observed_at: Mapped[datetime | None]


# Indexes that migrations add on SQLite only: ``ix_workload_tags`` (the tag filter's choices read
# from the index; PostgreSQL has no btree for ``json`` and keeps the manifest out of the row
# anyway). ``migrations/env.py`` keeps autogenerate from proposing to drop them.
SQLITE_ONLY_INDEXES = frozenset({"ix_workload_tags"})
# Its PostgreSQL counterpart (migration 0019): the lists as text, an expression no model describes.
POSTGRESQL_ONLY_WORKLOAD_INDEXES = frozenset({"ix_workload_tags_text"})


class Workload(ManifestRecord, Base):
    __tablename__ = "workload"
    __table_args__ = (
        UniqueConstraint("source_id", "external_id"),
        # Home's collections and their busiest workloads, and each source's upstream counts,
        # read from the index alone: the rows themselves carry each workload's manifest.
        Index("ix_workload_source_id_collection_name", "source_id", "collection", "name"),
        Index("ix_workload_source_id_upstream_total", "source_id", "upstream_total", "upstream_total_observed_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"))
    external_id: Mapped[str] = mapped_column(String(64))
    collection: Mapped[str] = mapped_column(String(64), index=True)
    title: Mapped[str] = mapped_column(String(300))
    description: Mapped[str] = mapped_column(Text)
    origin_model: Mapped[str | None] = mapped_column(String(200), index=True)
    tags: Mapped[list[Any]]
    case_count: Mapped[int]
    # Geometric mean of the per-case speed-of-light bounds: the suite's SOL aggregate.
    sol_aggregate_ms: Mapped[float | None]
    # How many results the upstream itself counts for this workload, where it publishes a count,
    # and when that count was read: what the stored runs are a part of.
    upstream_total: Mapped[int | None]
    upstream_total_observed_at: Mapped[datetime | None]
    missing_since: Mapped[datetime | None]
    last_seen_at: Mapped[datetime | None]
    # Set on an older revision of a revised problem (``kernelindex.store.revisions``): the current
    # revision, which coverage counts and lists prefer. None on the current one and on the rest.
    # Not a foreign key: derived, and rewritten by the transactions that change the revisions.
    superseded_by_id: Mapped[int | None]

    source: Mapped[Source] = relationship()
    cases: Mapped[list[WorkloadCase]] = relationship(
        back_populates="workload", order_by="WorkloadCase.position", cascade="all, delete-orphan"
    )


class WorkloadCase(Base):
    __tablename__ = "workload_case"
    __table_args__ = (UniqueConstraint("workload_id", "position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workload.id", ondelete="CASCADE"))
    position: Mapped[int]
    axes: Mapped[dict[str, Any]]
    baseline_latency_ms: Mapped[float | None]
    sol_latency_ms: Mapped[float | None]

    workload: Mapped[Workload] = relationship(back_populates="cases")


class Implementation(ManifestRecord, Base):
    __tablename__ = "implementation"

    id: Mapped[int] = mapped_column(primary_key=True)
    project: Mapped[str] = mapped_column(String(300))
    project_slug: Mapped[str] = mapped_column(String(200), index=True)
    revision: Mapped[str] = mapped_column(String(300))
    runtime: Mapped[str | None] = mapped_column(String(300))
    license: Mapped[str | None] = mapped_column(String(300))
    source_available: Mapped[bool] = mapped_column(Boolean)
    has_install_recipe: Mapped[bool] = mapped_column(Boolean)


class Protocol(ManifestRecord, Base):
    __tablename__ = "protocol"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    family: Mapped[str] = mapped_column(String(64))
    harness_name: Mapped[str] = mapped_column(String(300))
    harness_version: Mapped[str] = mapped_column(String(300))


class Environment(ManifestRecord, Base):
    __tablename__ = "environment"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    gpu_slug: Mapped[str] = mapped_column(String(200), index=True)
    gpu_product: Mapped[str] = mapped_column(String(300))
    architecture: Mapped[str | None] = mapped_column(String(300))


class Run(ManifestRecord, Base):
    __tablename__ = "run"
    __table_args__ = (
        UniqueConstraint("source_id", "external_id"),
        # The leaderboard: one workload's comparison group, fastest first.
        Index("ix_run_leaderboard", "workload_id", "comparison_key", "latency_ns"),
        # Rank ranges and ties: a group's runs whose interval ends below, or starts below, a figure.
        Index("ix_run_spread_low", "workload_id", "comparison_key", "spread_low_ns"),
        Index("ix_run_spread_high", "workload_id", "comparison_key", "spread_high_ns"),
        # The API's run listings, in keyset order (latency or observation time, then name).
        Index("ix_run_latency_ns_name", "latency_ns", "name"),
        Index("ix_run_observed_at_name", "observed_at", "name"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int | None] = mapped_column(ForeignKey("source.id"))
    external_id: Mapped[str | None] = mapped_column(String(64))
    workload_id: Mapped[int] = mapped_column(ForeignKey("workload.id"))
    implementation_id: Mapped[int] = mapped_column(ForeignKey("implementation.id"), index=True)
    protocol_id: Mapped[int] = mapped_column(ForeignKey("protocol.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environment.id"), index=True)
    comparison_key: Mapped[str] = mapped_column(DIGEST)
    status: Mapped[RunStatus] = mapped_column(StrEnumColumn(RunStatus, 16))
    evidence: Mapped[EvidenceLevel] = mapped_column(StrEnumColumn(EvidenceLevel, 16))
    primary_statistic: Mapped[str] = mapped_column(String(32))
    latency_ns: Mapped[int] = mapped_column(BigInteger)
    sol_score: Mapped[float | None]
    observed_at: Mapped[datetime]
    # Disqualified by the source, with the source's reason: shown, never ranked.
    upstream_withdrawn: Mapped[bool] = mapped_column(Boolean)
    upstream_withdrawn_reason: Mapped[str | None] = mapped_column(Text)
    # Faster than the suite's speed-of-light bound: shown, not ranked until reviewed.
    # A maintainer's release clears it; a rejection keeps it. Either decision is kept
    # below and outlives a re-ingest, which never sets the flag again on a reviewed run.
    held_for_review: Mapped[bool] = mapped_column(Boolean)
    review_state: Mapped[str | None] = mapped_column(String(16))  # "released" or "rejected"
    reviewed_at: Mapped[datetime | None]
    review_note: Mapped[str | None] = mapped_column(Text)
    # Withdrawn by a maintainer of this registry.
    withdrawn_at: Mapped[datetime | None]
    withdrawn_reason: Mapped[str | None] = mapped_column(Text)
    missing_since: Mapped[datetime | None]
    last_seen_at: Mapped[datetime | None]
    # The interval around ``latency_ns`` and what it rests on (``kernelindex.uncertainty``); all
    # None where nothing bounds the figure (``store.spreads``).
    spread_kind: Mapped[str | None] = mapped_column(String(24))
    spread_low_ns: Mapped[int | None] = mapped_column(BigInteger)
    spread_high_ns: Mapped[int | None] = mapped_column(BigInteger)

    source: Mapped[Source | None] = relationship()
    workload: Mapped[Workload] = relationship()
    implementation: Mapped[Implementation] = relationship()
    protocol: Mapped[Protocol] = relationship()
    environment: Mapped[Environment] = relationship()


class ManifestVersion(Base):
    """Every digest any record has had, with the manifest as it then was."""

    __tablename__ = "manifest_version"
    __table_args__ = (UniqueConstraint("kind", "name", "digest"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200))
    digest: Mapped[str] = mapped_column(DIGEST, index=True)
    manifest_json: Mapped[str] = mapped_column(Text)
    recorded_at: Mapped[datetime]
    superseded_at: Mapped[datetime | None]


class User(Base):
    __tablename__ = "user_account"

    id: Mapped[int] = mapped_column(primary_key=True)
    handle: Mapped[str] = mapped_column(String(32), unique=True)
    password_hash: Mapped[str] = mapped_column(String(300))
    is_maintainer: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    # Signed session cookies carry it; bumping it (sign-out) ends every session of the account.
    session_generation: Mapped[int] = mapped_column(default=0, server_default="0")


class Attestation(ManifestRecord, Base):
    __tablename__ = "attestation"
    __table_args__ = (
        # The double-submit guard, held by the database so parallel posts cannot both pass it.
        UniqueConstraint("user_id", "run_id", "dedupe_key"),
        UniqueConstraint("user_id", "idempotency_key"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    type: Mapped[AttestationType] = mapped_column(StrEnumColumn(AttestationType, 32))
    state: Mapped[str] = mapped_column(String(16))
    hidden_reason: Mapped[str | None] = mapped_column(Text)
    # SHA-256 of the type and the whitespace-normalised body while the statement is within the
    # double-submit window; cleared (NULL) by the next identical statement after it.
    dedupe_key: Mapped[str | None] = mapped_column(String(64))
    # The API client's Idempotency-Key header: a retry with it is answered with this row.
    idempotency_key: Mapped[str | None] = mapped_column(String(200))


class Report(Base):
    __tablename__ = "report"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    reason: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), index=True)
    created_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None]
    resolved_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    resolution_note: Mapped[str | None] = mapped_column(Text)


class IngestionReport(Base):
    __tablename__ = "ingestion_report"

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"), index=True)
    origin: Mapped[str] = mapped_column(String(500))
    # "live" (the upstream itself), "snapshot" (a recorded copy), "bundled" (the recorded copy
    # shipped with the registry) or "import" (files handed to the registry, e.g. rerun bundles).
    read_from: Mapped[str] = mapped_column(String(16), default="live", server_default="live")
    # A snapshot's own record of when it was taken and what part of the upstream it holds.
    snapshot_observed_at: Mapped[datetime | None]
    snapshot_scope: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    counts: Mapped[dict[str, Any]]
    errors: Mapped[list[Any]]
    drift: Mapped[list[Any]]


class SourceFile(Base):
    """A file an ingest read whole and stored (its path in the upstream, its content digest): the
    next ingest skips a file whose digest it already holds, so re-reading an unchanged upstream
    writes nothing and takes seconds."""

    __tablename__ = "source_file"
    __table_args__ = (UniqueConstraint("source_id", "path"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"))
    path: Mapped[str] = mapped_column(String(500))
    sha256: Mapped[str] = mapped_column(String(64))
    rows: Mapped[int]
    ingested_at: Mapped[datetime]


class GpuDatasheet(Base):
    """A GPU's datasheet figures as one source publishes them (memory bandwidth and capacity,
    peak tensor rates per data type), with the source's own reference for them."""

    __tablename__ = "gpu_datasheet"
    __table_args__ = (UniqueConstraint("gpu_slug", "source_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    gpu_slug: Mapped[str] = mapped_column(String(200))
    source_id: Mapped[int] = mapped_column(ForeignKey("source.id"))
    figures: Mapped[dict[str, Any]]
    reference: Mapped[str | None] = mapped_column(Text)
    recorded_at: Mapped[datetime]


class PageVersion(Base):
    """A number per scope of what pages show (``workload:<id>``, ``run:<id>``, ``lists``, …): the
    sequence number of the last committed write that changed it; the ``seq`` row holds the last
    number given out. Cached pages are kept exact by these (``kernelindex.store.version``)."""

    __tablename__ = "page_version"

    scope: Mapped[str] = mapped_column(String(80), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, index=True)
