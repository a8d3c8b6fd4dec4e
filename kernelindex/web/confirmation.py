"""Confirmation of reported figures by reruns under the source's settings: the section of a reported run's
page (and its JSON twin's ``confirmation``) and ``/discrepancies``, every contradicted figure, largest first.
Both read ``store.confirmation``."""

from __future__ import annotations

from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.store.confirmation import Confirmation, contradicted_figures
from kernelindex.web.deps import SessionDep
from kernelindex.web.format import latency, percent
from kernelindex.web.pages import PageContext, Part, page_route, render_page

router = APIRouter()


class CheckingRun(Part):
    name: str
    url: str


class ConfirmationPart(Part):
    """``{"state", "byRuns", "ratio", "bound", …}``: the reported figure against the reruns that check it."""

    state: str  # confirmed | contradicted | unchecked
    by_runs: list[str]
    ratio: float | None  # reported / rerun figure
    bound: float  # the largest departure still confirmed, as a fraction
    bound_rule: str
    reported: str
    reported_ns: int
    rerun: str | None
    rerun_ns: int | None
    checked_under: str | None
    protocol_url: str | None
    reason: str
    links: list[CheckingRun]


def confirmation_part(confirmation: Confirmation) -> ConfirmationPart:
    return ConfirmationPart(
        state=confirmation.state,
        by_runs=list(confirmation.by_runs),
        ratio=round(confirmation.ratio, 6) if confirmation.ratio is not None else None,
        bound=round(confirmation.bound, 6),
        bound_rule=confirmation.bound_rule,
        reported=latency(confirmation.reported_ns),
        reported_ns=confirmation.reported_ns,
        rerun=latency(confirmation.rerun_ns) if confirmation.rerun_ns is not None else None,
        rerun_ns=confirmation.rerun_ns,
        checked_under=confirmation.checked_under,
        protocol_url=urls.protocol(confirmation.checked_under) if confirmation.checked_under else None,
        reason=confirmation.reason,
        links=[CheckingRun(name=name, url=urls.run(name)) for name in confirmation.by_runs],
    )


class DiscrepancyRow(Part):
    run: str
    run_url: str
    workload: str
    workload_url: str
    gpu: str
    mode: str
    reported: str
    reported_ns: int
    rerun: str
    rerun_ns: int
    ratio: float
    departure: str
    checked_under: str
    by_runs: list[CheckingRun]


class DiscrepanciesPage(PageContext):
    template: ClassVar[str] = "discrepancies.html"

    bound: float
    bound_rule: str
    confirmed_count: int
    contradicted_count: int
    rows: list[DiscrepancyRow]


def _row(c: Confirmation) -> DiscrepancyRow:
    assert c.ratio is not None and c.rerun_ns is not None and c.checked_under is not None
    return DiscrepancyRow(
        run=c.run_name,
        run_url=urls.run(c.run_name),
        workload=c.workload,
        workload_url=urls.workload(c.workload),
        gpu=c.gpu,
        mode=c.mode,
        reported=latency(c.reported_ns),
        reported_ns=c.reported_ns,
        rerun=latency(c.rerun_ns),
        rerun_ns=c.rerun_ns,
        ratio=round(c.ratio, 6),
        departure=percent(c.departure * 100),
        checked_under=c.checked_under,
        by_runs=[CheckingRun(name=name, url=urls.run(name)) for name in c.by_runs],
    )


@page_route(router, "/discrepancies")
def discrepancies(request: Request, session: SessionDep) -> Response:
    contradicted, confirmed, bound = contradicted_figures(session)
    context = DiscrepanciesPage(
        bound=round(bound.bound, 6),
        bound_rule=bound.rule,
        confirmed_count=len(confirmed),
        contradicted_count=len(contradicted),
        rows=[_row(c) for c in contradicted],
    )
    return render_page(request, context)
