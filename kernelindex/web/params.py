"""Parsing query parameters into values or a 400 that says what is wrong."""

from __future__ import annotations

from collections.abc import Iterable

from kernelindex.web.errors import BadRequest


def choice(name: str, value: str | None, allowed: Iterable[str], default: str) -> str:
    allowed = tuple(allowed)
    if value is None or value == "":
        return default
    if value not in allowed:
        raise BadRequest(f"{name} must be one of {', '.join(allowed)}; got {value!r}.")
    return value


def page_number(value: str | None, maximum: int = 10_000) -> int:
    if value is None or value == "":
        return 1
    if not value.isdigit() or not 1 <= int(value) <= maximum:
        raise BadRequest(f"page must be a whole number from 1 to {maximum}; got {value!r}.")
    return int(value)


def text(name: str, value: str | None, max_length: int = 100) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > max_length:
        raise BadRequest(f"{name} must be at most {max_length} characters.")
    if any(ord(ch) < 32 for ch in value):
        raise BadRequest(f"{name} must not contain control characters.")
    return value.strip()
