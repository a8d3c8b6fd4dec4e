"""What is being rendered now: a page's read model is complete before it renders, so no SQL may run
while a template (or a JSON twin) is written. ``tests/test_page_kinds.py`` holds every kind of page to
it, through ``rendering_page``."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from fastapi import Request
from fastapi.responses import Response

RENDERING: ContextVar[str | None] = ContextVar("kernelindex_rendering", default=None)


def rendering_page() -> str | None:
    """The template being rendered in this context, or None outside rendering."""
    return RENDERING.get()


def template_response(
    request: Request,
    name: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    """A form, admin or error page rendered from ``context``, under ``render_page``'s rule: no SQL while
    it renders."""
    token = RENDERING.set(name)
    try:
        response: Response = request.app.state.templates.TemplateResponse(
            request, name, context, status_code=status_code, headers=headers
        )
    finally:
        RENDERING.reset(token)
    return response
