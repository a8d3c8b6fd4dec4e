"""How figures are written on the pages (PRODUCT.md §5): latency, ratios, scores, dates.

The kinds of figure and how each is written are ``kernelindex.figures``'s; this module adds what
the templates need (filters, digests, dates) and writes a column of page rows in one unit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel

from kernelindex.figures import (
    UNIT_SIZES,
    latency,
    latency_column,
    latency_in,
    latency_unit,
    percent,
    ratio,
    significant,
    source_figures,
    source_score,
)

# What the pages import from here, besides what is defined here: the figures' own writing.
__all__ = [
    "UNIT_SIZES",
    "latency",
    "latency_column",
    "latency_in",
    "latency_unit",
    "percent",
    "ratio",
    "significant",
    "source_figures",
    "source_score",
]

Row = TypeVar("Row", bound=BaseModel)


def one_unit(rows: Sequence[Row], ns_field: str, text_field: str, unit: str | None = None) -> list[Row]:
    """``rows`` (page models) with ``text_field`` rewritten from ``ns_field`` so that the column
    they make shares one unit ("–" where a row has no latency): ``unit`` where the rows are a page
    of a longer column, whose unit they alone would not give."""
    texts = latency_column([getattr(row, ns_field) for row in rows], unit=unit).texts
    return [row.model_copy(update={text_field: text}) for row, text in zip(rows, texts, strict=True)]


def improvement_factor(value: float) -> str:
    """How many times faster a record is than the one it broke: "1.23×", or the percentage where
    the factor would read "1.00×" ("0.3 %")."""
    text = ratio(value)
    return percent((value - 1) * 100) if text == "1.00×" else text


def improvement(value: float) -> str:
    """ "1.23× faster", "0.3 % faster"."""
    return f"{improvement_factor(value)} faster"


def score(value: float | None) -> str:
    """A source-native score in a table cell ("0.874"), "–" where the run has none."""
    return "–" if value is None else source_score(value)


def date(value: datetime | None) -> str:
    return "–" if value is None else value.strftime("%Y-%m-%d")


DIGEST_HEX_SHOWN = 12


def short_digest(digest: str) -> str:
    """A digest as every page shortens it: its first 12 hex characters and an ellipsis, after its
    algorithm's name where it has one ("sha256:3f2a…" and "3f2a…" alike keep 12 hex characters)."""
    algorithm, _, hex_part = digest.rpartition(":")
    prefix = f"{algorithm}:" if algorithm else ""
    if len(hex_part) <= DIGEST_HEX_SHOWN:
        return digest
    return f"{prefix}{hex_part[:DIGEST_HEX_SHOWN]}…"


def pretty_json(value: object) -> str:
    """Indented JSON in the manifest's own key order, non-ASCII kept (Jinja escapes it for HTML)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


FILTERS = {
    "pretty_json": pretty_json,
    "latency": latency,
    "ratio": ratio,
    "improvement": improvement,
    "score": score,
    "date": date,
    "short_digest": short_digest,
}
