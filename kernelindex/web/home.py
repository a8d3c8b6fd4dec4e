"""The home page and its JSON twin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from kernelindex.store import reads
from kernelindex.web.deps import SessionDep

router = APIRouter()


def home_context(session: Any) -> dict[str, Any]:
    summaries = reads.workloads_with_best_run(session)
    return {
        "collections": reads.by_collection(summaries),
        "workload_count": len(summaries),
        "run_count": sum(s.run_count for s in summaries),
        "sources": reads.sources(session),
    }


@router.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep) -> HTMLResponse:
    context = home_context(session)
    return request.app.state.templates.TemplateResponse(
        request,
        "home.html",
        context,
        headers={"Link": '</index.json>; rel="alternate"; type="application/json"'},
    )


@router.get("/index.json")
def home_json(session: SessionDep) -> JSONResponse:
    context = home_context(session)
    return JSONResponse(
        {
            "workloadCount": context["workload_count"],
            "eligibleRunCount": context["run_count"],
            "collections": [
                {
                    "name": name,
                    "workloads": [
                        {
                            "slug": w.slug,
                            "title": w.title,
                            "cases": w.case_count,
                            "eligibleRuns": w.run_count,
                            "best": None
                            if w.best is None
                            else {
                                "run": w.best.name,
                                "latencyNs": w.best.latency_ns,
                                "primaryStatistic": w.best.primary_statistic,
                                "solScore": w.best.sol_score,
                                "implementation": w.best.implementation,
                                "environment": w.best.environment,
                                "evidence": w.best.evidence,
                            },
                        }
                        for w in workloads
                    ],
                }
                for name, workloads in context["collections"]
            ],
            "sources": [
                {
                    "slug": s.slug,
                    "name": s.name,
                    "lastObservedAt": s.last_observed_at.isoformat().replace("+00:00", "Z")
                    if s.last_observed_at
                    else None,
                }
                for s in context["sources"]
            ],
        }
    )
