"""URL slugs: lower case ASCII letters and digits joined by single dashes."""

from __future__ import annotations

import re


def slugify(text: str, fallback: str = "unknown") -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or fallback
