"""Immutable manifests by digest, and the JSON Schema of each kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from kernelindex import urls
from kernelindex.manifests import KINDS, is_digest, json_schema
from kernelindex.store.manifests import manifest_by_digest, manifest_document, run_manifest
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import BadRequest, NotFound
from kernelindex.web.pages import PageContext, cached_response, dump_json, page_route, render_page

router = APIRouter()
IMMUTABLE = "public, max-age=31536000, immutable"
# A moderated manifest may be shown again: caches keep its 410 only briefly.
MODERATED = "public, max-age=60"
RECORD_PAGES: dict[str, Callable[[str], str]] = {"BenchmarkRun": urls.run, "WorkloadSuite": urls.workload}


class ManifestPage(PageContext):
    template: ClassVar[str] = "manifest.html"

    digest: str
    kind: str
    name: str
    current: bool
    record_url: str | None
    manifest: dict[str, Any]


@page_route(router, "/manifests/{digest}")
def manifest(request: Request, digest: str, session: SessionDep) -> Response:
    if not is_digest(digest):
        raise BadRequest("A manifest digest looks like sha256: followed by 64 lower-case hex characters.")
    version = manifest_by_digest(session, digest)
    if version is None:
        raise NotFound(f"No manifest has the digest {digest}.")
    if version.hidden_reason is not None:
        raise HTTPException(
            status_code=410,
            detail=f"This {version.kind} was hidden by a maintainer ({version.hidden_reason}); "
            "its manifest is no longer published.",
            headers={"Cache-Control": MODERATED},
        )
    page = RECORD_PAGES.get(version.kind)
    record_url = page(version.name) if page else None
    if version.kind == "BenchmarkRun" and run_manifest(version).spec.case_index is not None:
        # A case-scoped run of a controlled rerun is shown on its suite run's page.
        record_url = urls.run(version.name.rpartition("-case-")[0]) + "#rerun"
    context = ManifestPage(
        digest=digest,
        kind=version.kind,
        name=version.name,
        current=version.current,
        record_url=record_url,
        manifest=manifest_document(version),
    )
    if request.url.path.endswith(".json"):
        # The JSON form is the manifest itself, as digested: what a mirror stores.
        return cached_response(request, dump_json(context.manifest), "application/json", cache_control=IMMUTABLE)
    response = render_page(request, context)
    response.headers["Cache-Control"] = IMMUTABLE
    return response


@router.get("/schemas/v1alpha1/{kind}.json", include_in_schema=False)
def schema(request: Request, kind: str) -> Response:
    if kind not in KINDS:
        raise NotFound(f"No manifest kind is called {kind!r}. Kinds: {', '.join(KINDS)}.")
    return cached_response(request, dump_json(json_schema(kind)), "application/schema+json")
