"""Lookups the catalogue's questions share: origin models by slug, sources and their reports."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelindex.db.tables import IngestionReport, Source, Workload
from kernelindex.slugs import slugify


def origin_models(session: Session) -> list[str]:
    return sorted({m for m in session.scalars(select(Workload.origin_model).distinct()) if m}, key=str.casefold)


def origin_model_spellings(session: Session, slug: str) -> list[str]:
    """The origin-model names that slug alike to ``slug``: one model, however its workloads spell it."""
    return [name for name in origin_models(session) if slugify(name) == slug]


def source_by_slug(session: Session, slug: str) -> Source | None:
    return session.scalar(select(Source).where(Source.slug == slug))


def ingestion_reports(session: Session, source_id: int, limit: int = 50) -> list[IngestionReport]:
    return list(
        session.scalars(
            select(IngestionReport)
            .where(IngestionReport.source_id == source_id)
            .order_by(IngestionReport.started_at.desc(), IngestionReport.id.desc())
            .limit(limit)
        )
    )
