"""Rendering a page: one typed context, two representations (HTML and its JSON twin).

Every page is declared with ``page_route``, which registers ``PATH`` and ``PATH.json``
(``/index.json`` for ``/``). The handler builds one ``PageContext``; ``render_page``
turns it into HTML through a template, or into JSON by dumping the same object, so
the two cannot drift apart. Both carry a strong ETag (a conditional GET answers 304)
and a ``Link`` header announcing the JSON twin.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from sqlalchemy.exc import SQLAlchemyError

from kernelindex import urls
from kernelindex.accounts.csrf import uses_token
from kernelindex.store.sources import source_credits
from kernelindex.web.rendering import RENDERING
from kernelindex.web.session_cookie import SIGNED_IN_KEY

PAGE_CACHE = "public, max-age=60, stale-while-revalidate=600"
PRIVATE_CACHE = "private, no-cache"


class PageContext(BaseModel):
    """Base of every page's context: the template contract and the JSON twin's schema."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)
    template: ClassVar[str]


class Part(BaseModel):
    """Base of every piece of a page context (a row, a chart, a section): camelCase in the JSON twin."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


def json_twin_path(path: str) -> str:
    return urls.json_twin(path)


def query_suffix(request: Request) -> str:
    """``?`` and the request's parameters, parsed and encoded again (or nothing): never the raw
    query string, whose ``<``, ``>``, ``;`` or quotes would break out of a header or an attribute."""
    items = request.query_params.multi_items()
    return f"?{urlencode(items)}" if items else ""


def canonical_url(public_url: str, request: Request) -> str:
    """The page's address on the public origin, whatever Host the request named."""
    return urls.absolute(public_url, request.url.path + query_suffix(request))


def public_url(request: Request) -> str:
    """The canonical origin every absolute URL starts with (``KERNELINDEX_PUBLIC_URL``), never the request's Host."""
    origin: str = request.app.state.settings.public_url
    return origin


def wants_json(request: Request) -> bool:
    return request.url.path.endswith(".json")


def etag_for(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def not_modified(request: Request, etag: str) -> bool:
    header = request.headers.get("if-none-match")
    if not header:
        return False
    return header.strip() == "*" or etag in [tag.strip().removeprefix("W/") for tag in header.split(",")]


def cached_response(
    request: Request,
    body: bytes,
    media_type: str,
    headers: dict[str, str] | None = None,
    cache_control: str = PAGE_CACHE,
    status_code: int = 200,
) -> Response:
    """A response with an ETag and Cache-Control, or a bare 304 when the client has it."""
    etag = etag_for(body)
    headers = {**(headers or {}), "ETag": etag, "Cache-Control": cache_control}
    if status_code == 200 and not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    return Response(body, status_code=status_code, media_type=media_type, headers=headers)


def dump_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def render_page(request: Request, context: PageContext, status_code: int = 200) -> Response:
    """The page as HTML, or as its JSON twin if the path ends in ``.json``."""
    html_path = request.url.path.removesuffix(".json")
    if html_path == "/index":
        html_path = "/"
    twin = json_twin_path(html_path)
    query = query_suffix(request)
    headers = {"Link": f'<{twin}{query}>; rel="alternate"; type="application/json"'}
    if wants_json(request):
        token = RENDERING.set(f"{context.template} (JSON twin)")
        try:
            body = dump_json(context.model_dump(mode="json", by_alias=True))
        finally:
            RENDERING.reset(token)
        return cached_response(request, body, "application/json", headers, status_code=status_code)
    template = request.app.state.templates.get_template(context.template)
    credits = _credits(request)
    token = RENDERING.set(context.template)
    try:
        html = template.render(
            request=request, page=context, json_twin=twin + query, url_for=request.url_for, credits=credits
        )
    finally:
        RENDERING.reset(token)
    # A page that carries this visitor's own (a CSRF token in a form, the signed-in handle) is
    # theirs alone: no shared cache may keep it, and the browser must revalidate. A signed-out
    # visitor's page without a form is everyone's.
    session = request.scope.get("session")
    personal = uses_token(request) or bool(session and SIGNED_IN_KEY in session)
    cache = PRIVATE_CACHE if personal else PAGE_CACHE
    headers["Vary"] = "Cookie"
    return cached_response(request, html.encode(), "text/html; charset=utf-8", headers, cache, status_code)


def _credits(request: Request) -> list[tuple[str, str]]:
    """The sources' attribution lines for the footer; none when the store cannot be read (an
    error page must still render)."""
    try:
        with request.app.state.sessions() as session:
            return source_credits(session)
    except SQLAlchemyError:
        return []


def page_route(router: APIRouter, path: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a page handler at ``path`` and at its JSON twin."""

    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        twin = json_twin_path(path)
        router.add_api_route(twin, handler, methods=["GET"], include_in_schema=False, name=f"{handler.__name__}_json")
        router.add_api_route(path, handler, methods=["GET"], include_in_schema=False, name=handler.__name__, **kwargs)
        return handler

    return register
