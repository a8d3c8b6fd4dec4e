"""Parsing query parameters into values or a 400 that says what is wrong."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import FormData

from kernelindex.accounts.text import control_character_problem
from kernelindex.web.errors import BadRequest

# The form fields written over several lines (a ``<textarea>``): the only ones that may hold line breaks.
MULTILINE_FIELDS = frozenset({"body", "report_body", "document"})


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


def index(name: str, value: str | None, maximum: int = 1_000_000) -> int | None:
    """A 0-based position (``?case=3``), or ``None`` when the parameter is absent or empty."""
    if value is None or value == "":
        return None
    # ASCII digits only: "²" is a digit to ``str.isdigit`` but not to ``int``.
    if not (value.isascii() and value.isdigit()) or len(value) > len(str(maximum)) or int(value) > maximum:
        raise BadRequest(f"{name} must be a whole number from 0 to {maximum} (a 0-based index); got {value[:40]!r}.")
    return int(value)


def text(name: str, value: str | None, max_length: int = 100) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > max_length:
        raise BadRequest(f"{name} must be at most {max_length} characters.")
    if problem := control_character_problem(value):
        raise BadRequest(f"{name} {problem}.")
    return value.strip()


def form_text(form: FormData) -> FormData:
    """``form`` if every field's text can be taken (``control_character_problem``), else a 400 naming
    the field. Every form is checked here, whatever its handler reads, before the handler runs."""
    for name, value in form.multi_items():
        if isinstance(value, str) and (problem := control_character_problem(value, name in MULTILINE_FIELDS)):
            raise BadRequest(f"The field {name[:40]!r} {problem}.")
    return form
