"""Citations as files (PRODUCT.md §8): ``/runs/{name}/cite.{fmt}`` and ``/workloads/{slug}/cite.{fmt}``.

``fmt`` is one of ``bib``, ``ris``, ``csl.json`` and ``txt``. A run's citation is the one its page
shows under "Cite this record". A leaderboard is cited *as of a date* (``?as_of=YYYY-MM-DD``,
default today, UTC): its permalink is the live ``/workloads/{slug}``, so the note pins down what
stood there at the end of that day, the workload manifest's digest and the #1 of the default
comparison group, by name and digest, so that a reader can reconstruct it from the records.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.citations import FORMATS, RENDERERS, CitableRecord
from kernelindex.store.leaderboards import Leaderboard, leaderboard, workload_by_slug
from kernelindex.store.run_queries import find_run
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.pages import cached_response, public_url
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


def end_of_day(day: date) -> datetime:
    """The first moment after ``day`` (UTC): a leaderboard "as of" a day holds what was observed before it."""
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)


def leaderboard_citable(board: Leaderboard, base_url: str, as_of: date, accessed: date) -> CitableRecord:
    """The citation of ``/workloads/{slug}`` from its leaderboard as it stood at the end of ``as_of`` (UTC).

    The group and its #1 are those the leaderboard opened on that day (``Leaderboard.default_key``
    and its current record), so the citation names what the page would have shown first.
    """
    workload = board.workload
    group = board.group(board.default_key)
    first = group.record if group else None
    where = f"As of the end of {as_of.isoformat()} (UTC)"
    if group is None or first is None:
        standing = f"{where}, no eligible run of this workload had been observed."
    else:
        environment = f"{first.gpu_product}, stack {first.stack}" if first.stack else first.gpu_product
        standing = (
            f"{where}, the #1 of the default comparison group ({environment}; comparison key {group.key}), "
            f"among {group.eligible_count} eligible runs observed by then, was {first.name} ({first.digest}), "
            f"{first.latency_ns} ns {first.primary_statistic}, by {first.project}."
        )
        if group.tied_with_best:
            # A cited #1 the noise cannot tell from the next says so (/figures#rank-range).
            tied = group.tied_with_best
            standing += (
                f" It is tied with {tied} other run{'' if tied == 1 else 's'}: their intervals overlap its own, "
                "so it is not distinct from #2 beyond the noise."
            )
    source = next((s for s in board.sources if s.id == workload.source_id), None)
    external_id = workload.external_id
    if source is not None and source.slug == "sol-execbench":
        external_id = f"kernel {external_id}"
    return CitableRecord(
        key=f"{workload.name}-as-of-{as_of.isoformat()}",
        title=f"{workload.title} leaderboard, as of {as_of.isoformat()}",
        author="KernelIndex",
        source=source.name if source else "KernelIndex",
        external_id=external_id,
        permalink=urls.absolute(base_url, urls.workload(workload.name)),
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
    run = find_run(session, name)
    if run is None:
        raise NotFound(f"No run is named {name!r}. Run names look like sol-submission-16893.")
    permalink = urls.absolute(public_url(request), urls.run(run.name))
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
    workload = workload_by_slug(session, slug)
    if workload is None:
        raise NotFound(f"No workload has the slug {slug!r}. Slugs look like l1-040-conv2d-residual-block.")
    board = leaderboard(session, workload, before=end_of_day(as_of_day))
    record = leaderboard_citable(board, public_url(request), as_of_day, accessed_on)
    return citation_response(request, record, fmt)
