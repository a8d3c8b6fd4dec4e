"""Run permalinks."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse

from kernelindex.store import reads
from kernelindex.web.deps import SessionDep

router = APIRouter()


@router.get("/runs/{name}.json")
def run_json(name: str, session: SessionDep) -> JSONResponse:
    """The run's manifest with the four manifests it refers to, each with its digest."""
    permalink = reads.run_permalink(session, name)
    if permalink is None:
        raise HTTPException(status_code=404, detail=f"No run is named {name!r}.")
    return JSONResponse(permalink)
