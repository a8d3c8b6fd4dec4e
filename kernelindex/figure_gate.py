"""The one gate every figure from a source passes before it is stored.

Each function takes a value as the upstream published it, with the name the source gives it and
the unit the adapter declares, and returns it checked, or raises ``Refused`` with the reason
(``Reason``) and one plain sentence. A figure is:

- a real number: ``int``, ``float`` or ``Decimal``; never a boolean (Python's ``bool`` is an
  ``int``: ``true`` must not become 1), never ``None``, a list or an object. Text is read as a
  number only where the source's format is text (``text=True``: CSV cells); JSON and Parquet
  carry typed numbers, so a string there is the wrong type;
- finite (no NaN, no infinity, however written);
- within the bounds of its kind: a latency between 1 ns and one hour, a source score within the
  range the source defines, a count a non-negative integer, a speed-up or a size positive.

Bounds are checked before a unit is converted, so no conversion can overflow (a float
``1e308`` ms times a million, a ``Decimal`` ``1e999999`` times a million). The module imports
nothing of the app: adapters, tests and the store's writers may all use it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Literal, TypeVar

Number = int | float | Decimal
LatencyUnit = Literal["ns", "us", "ms", "s"]

NS_PER: dict[str, int] = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
MIN_LATENCY_NS = 1
MAX_LATENCY_NS = 3_600 * 1_000_000_000  # one hour
# The largest integer JSON carries exactly (2**53 - 1): what a count may be.
MAX_COUNT = 2**53 - 1
# A speed-up or a size beyond this is a broken figure, not a fast kernel or a big GPU.
MAX_RATIO = 1e9
# Text longer than this is no number a benchmark writes; it is refused before ``Decimal`` reads it.
_MAX_TEXT = 64
_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,9})?")


class Reason(StrEnum):
    """Why a figure was refused: the key it is counted under in the ingest report."""

    WRONG_TYPE = "wrong_type"
    NOT_FINITE = "not_finite"
    OUT_OF_RANGE = "out_of_range"
    UNIT = "unit"
    # Not a figure's fault but its identity's: one upstream id listed twice in one ingest with
    # other figures or under another workload, or listed under a workload other than its own.
    DUPLICATE_ID = "duplicate_id"


class Refused(ValueError):
    """A figure the registry will not store: ``reason`` and a sentence naming the field and value."""

    def __init__(self, reason: Reason, sentence: str):
        super().__init__(sentence)
        self.reason = reason
        self.sentence = sentence


def shown(value: object) -> str:
    """The value as a reader should see it in a sentence, cut short if long."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, str):
        text = repr(value if len(value) <= 40 else value[:40] + "…")
    elif isinstance(value, dict | list | tuple):
        text = "an object" if isinstance(value, dict) else "a list"
    else:
        text = str(value)
        text = text if len(text) <= 40 else text[:40] + "…"
    return text


def number(name: str, value: object, *, text: bool = False) -> Number:
    """``value`` as a finite real number, or ``Refused`` (wrong type, not finite).

    With ``text`` (a CSV cell) a decimal numeral is read as an exact ``Decimal``; without it
    only a typed number passes."""
    if isinstance(value, bool):
        raise Refused(Reason.WRONG_TYPE, f"{name} is {shown(value)}, a boolean, not a number")
    if isinstance(value, str) and text:
        cell = value.strip()
        if cell.lower().lstrip("+-") in {"nan", "inf", "infinity", "snan"}:
            raise Refused(Reason.NOT_FINITE, f"{name} is {shown(value)}, not a finite number")
        if len(cell) > _MAX_TEXT or not _NUMBER_TEXT.fullmatch(cell):
            raise Refused(Reason.WRONG_TYPE, f"{name} is {shown(value)}, not a number")
        try:
            return Decimal(cell)
        except InvalidOperation:  # pragma: no cover - the pattern admits only numerals
            raise Refused(Reason.WRONG_TYPE, f"{name} is {shown(value)}, not a number") from None
    if isinstance(value, str):
        raise Refused(Reason.WRONG_TYPE, f"{name} is the text {shown(value)}, not a number")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Refused(Reason.NOT_FINITE, f"{name} is {shown(value)}, not a finite number")
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise Refused(Reason.NOT_FINITE, f"{name} is {shown(value)}, not a finite number")
        return value
    if isinstance(value, int):
        return value
    kind = "missing" if value is None else f"{shown(value)}, not a number"
    raise Refused(Reason.WRONG_TYPE, f"{name} is {kind}")


def _within(name: str, value: Number, low: Number, high: Number, what: str, *, low_open: bool = False) -> None:
    # A float stands for its decimal text (as ``scaled`` reads it): 1e-06 ms is 1 ns, though the
    # binary float is a hair below. Compared exactly only near a bound: Decimal costs.
    exact = value
    if isinstance(value, float) and not (2 * float(low) < value < float(high) / 2):
        exact = Decimal(repr(value))
    below = exact <= low if low_open else exact < low
    if below or exact > high:
        raise Refused(Reason.OUT_OF_RANGE, f"{name} is {shown(value)}, outside {what}")


def latency_ns(name: str, value: object, unit: str, *, text: bool = False) -> int:
    """A latency published in ``unit`` (ns, us, ms, s) as integer nanoseconds, between 1 ns and one
    hour; the conversion is exact (decimal, rounded half to even) and made only once the value is
    known to be in range."""
    factor = NS_PER.get(unit)
    if factor is None:
        raise Refused(Reason.UNIT, f"{name} is in {shown(unit)}, not a unit of time the registry reads")
    checked = number(name, value, text=text)
    # In the published unit, exactly: Decimal(1) / 10**k is exact for every factor here.
    low, high = Decimal(MIN_LATENCY_NS) / factor, Decimal(MAX_LATENCY_NS) / factor
    _within(name, checked, low, high, f"1 ns to 1 hour (in {unit}: {low} to {high})")
    result = scaled(checked, factor)
    # Rounding cannot leave the range (its ends are whole nanoseconds), but say so where it counts.
    assert MIN_LATENCY_NS <= result <= MAX_LATENCY_NS
    return result


