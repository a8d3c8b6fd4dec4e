"""How figures are written on the pages (PRODUCT.md §5): latency, ratios, scores, dates.

Every figure is written to ``SIGNIFICANT`` significant figures (fewer when the source gave
fewer), and a column of latencies shares one unit, chosen by ``latency_unit``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TypeVar

from pydantic import BaseModel

SIGNIFICANT = 3
# Each unit with its size in ns, small to large.
UNITS = (("ns", 1), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000))
UNIT_SIZES = dict(UNITS)


def significant(value: float, figures: int = SIGNIFICANT) -> str:
    """``value`` to ``figures`` significant figures in plain notation: 0.00440, 4.40, 44.0, 440, 4400."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = figures - 1 - math.floor(math.log10(abs(value)))
    rounded = round(value, decimals)
    # Rounding may carry into one more digit (9.996 → 10.0): count the decimals again.
    decimals = figures - 1 - math.floor(math.log10(abs(rounded)))
    return f"{rounded:.{max(decimals, 0)}f}"


def source_figures(value: float) -> int:
    """How many significant figures a source's number carries as written (0.0044 → 2), at most ``SIGNIFICANT``."""
    digits = Decimal(repr(value)).normalize().as_tuple().digits
    return max(1, min(SIGNIFICANT, len(digits)))


def latency_unit(values_ns: Iterable[float | None]) -> str:
    """The one unit a column of latencies is written in: the largest in which its median is at least 1."""
    present = [value for value in values_ns if value is not None and value > 0]
    if not present:
        return "µs"
    middle = statistics.median(present)
    return next((name for name, size in reversed(UNITS) if middle >= size), "ns")


def latency_in(ns: float, unit: str, figures: int = SIGNIFICANT) -> str:
    """``ns`` written in ``unit`` ("0.00440 ms"), to ``figures`` significant figures."""
    return f"{significant(ns / UNIT_SIZES[unit], figures)} {unit}"


def latency(ns: float) -> str:
    """A latency on its own, in the unit that suits it: "25.9 µs", "1.20 ms", "850 ns"."""
    # The unit of the rounded value, so that 999,999 ns reads "1.00 ms", not "1000 µs".
    return latency_in(ns, latency_unit([float(significant(ns))]))


def latency_column(values_ns: Sequence[float | None], figures: Sequence[int] | None = None) -> list[str]:
    """A column of latencies in one unit ("–" where a value is missing); ``figures`` caps each
    value's significant figures where the source gave fewer."""
    unit = latency_unit(values_ns)
    return [
        "–" if value is None else latency_in(value, unit, figures[index] if figures else SIGNIFICANT)
        for index, value in enumerate(values_ns)
    ]


Row = TypeVar("Row", bound=BaseModel)


def one_unit(rows: Sequence[Row], ns_field: str, text_field: str, unit: str | None = None) -> list[Row]:
    """``rows`` (page models) with ``text_field`` rewritten from ``ns_field`` so that the column
    they make shares one unit ("–" where a row has no latency): ``unit`` where the rows are a page
    of a longer column, whose unit they alone would not give."""
    values = [getattr(row, ns_field) for row in rows]
    unit = unit or latency_unit(values)
    texts = ["–" if value is None else latency_in(value, unit) for value in values]
    return [row.model_copy(update={text_field: text}) for row, text in zip(rows, texts, strict=True)]


def ratio(value: float) -> str:
    """Every ratio on the site: "1.00×", "12.3×", "0.512×"."""
    return f"{significant(value)}×"


def improvement_factor(value: float) -> str:
    """How many times faster a record is than the one it broke: "1.23×", or the percentage where
    the factor would read "1.00×" ("0.3%")."""
    text = ratio(value)
    return f"{significant((value - 1) * 100, 1)}%" if text == "1.00×" else text


def improvement(value: float) -> str:
    """ "1.23× faster", "0.3% faster"."""
    return f"{improvement_factor(value)} faster"


def percent_of_sol(sol_score: float | None) -> str:
    return "–" if sol_score is None else f"{sol_score * 100:.0f}%"


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
    "percent_of_sol": percent_of_sol,
    "date": date,
    "short_digest": short_digest,
}
