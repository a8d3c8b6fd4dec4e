"""Citations as files (PRODUCT.md §8): ``/runs/{name}/cite.{fmt}`` and ``/workloads/{slug}/cite.{fmt}``.

``fmt`` is one of ``bib``, ``ris``, ``csl.json`` and ``txt``. A run's citation is the one its page
shows under "Cite this record". A leaderboard is cited *as of a date* (``?as_of=YYYY-MM-DD``,
default today, UTC): its permalink is the live ``/workloads/{slug}``, so the note pins down what
stood there at the end of that day, the workload manifest's digest and the #1 of the default
comparison group, by name and digest, so that a reader can reconstruct it from the records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select

from kernelindex.citations import FORMATS, RENDERERS, CitableRecord
from kernelindex.db.tables import Source, Workload
from kernelindex.store.runs import RunView, run_by_name, runs_of_workload
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.leaderboard import build_leaderboard
from kernelindex.web.pages import cached_response
from kernelindex.web.run_page import parse_accessed, parse_day, run_citable

router = APIRouter()


def citation_format(value: str) -> str:
    """``value`` if it names a citation format; otherwise a 404 that lists the formats."""
    if value not in FORMATS:
        listed = ", ".join(f"cite.{key}" for key in FORMATS)
        raise NotFound(f"There is no citation format {value[:40]!r}; the formats are {listed}.")
    return value


def citation_response(request: Request, record: CitableRecord, fmt: str) -> Response:
    """``record`` rendered as ``fmt``, shown inline with a filename to save it under, with an ETag."""
    filename = re.sub(r"[^A-Za-z0-9._-]", "-", f"{record.key}.{fmt}")
    body = RENDERERS[fmt](record).encode()
    return cached_response(request, body, FORMATS[fmt], {"Content-Disposition": f'inline; filename="{filename}"'})


def runs_as_of(views: Sequence[RunView], day: date) -> list[RunView]:
    """The runs a leaderboard held at the end of ``day`` (UTC): those observed by then, with a
    maintainer's withdrawal made after that day not yet applied. Disqualification by the source and
    holds for review carry no date, so they apply as recorded now."""
    cutoff = datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)
    held = []
    for view in views:
        if view.observed_at >= cutoff:
            continue
        if view.withdrawn_at is not None and view.withdrawn_at >= cutoff:
            view = replace(view, withdrawn_at=None, withdrawn_reason=None)
        held.append(view)
    return held


def leaderboard_citable(
    workload: Workload,
    views: Sequence[RunView],
    sources: Sequence[Source],
    base_url: str,
    as_of: date,
    accessed: date,
) -> CitableRecord:
    """The citation of ``/workloads/{slug}`` as it stood at the end of ``as_of`` (UTC).

    The default group and its #1 are chosen by the leaderboard's own rules
    (``build_leaderboard``) applied to ``runs_as_of(views, as_of)``, so the citation names what the
    page would have shown first that day.
    """
    held = runs_as_of(views, as_of)
    page = build_leaderboard(workload, held, sources, None, None, None, None)
    group, first = page.selected_group, (page.ranked[0] if page.ranked else None)
    where = f"As of the end of {as_of.isoformat()} (UTC)"
    if group is None or first is None:
        standing = f"{where}, no eligible run of this workload had been observed."
    else:
        digest = next(view.digest for view in held if view.name == first.name)
        environment = f"{group.gpu}, stack {group.stack}" if group.stack else group.gpu
        standing = (
            f"{where}, the #1 of the default comparison group ({environment}; comparison key {group.key}), "
            f"among {group.eligible_count} eligible runs observed by then, was {first.name} ({digest}), "
            f"{first.latency_ns} ns {first.statistic}, by {first.implementation}."
        )
    source = sources[0] if sources else None
    external_id = workload.external_id
    if source is not None and source.slug == "sol-execbench":
        external_id = f"kernel {external_id}"
    return CitableRecord(
        key=f"{workload.name}-as-of-{as_of.isoformat()}",
        title=f"{workload.title} leaderboard, as of {as_of.isoformat()}",
        author="KernelIndex",
        source=source.name if source else "KernelIndex",
        external_id=external_id,
        permalink=f"{base_url}/workloads/{workload.name}",
        digest=workload.digest,
        issued=as_of,
        accessed=accessed,
        note=f"{standing} Eligibility is as KernelIndex records it now; withdrawals after that day are not applied.",
        digest_label="Workload manifest digest",
    )


@router.get("/runs/{name}/cite.{fmt}", include_in_schema=False)
def cite_run(request: Request, name: str, fmt: str, session: SessionDep, accessed: str | None = None) -> Response:
    fmt = citation_format(fmt)
    accessed_on = parse_accessed(accessed)
    run = run_by_name(session, name)
    if run is None:
        raise NotFound(f"No run is named {name!r}. Run names look like sol-submission-16893.")
    permalink = f"{str(request.base_url).rstrip('/')}/runs/{run.name}"
    return citation_response(request, run_citable(run, permalink, accessed_on), fmt)


@router.get("/workloads/{slug}/cite.{fmt}", include_in_schema=False)
def cite_leaderboard(
    request: Request,
    slug: str,
    fmt: str,
    session: SessionDep,
    as_of: str | None = None,
    accessed: str | None = None,
) -> Response:
    fmt = citation_format(fmt)
    today = datetime.now(UTC).date()
    as_of_day = parse_day("as_of", as_of) or today
    if as_of_day > today:
        raise BadRequest(
            f"as_of {as_of_day.isoformat()} is after today ({today.isoformat()}, UTC); "
            "a leaderboard can be cited only as it has stood."
        )
    accessed_on = parse_accessed(accessed)
    workload = session.scalar(select(Workload).where(Workload.name == slug))
    if workload is None:
        raise NotFound(f"No workload has the slug {slug!r}. Slugs look like l1-040-conv2d-residual-block.")
    sources = list(session.scalars(select(Source).where(Source.id == workload.source_id)))
    record = leaderboard_citable(
        workload,
        runs_of_workload(session, workload.id),
        sources,
        str(request.base_url).rstrip("/"),
        as_of_day,
        accessed_on,
    )
    return citation_response(request, record, fmt)
