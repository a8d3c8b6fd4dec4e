"""Reading values as upstreams publish them, the same way for every adapter."""

from __future__ import annotations

import re
from datetime import UTC, datetime
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


def first_error(error: ValidationError, whole: str = "body") -> str:
    """The first problem Pydantic found, as ``location: message`` (``whole`` when it is the value itself)."""
    item = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in item["loc"]) or whole
    return f"{location}: {item['msg']}"
