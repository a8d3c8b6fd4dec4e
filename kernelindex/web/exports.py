"""Whole-catalogue answers: the JSON Lines export, robots.txt and the sitemap (PRODUCT.md §6)."""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from xml.sax.saxutils import escape

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from starlette.exceptions import HTTPException

from kernelindex.store import export as store
from kernelindex.web.deps import SessionDep
from kernelindex.web.errors import NotFound
from kernelindex.web.feeds import rfc3339
from kernelindex.web.pages import cached_response, not_modified, public_url

router = APIRouter()

EXPORT_PATH = "/exports/catalog.jsonl.gz"
EXPORT_CACHE = "public, max-age=300, stale-while-revalidate=3600"
SITEMAP_CACHE = "public, max-age=3600, stale-while-revalidate=86400"
# The sitemap protocol's limit of URLs per file; beyond it /sitemap.xml is an index.
SITEMAP_LIMIT = 50_000
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
ROBOTS_DISALLOW = (
    # Unbounded combinations of query strings, each one a database search or comparison.
    "/search",
    "/compare",
    # The JSON API and the bulk export are for programs; the pages carry the same facts.
    "/api/",
    "/exports/",
    # Private pages.
    "/account",
    "/admin",
)


def _export(request: Request, session: SessionDep) -> store.CatalogueExport:
    try:
        return store.catalogue_export(session, request.app.state.settings.export_dir)
    except store.CatalogueChanging:
        # 503 with Retry-After: the export is only ever served whole and consistent.
        raise HTTPException(
            status_code=503,
            detail="The catalogue is being updated (an ingest is writing); try the export again in a minute.",
            headers={"Retry-After": "60"},
        ) from None


def _etag(export: store.CatalogueExport) -> str:
    return f'"{export.sha256}"'


@router.api_route(EXPORT_PATH, methods=["GET", "HEAD"], include_in_schema=False)
def catalogue_export(request: Request, session: SessionDep) -> Response:
    """The whole catalogue as gzip-compressed JSON Lines, with its sha256 in the headers."""
    export = _export(request, session)
    headers = {
        "ETag": _etag(export),
        "Cache-Control": EXPORT_CACHE,
        # RFC 9530's digest of the bytes served, and the same in hex for simple tools.
        "Repr-Digest": f"sha-256=:{base64.b64encode(bytes.fromhex(export.sha256)).decode()}:",
        "X-Checksum-Sha256": export.sha256,
        "Link": f'<{EXPORT_PATH}.sha256>; rel="describedby"; type="text/plain"',
    }
    if not_modified(request, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    return FileResponse(
        export.path,
        media_type="application/gzip",
        filename=store.EXPORT_NAME,
        headers=headers,
        stat_result=os.stat(export.path),
    )


@router.api_route(f"{EXPORT_PATH}.sha256", methods=["GET", "HEAD"], include_in_schema=False)
def catalogue_export_sha256(request: Request, session: SessionDep) -> Response:
    """``sha256sum`` format: check a download with ``sha256sum -c catalog.jsonl.gz.sha256``."""
    export = _export(request, session)
    body = store.sha256_line(export.sha256).encode()
    return cached_response(request, body, "text/plain; charset=utf-8", cache_control=EXPORT_CACHE)


def _base_url(request: Request) -> str:
    return public_url(request)


@router.get("/robots.txt", include_in_schema=False)
def robots(request: Request) -> Response:
    lines = ["User-agent: *", *(f"Disallow: {path}" for path in ROBOTS_DISALLOW), "Allow: /", ""]
    lines.append(f"Sitemap: {_base_url(request)}/sitemap.xml")
    body = ("\n".join(lines) + "\n").encode()
    return cached_response(request, body, "text/plain; charset=utf-8", cache_control=SITEMAP_CACHE)


def _urlset(base: str, urls: Sequence[store.SitemapUrl]) -> bytes:
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n', f'<urlset xmlns="{SITEMAP_NS}">\n']
    for url in urls:
        lastmod = f"<lastmod>{rfc3339(url.lastmod)}</lastmod>" if url.lastmod else ""
        parts.append(f"<url><loc>{escape(base + url.path)}</loc>{lastmod}</url>\n")
    parts.append("</urlset>\n")
    return "".join(parts).encode()


def _sitemap_response(request: Request, body: bytes) -> Response:
    return cached_response(request, body, "application/xml", cache_control=SITEMAP_CACHE)


@router.get("/sitemap.xml", include_in_schema=False)
def sitemap(request: Request, session: SessionDep) -> Response:
    """Every page worth indexing; a sitemap index of ``/sitemaps/{n}.xml`` past ``SITEMAP_LIMIT`` URLs."""
    base = _base_url(request)
    size = store.sitemap_size(session)
    if size <= SITEMAP_LIMIT:
        return _sitemap_response(request, _urlset(base, store.sitemap_urls(session, 0, SITEMAP_LIMIT)))
    count = -(-size // SITEMAP_LIMIT)
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n', f'<sitemapindex xmlns="{SITEMAP_NS}">\n']
    parts += [f"<sitemap><loc>{escape(base)}/sitemaps/{n}.xml</loc></sitemap>\n" for n in range(1, count + 1)]
    parts.append("</sitemapindex>\n")
    return _sitemap_response(request, "".join(parts).encode())


@router.get("/sitemaps/{part}.xml", include_in_schema=False)
def sitemap_part(request: Request, session: SessionDep, part: str) -> Response:
    count = max(1, -(-store.sitemap_size(session) // SITEMAP_LIMIT))
    if not (part.isascii() and part.isdigit()) or not 1 <= int(part) <= count:
        raise NotFound(f"There is no sitemap part {part!r}; parts are numbered 1 to {count}.")
    urls = store.sitemap_urls(session, (int(part) - 1) * SITEMAP_LIMIT, SITEMAP_LIMIT)
    return _sitemap_response(request, _urlset(_base_url(request), urls))
