"""Record changes: the ``/records`` page, its JSON twin, and the Atom feeds (PRODUCT.md §6)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.store import records
from kernelindex.store.records import RecordEntry
from kernelindex.web import params
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.feeds import group_label, improvement_text, records_feed, rfc3339
from kernelindex.web.format import improvement_factor, latency
from kernelindex.web.pages import PageContext, Part, cached_response, page_route, public_url, render_page

router = APIRouter()

PAGE_SIZE = 50
FEED_SIZE = 50
RUN_NAME_MAX = 200  # the length of Run.name
ATOM_TYPE = "application/atom+xml"
FEED_CACHE = "public, max-age=300, stale-while-revalidate=3600"
CATALOGUE_FEED_ID = "tag:kernelindex.dev,2026:records"


class RecordRow(Part):
    observed_at: datetime
    workload_slug: str
    workload_title: str
    workload_number: str
    workload_url: str
    workload_feed_url: str
    comparison_key: str
    gpu: str
    stack: str | None
    group: str
    environment: str
    protocol: str
    implementation: str
    run: str
    run_url: str
    latency_ns: int
    latency: str
    previous_run: str | None
    previous_run_url: str | None
    previous_latency_ns: int | None
    improvement: float | None
    improvement_ratio: str | None
    improvement_text: str


class RecordsPage(PageContext):
    """``/records``: the newest #1 changes across the catalogue, ``PAGE_SIZE`` a page."""

    template: ClassVar[str] = "records.html"

    records: list[RecordRow]
    before: datetime | None
    after: str | None  # the run the page continues after, at the moment ``before``
    next_before: datetime | None
    next_after: str | None  # with next_before, the cursor of the next page
    next_url: str | None
    first_url: str | None
    feed_url: str


def parse_before(value: str | None) -> datetime | None:
    """The ``before`` cursor: an ISO 8601 timestamp with a time zone; empty means the first page."""
    if value is None or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise BadRequest(
            f"before must be an ISO 8601 timestamp such as 2026-08-12T22:52:04Z; got {value[:64]!r}."
        ) from None
    if parsed.tzinfo is None:
        raise BadRequest(f"before must include a time zone (for example a trailing Z for UTC); got {value[:64]!r}.")
    return parsed


def workload_number(slug: str) -> str:
    """``l1-040`` of ``l1-040-conv2d-residual-block``: names repeat across collections, numbers don't."""
    match = re.match(r"^(.+?-\d+)(-|$)", slug)
    return match[1] if match else slug


def record_row(record: RecordEntry) -> RecordRow:
    return RecordRow(
        observed_at=record.observed_at,
        workload_slug=record.workload_slug,
        workload_title=record.workload_title,
        workload_number=workload_number(record.workload_slug),
        workload_url=urls.workload(record.workload_slug),
        workload_feed_url=urls.workload_feed(record.workload_slug),
        comparison_key=record.comparison_key,
        gpu=record.gpu,
        stack=record.stack,
        group=group_label(record),
        environment=record.environment_title,
        protocol=record.protocol_title,
        implementation=record.implementation,
        run=record.run_name,
        run_url=urls.run(record.run_name),
        latency_ns=record.latency_ns,
        latency=latency(record.latency_ns),
        previous_run=record.previous_run_name,
        previous_run_url=urls.run(record.previous_run_name) if record.previous_run_name else None,
        previous_latency_ns=record.previous_latency_ns,
        improvement=record.improvement,
        improvement_ratio=improvement_factor(record.improvement) if record.improvement is not None else None,
        improvement_text=improvement_text(record),
    )


def build_records_page(
    entries: list[RecordEntry], before: datetime | None, after: str | None, path: str
) -> RecordsPage:
    """The page from up to ``PAGE_SIZE + 1`` entries (the extra one says a next page exists)."""
    shown = entries[:PAGE_SIZE]
    more = len(entries) > PAGE_SIZE
    # The cursor is the last entry shown: its moment and, for the records that share it, its run.
    next_before = shown[-1].observed_at if more else None
    next_after = shown[-1].run_name if more else None
    return RecordsPage(
        records=[record_row(record) for record in shown],
        before=before,
        after=after,
        next_before=next_before,
        next_after=next_after,
        next_url=urls.records(before=rfc3339(next_before), after=next_after) if next_before else None,
        first_url=path if before is not None else None,
        feed_url=urls.records_feed(),
    )


@page_route(router, "/records")
def records_page(
    request: Request, session: SessionDep, before: str | None = None, after: str | None = None
) -> Response:
    cursor = parse_before(before)
    after_run = params.text("after", after, max_length=RUN_NAME_MAX)
    if after_run is not None and cursor is None:
        raise BadRequest("after (a run name) continues a page at the moment given by before: give both.")
    entries = records.catalogue_records(session, limit=PAGE_SIZE + 1, before=cursor, after=after_run)
    return render_page(request, build_records_page(entries, cursor, after_run, urls.records()))


def _base_url(request: Request) -> str:
    return public_url(request)


def _atom(request: Request, body: bytes) -> Response:
    return cached_response(request, body, ATOM_TYPE, cache_control=FEED_CACHE)


@router.get("/records.atom", include_in_schema=False)
def records_atom(request: Request, session: SessionDep) -> Response:
    body = records_feed(
        feed_id=CATALOGUE_FEED_ID,
        title="KernelIndex: new records",
        subtitle="Every time the fastest eligible run of a comparison group changed, across the catalogue.",
        records=records.catalogue_records(session, limit=FEED_SIZE),
        base_url=_base_url(request),
        self_path=urls.records_feed(),
        alternate_path=urls.records(),
    )
    return _atom(request, body)


@router.get("/workloads/{slug}/records.atom", include_in_schema=False)
def workload_records_atom(request: Request, session: SessionDep, slug: str) -> Response:
    workload = records.find_workload(session, slug)
    if workload is None:
        raise NotFound(f"No workload is named {slug!r}.")
    body = records_feed(
        feed_id=f"tag:kernelindex.dev,2026:workloads/{workload.slug}/records",
        title=f"KernelIndex: records for {workload.title}",
        subtitle=f"Every time the fastest eligible run of a comparison group of {workload.slug} changed.",
        records=records.workload_records(session, workload.id)[:FEED_SIZE],
        base_url=_base_url(request),
        self_path=urls.workload_feed(workload.slug),
        alternate_path=urls.workload(workload.slug),
        updated_if_empty=workload.updated_at,
    )
    return _atom(request, body)
