"""Reading values as upstreams publish them, the same way for every adapter."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

# Control characters but TAB, LF and CR: PostgreSQL cannot store NUL, and the others have no
# place in a name or a description. Upstream text is checked before it reaches the store.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def holds_control_characters(value: Any) -> bool:
    """Whether any string in ``value`` (a decoded JSON value: keys too) holds a control character."""
    if isinstance(value, str):
        return _CONTROL.search(value) is not None
    if isinstance(value, dict):
        return any(holds_control_characters(key) or holds_control_characters(item) for key, item in value.items())
    if isinstance(value, list):
        return any(holds_control_characters(item) for item in value)
    return False


def utc(value: datetime) -> datetime:
    """A timestamp in UTC: one without a zone is read as UTC (sources say so, or write none);
    an explicit offset is converted."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# Below this many nanoseconds the float product ``value * 1e6`` is within 2.3e-4 of the exact
# product of the decimal text (each float is within 2**-53 of what it stands for, relatively, and
# the product adds as much), so it rounds the same way unless it lies within ``_TIE_MARGIN`` of a
# tie. Larger values, and those near a tie, take the exact decimal path.
_FAST_BELOW_NS = 1e12
_TIE_MARGIN = 1e-3


def ms_to_ns(value: float | Decimal) -> int:
    """Milliseconds as published (decimal text) to integer nanoseconds, without float drift: the
    decimal text times a million, rounded half to even. An ingest converts millions of figures,
    so a float whose product is far from a tie is converted without building a ``Decimal``."""
    if isinstance(value, float):
        product = value * 1_000_000
        nearest = round(product)
        if abs(product) < _FAST_BELOW_NS and abs(abs(product - nearest) - 0.5) > _TIE_MARGIN:
            return nearest
    exact = value if isinstance(value, Decimal) else Decimal(repr(value))
    return int((exact * 1_000_000).to_integral_value())


def first_error(error: ValidationError, whole: str = "body") -> str:
    """The first problem Pydantic found, as ``location: message`` (``whole`` when it is the value itself)."""
    item = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in item["loc"]) or whole
    return f"{location}: {item['msg']}"
