"""Milliseconds to nanoseconds: the float fast path gives exactly what the decimal text gives."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kernelindex.figure_gate import ms_to_ns


def exact(value: float) -> int:
    return int((Decimal(repr(value)) * 1_000_000).to_integral_value())


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False))
@example(0.0000005)  # 0.5 ns: a tie, to even (0)
@example(0.0000015)  # 1.5 ns: a tie, to even (2)
@example(0.0001255)  # 125.5 ns in the text, 125.49999999999999 as a float product: 126
@example(0.0002485)  # 248.5 ns in the text, 248.50000000000003 as a float product: 248
@example(1e6 - 1e-7)
@example(2.675)
def test_every_float_converts_as_its_decimal_text(value: float) -> None:
    assert ms_to_ns(value) == exact(value)


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["5", "4999", "5001", "25"]))
def test_values_near_a_tie_convert_as_their_decimal_text(whole: int, fraction: str) -> None:
    value = float(f"{whole}.{fraction}e-6")
    assert ms_to_ns(value) == exact(value)


def test_decimals_and_large_values_take_the_exact_path() -> None:
    assert ms_to_ns(Decimal("0.0000025")) == 2
    assert ms_to_ns(Decimal("1.2345675")) == 1_234_568
    assert ms_to_ns(5e9) == 5_000_000_000_000_000


def test_values_without_a_number_are_refused() -> None:
    with pytest.raises(ValueError):
        ms_to_ns(float("nan"))
    with pytest.raises(OverflowError):
        ms_to_ns(float("inf"))
