"""Sources: each with its figures, licence and attribution, and one with its ingestion reports.

``/sources``, ``/sources/{slug}``, their JSON twins and ``/api/v1/sources[/{slug}]`` all
read this module. A source's runs, GPUs and implementation projects are those of the runs
it published (controlled reruns are a source of their own); its workloads and collections
are those it defines.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Environment, Implementation, IngestionReport, Run, Source, Workload
from kernelindex.store.catalog import ingestion_reports, source_by_slug
from kernelindex.store.completeness import source_completeness
from kernelindex.store.keyset import SLUG_ORDER, Position, keyset_page
from kernelindex.store.schemas import (
    REPORTS_SHOWN,
    CollectionCount,
    IngestionItem,
    IngestionReportItem,
    SourceDetail,
    SourceItem,
)
from kernelindex.store.workloads import source_facets

# How the ingest runner marks a warning among a report's errors (``kernelindex.ingest.runner``).
WARNING_PREFIX = "warning: "


def _last_ingests(session: Session, ids: Sequence[int]) -> dict[int, IngestionReport]:
    """Source id → its newest ingestion report (by start, then id), in one statement."""
    newest = func.row_number().over(
        partition_by=IngestionReport.source_id,
        order_by=(IngestionReport.started_at.desc(), IngestionReport.id.desc()),
    )
    ranked = select(IngestionReport.id, newest.label("position")).where(IngestionReport.source_id.in_(ids)).subquery()
    reports = session.scalars(
        select(IngestionReport).where(IngestionReport.id.in_(select(ranked.c.id).where(ranked.c.position == 1)))
    )
    return {report.source_id: report for report in reports}


def _source_items(session: Session, sources: Sequence[Source]) -> list[SourceItem]:
    ids = [s.id for s in sources]
    workloads = dict(
        session.execute(
            select(Workload.source_id, func.count()).where(Workload.source_id.in_(ids)).group_by(Workload.source_id)
        ).all()
    )
    superseded = dict(
        session.execute(
            select(Workload.source_id, func.count())
            .where(Workload.source_id.in_(ids), Workload.superseded_by_id.is_not(None))
            .group_by(Workload.source_id)
        ).all()
    )
    measured = {
        row.source_id: row
        for row in session.execute(
            select(
                Run.source_id,
                func.count(Run.id).label("runs"),
                func.count(func.distinct(Run.workload_id)).label("workloads"),
                func.count(func.distinct(Environment.gpu_slug)).label("gpus"),
                func.count(func.distinct(Implementation.project_slug)).label("implementations"),
            )
            .join(Environment, Run.environment_id == Environment.id)
            .join(Implementation, Run.implementation_id == Implementation.id)
            .where(Run.source_id.in_(ids))
            .group_by(Run.source_id)
        )
    }
    last = _last_ingests(session, ids)
    completeness = source_completeness(session, sources)
    items = []
    for s in sources:
        runs = measured.get(s.id)
        report = last.get(s.id)
        items.append(
            SourceItem(
                slug=s.slug,
                name=s.name,
                website=s.url,
                licence=s.licence,
                attribution=s.attribution,
                last_observed_at=s.last_observed_at,
                workloads=workloads.get(s.id, 0),
                superseded_workloads=superseded.get(s.id, 0),
                workloads_measured=runs.workloads if runs else 0,
                runs=runs.runs if runs else 0,
                gpus=runs.gpus if runs else 0,
                implementations=runs.implementations if runs else 0,
                last_ingest=IngestionItem.model_validate(report, from_attributes=True) if report else None,
                completeness=completeness[s.id],
                url=urls.source(s.slug),
                api_url=urls.api_source(s.slug),
            )
        )
    return items


def list_sources(session: Session, after: Position | None, limit: int) -> tuple[list[SourceItem], Position | None]:
    """One page of sources by slug after a position (the API's cursor), and the next page's position."""
    rows, position = keyset_page(session, select(Source), SLUG_ORDER, {"slug": Source.slug}, after, limit)
    return _source_items(session, [row[0] for row in rows]), position


def every_source(session: Session) -> list[SourceItem]:
    """Every source by slug, with the figures ``list_sources`` gives: a handful, shown on one page."""
    return _source_items(session, list(session.scalars(select(Source).order_by(Source.slug))))


def source_detail(session: Session, slug: str) -> SourceDetail | None:
    source = source_by_slug(session, slug)
    if source is None:
        return None
    report_count = session.scalar(select(func.count()).where(IngestionReport.source_id == source.id)) or 0
    return SourceDetail(
        **_source_items(session, [source])[0].model_dump(),
        description=source.description,
        collections=[
            CollectionCount(
                name=collection.name,
                workloads=collection.count,
                url=urls.workloads(source=source.slug, collection=collection.name),
            )
            for facet in source_facets(session, source.id)
            for collection in facet.collections
        ],
        report_count=report_count,
        reports=[
            IngestionReportItem.model_validate(report, from_attributes=True)
            for report in ingestion_reports(session, source.id, limit=REPORTS_SHOWN)
        ],
    )


def errors_and_warnings(messages: Sequence[object]) -> tuple[list[str], list[str]]:
    """A report's messages split into errors and warnings (without their prefix), in order."""
    errors, warnings = [], []
    for message in map(str, messages):
        if message.startswith(WARNING_PREFIX):
            warnings.append(message.removeprefix(WARNING_PREFIX))
        else:
            errors.append(message)
    return errors, warnings


def source_credits(session: Session) -> list[tuple[str, str]]:
    """``(attribution, source page URL)`` of every source with workloads: the credit every page
    carries, since any page may show figures of any source."""
    rows = session.execute(
        select(Source.slug, Source.attribution)
        .where(Source.attribution != "", select(Workload.id).where(Workload.source_id == Source.id).exists())
        .order_by(Source.name)
    )
    return [(attribution, urls.source(slug)) for slug, attribution in rows]
