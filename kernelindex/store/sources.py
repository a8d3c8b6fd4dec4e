"""Sources for the API: the listing by slug, and one with its newest ingestion reports."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import IngestionReport, Run, Source, Workload
from kernelindex.store.catalog import ingestion_reports, source_by_slug
from kernelindex.store.keyset import SLUG_ORDER, Position, keyset_page
from kernelindex.store.schemas import REPORTS_SHOWN, IngestionReportItem, SourceDetail, SourceItem


def _source_items(session: Session, sources: Sequence[Source]) -> list[SourceItem]:
    ids = [s.id for s in sources]
    workloads = dict(
        session.execute(
            select(Workload.source_id, func.count()).where(Workload.source_id.in_(ids)).group_by(Workload.source_id)
        ).all()
    )
    runs = dict(
        session.execute(select(Run.source_id, func.count()).where(Run.source_id.in_(ids)).group_by(Run.source_id)).all()
    )
    return [
        SourceItem(
            slug=s.slug,
            name=s.name,
            website=s.url,
            last_observed_at=s.last_observed_at,
            workloads=workloads.get(s.id, 0),
            runs=runs.get(s.id, 0),
            url=urls.source(s.slug),
            api_url=urls.api_source(s.slug),
        )
        for s in sources
    ]


def list_sources(session: Session, after: Position | None, limit: int) -> tuple[list[SourceItem], Position | None]:
    rows, position = keyset_page(session, select(Source), SLUG_ORDER, {"slug": Source.slug}, after, limit)
    return _source_items(session, [row[0] for row in rows]), position


def source_detail(session: Session, slug: str) -> SourceDetail | None:
    source = source_by_slug(session, slug)
    if source is None:
        return None
    report_count = session.scalar(select(func.count()).where(IngestionReport.source_id == source.id)) or 0
    return SourceDetail(
        **_source_items(session, [source])[0].model_dump(),
        description=source.description,
        licence=source.licence,
        report_count=report_count,
        reports=[
            IngestionReportItem.model_validate(report, from_attributes=True)
            for report in ingestion_reports(session, source.id, limit=REPORTS_SHOWN)
        ],
    )
