"""The fast writer of canonical JSON gives RFC 8785's bytes, on random values and real manifests."""

from __future__ import annotations

from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex.manifests.digest import canonical_json

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    # Integer-valued floats, at and around the edge of exact integers.
    | st.integers(min_value=-(2**54), max_value=2**54).map(float)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def library(value: Any) -> bytes | None:
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError):
        return None


def ours(value: Any) -> bytes | None:
    try:
        return canonical_json(value)
    except ValueError:
        return None


@settings(max_examples=600, deadline=None)
@given(values)
def test_random_values_canonicalise_as_the_library_does(value: Any) -> None:
    assert ours(value) == library(value)


def test_the_edges_of_the_fast_path() -> None:
    for value in [
        1e-4, 9.99e-5, 1e16, 1e15 + 0.5, 1.0, -0.0, 0.1, 5e-324, 1e21, 123456789.125,
        2**53 - 1, 2**53, -(2**53), "\x00\x1f\x7f\u2028\"\\", {"\U0001f600": 1, "\uffff": 2},
        {"b": [1, {"a": None}], "a": True}, "\ud800",
        {"power": 440.5, "power_limit": 1000.0}, [1000.0, 1e-05],
        [float(2**53 - 1), float(2**53), float(2**60), -0.0, 1e20],
        {"a": [1.0, {"b": 2.0}], "c": "1.0"}, [1.0, "\ud800"], [1.0, float("nan")],
    ]:  # fmt: skip
        assert ours(value) == library(value), value
