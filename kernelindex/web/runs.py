"""Run detail pages and their JSON twins (the run's permalink)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select

from kernelindex.db.tables import ManifestVersion
from kernelindex.store.runs import run_by_name, runs_in_group
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import NotFound
from kernelindex.web.pages import page_route, render_page
from kernelindex.web.run_page import build_run_page, parse_accessed

router = APIRouter()


@page_route(router, "/runs/{name}")
def run_detail(request: Request, name: str, session: SessionDep, accessed: str | None = None) -> Response:
    run = run_by_name(session, name)
    if run is None:
        raise NotFound(f"No run is named {name!r}. Run names look like sol-submission-16893.")
    versions = list(
        session.scalars(
            select(ManifestVersion)
            .where(ManifestVersion.kind == "BenchmarkRun", ManifestVersion.name == name)
            .order_by(ManifestVersion.recorded_at, ManifestVersion.id)
        )
    )
    base_url = str(request.base_url).rstrip("/")
    context = build_run_page(
        run, runs_in_group(session, run.comparison_key), versions, base_url, parse_accessed(accessed)
    )
    return render_page(request, context)
