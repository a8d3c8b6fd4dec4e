"""How figures are written on the pages (PRODUCT.md §5): latency, ratios, scores, dates."""

from __future__ import annotations

import json
from datetime import datetime


def latency(ns: int) -> str:
    """µs below a millisecond, ms from there; at most four significant digits."""
    us = ns / 1000
    if us >= 1000:
        ms = us / 1000
        return f"{ms:.1f} ms" if ms >= 100 else f"{ms:.2f} ms"
    return f"{us:.1f} µs" if us >= 10 else f"{us:.2f} µs"


def ratio(value: float) -> str:
    return f"{value:.2f}×"


def percent_of_sol(sol_score: float | None) -> str:
    return "–" if sol_score is None else f"{sol_score * 100:.0f}%"


def date(value: datetime | None) -> str:
    return "–" if value is None else value.strftime("%Y-%m-%d")


def short_digest(digest: str) -> str:
    return digest[: len("sha256:") + 12] + "…"


def pretty_json(value: object) -> str:
    """Indented JSON in the manifest's own key order, non-ASCII kept (Jinja escapes it for HTML)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


FILTERS = {
    "pretty_json": pretty_json,
    "latency": latency,
    "ratio": ratio,
    "percent_of_sol": percent_of_sol,
    "date": date,
    "short_digest": short_digest,
}