def score(
    name: str, value: object, low: float, high: float, *, held_above: float | None = None, text: bool = False
) -> float:
    """A source-native score within ``[low, high]``: the range its source defines, stretched to the
    values kept but held for review above ``held_above`` (a score past the speed-of-light bound)."""
    checked = number(name, value, text=text)
    held = f", and up to {high:g} held for review" if held_above is not None else ""
    stated = high if held_above is None else held_above
    _within(name, checked, low, high, f"the range stored ({low:g} to {stated:g}{held})")
    return float(checked)


def bounded(name: str, value: object, low: float, high: float, *, text: bool = False) -> float:
    """A figure of another kind (a throughput, an error ratio) within ``[low, high]``."""
    checked = number(name, value, text=text)
    _within(name, checked, low, high, f"{low:g} to {high:g}")
    return float(checked)


def count(name: str, value: object, *, text: bool = False) -> int:
    """A count: a non-negative integer (a whole float such as ``16.0`` is refused: the type is wrong)."""
    checked = number(name, value, text=text)
    # In range first: ``int(Decimal("1e999999"))`` would build a million-digit number.
    _within(name, checked, 0, MAX_COUNT, f"0 to {MAX_COUNT}")
    if isinstance(checked, Decimal) and checked == checked.to_integral_value() and "." not in str(value):
        checked = int(checked)
    if not isinstance(checked, int):
        raise Refused(Reason.WRONG_TYPE, f"{name} is {shown(value)}, not a whole number")
    return checked


def positive(name: str, value: object, *, text: bool = False, high: float = MAX_RATIO) -> float:
    """A speed-up, a size or another ratio: positive and finite, at most ``high``."""
    checked = number(name, value, text=text)
    _within(name, checked, 0, high, f"a positive figure up to {high:g}", low_open=True)
    return float(checked)


def spread(name: str, value: object, unit: str, *, text: bool = False) -> Number:
    """A spread of latencies (a standard deviation) in ``unit``: zero up to one hour."""
    factor = NS_PER.get(unit)
    if factor is None:
        raise Refused(Reason.UNIT, f"{name} is in {shown(unit)}, not a unit of time the registry reads")
    checked = number(name, value, text=text)
    high = Decimal(MAX_LATENCY_NS) / factor
    _within(name, checked, 0, high, f"0 to 1 hour (in {unit}: 0 to {high})")
    return checked


# Below this many nanoseconds the float product ``value * factor`` is within 2.3e-4 of the exact
# product of the decimal text (each float is within 2**-53 of what it stands for, relatively, and
# the product adds as much), so it rounds the same way unless it lies within ``_TIE_MARGIN`` of a
# tie. Larger values, and those near a tie, take the exact decimal path.
_FAST_BELOW_NS = 1e12
_TIE_MARGIN = 1e-3


def scaled(value: Number, factor: int) -> int:
    """``value`` times ``factor`` as an integer, without float drift: the decimal text of a float
    times the factor, rounded half to even. An ingest converts millions of figures, so a float
    whose product is far from a tie is converted without building a ``Decimal``. Callers bound
    ``value`` first (``latency_ns``): the product of an unbounded one may overflow."""
    if isinstance(value, float):
        product = value * factor
        nearest = round(product)
        if abs(product) < _FAST_BELOW_NS and abs(abs(product - nearest) - 0.5) > _TIE_MARGIN:
            return nearest
    exact = value if isinstance(value, Decimal) else Decimal(repr(value))
    return int((exact * factor).to_integral_value())


def ms_to_ns(value: float | Decimal) -> int:
    """Milliseconds as published (decimal text) to integer nanoseconds (``scaled`` by a million).
    For a figure still unchecked, use ``latency_ns``."""
    return scaled(value, 1_000_000)


# A unit with thousands of bad rows is named this many times in the report, then counted.
NAMED_REFUSALS = 20

Checked = TypeVar("Checked")


@dataclass
class Refusals:
    """The figures an adapter refused in one unit (or while listing its units): counted by reason,
    the first ``NAMED_REFUSALS`` named by where they stood (kernel id, file:line, table row)."""

    counts: Counter[str] = field(default_factory=Counter)
    sentences: list[str] = field(default_factory=list)

    def add(self, where: str, refused: Refused, rows: int = 1) -> None:
        """Count ``rows`` refused for one reason (a column of a table may refuse many at once)."""
        self.counts[refused.reason] += rows
        if len(self.sentences) < NAMED_REFUSALS:
            self.sentences.append(f"{where}: refused: {refused.sentence}")

    def admit(self, where: str, check: Callable[[], Checked]) -> Checked | None:
        """``check()``'s result, or ``None`` with its refusal counted and named at ``where``."""
        try:
            return check()
        except Refused as refused:
            self.add(where, refused)
            return None

    def lines(self) -> list[str]:
        """The named refusals, and how many more were refused without a line of their own."""
        more = self.total - len(self.sentences)
        return [*self.sentences, *([f"{more} more figures refused"] if more > 0 else [])]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def update(self, other: Refusals) -> None:
        self.counts.update(other.counts)
        room = NAMED_REFUSALS - len(self.sentences)
        self.sentences += other.sentences[: max(room, 0)]
