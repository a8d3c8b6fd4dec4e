"""Rendering what people write: Markdown through a sanitiser, or plain text, always inert."""

from __future__ import annotations

import html

import nh3
from markdown_it import MarkdownIt

# Raw HTML in the source is not passed through at all; the sanitiser is the second wall.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False})
ALLOWED_TAGS = {"p", "br", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li", "a", "h3", "h4"}
ALLOWED_ATTRIBUTES = {"a": {"href"}}


def render_body(body: str, body_format: str) -> str:
    """Safe HTML for an attestation body."""
    if body_format == "markdown":
        return nh3.clean(
            _markdown.render(body),
            tags=ALLOWED_TAGS,
            attributes=ALLOWED_ATTRIBUTES,
            url_schemes={"https", "http"},
            link_rel="nofollow noopener ugc",
        )
    return "".join(f"<p>{html.escape(paragraph)}</p>" for paragraph in body.split("\n\n") if paragraph.strip())
