"""The figure gate: only finite, in-range numbers of the right type pass, whatever a source sends."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from kernelindex.db.tables import Run
from kernelindex.figure_gate import (
    MAX_LATENCY_NS,
    NAMED_REFUSALS,
    Reason,
    Refusals,
    Refused,
    count,
    latency_ns,
    positive,
    score,
)
from kernelindex.ingest.aiconfigurator import SYSTEMS
from kernelindex.ingest.aiconfigurator.rows import check
from kernelindex.ingest.aiconfigurator.tables import TableFile
from kernelindex.ingest.runner import run_ingest
from tests.upstream import FakeUpstream

# What JSON decodes to: scalars, and lists and objects of them.
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e308, -1e308, 5e-324, 0.0, -0.0, 3_600_000.0, 3_600_000.0000001, 1e-6, 9.99e-7])
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
)
# What a CSV cell holds: numerals of every shape, words, and anything else.
NUMERALS = st.builds(
    lambda sign, whole, fraction, exponent: f"{sign}{whole}{fraction}{exponent}",
    st.sampled_from(["", "-", "+"]),
    st.sampled_from(["0", "1", "12", "3600000", "99999999999"]),
    st.sampled_from(["", ".", ".5", ".000001", ".0000001"]),
    st.sampled_from(["", "e3", "e-9", "E+308", "e999999", "e-999999"]),
)
CSV_CELLS = (
    NUMERALS | st.sampled_from(["nan", "NaN", "inf", "-Infinity", "true", "", " 1 ", "0x10", "1_000"]) | st.text()
)
UNITS = st.sampled_from(["ns", "us", "ms", "s"])


def exact_ns(value: int | float | Decimal, unit: str) -> Decimal:
    factor = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[unit]
    return (Decimal(repr(value)) if isinstance(value, float) else Decimal(value)) * factor


@given(JSON_VALUES, UNITS)
def test_a_json_value_passes_as_a_latency_only_when_it_is_one(value: Any, unit: str) -> None:
    try:
        ns = latency_ns("latency", value, unit)
    except Refused as refused:
        assert refused.reason in set(Reason) and refused.sentence.startswith("latency is ")
        return
    assert isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    assert 1 <= exact_ns(value, unit) <= MAX_LATENCY_NS
    assert isinstance(ns, int) and 1 <= ns <= MAX_LATENCY_NS
    assert abs(ns - exact_ns(value, unit)) <= Decimal("0.5")


@given(CSV_CELLS, UNITS)
def test_a_csv_cell_passes_as_a_latency_only_when_it_is_a_numeral_in_range(cell: str, unit: str) -> None:
    try:
        ns = latency_ns("y", cell, unit, text=True)
    except Refused:
        return
    exact = Decimal(cell.strip()) * {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[unit]
    assert exact.is_finite() and 1 <= exact <= MAX_LATENCY_NS
    assert 1 <= ns <= MAX_LATENCY_NS


ARROW_SCALARS = st.one_of(
    st.tuples(st.booleans(), st.just(pa.bool_())),
    st.tuples(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.just(pa.int64())),
    st.tuples(st.floats(), st.just(pa.float64())),
    st.tuples(st.floats(width=32), st.just(pa.float32())),
    st.tuples(st.text(max_size=8), st.just(pa.string())),
    st.tuples(st.lists(st.floats(), max_size=2), st.just(pa.list_(pa.float64()))),
    st.tuples(st.none(), st.just(pa.float64())),
)


@given(ARROW_SCALARS)
def test_an_arrow_scalar_passes_only_as_a_finite_number_in_range(typed: tuple[Any, pa.DataType]) -> None:
    value = pa.scalar(typed[0], typed[1]).as_py()
    for check_one in (
        lambda: latency_ns("latency", value, "ms"),
        lambda: score("sol_score", value, 0, 1),
        lambda: count("fast_1_count", value),
        lambda: positive("avg_speedup", value),
    ):
        try:
            checked = check_one()
        except Refused:
            continue
        assert isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        assert isinstance(checked, int | float) and not isinstance(checked, bool) and math.isfinite(checked)


@given(st.lists(st.one_of(st.none(), st.floats(), st.sampled_from([1e308, -1.0, 0.0, 1e-7, 1e-6, 3.6e6])), max_size=6))
def test_a_parquet_latency_column_keeps_only_latencies_in_range(latencies: list[float | None]) -> None:
    system = SYSTEMS["h200_sxm"]
    file = TableFile(
        Path("x.parquet"), "h200_sxm/moe/vllm/0.1/moe_perf.parquet", "h200_sxm", "moe", "vllm", "0.1", "moe_perf"
    )
    table = pa.table(
        {
            "kernel_source": ["k"] * len(latencies),
            "num_tokens": list(range(len(latencies))),
            "latency": pa.array(latencies, pa.float64()),
        }
    )
    checked = check(file, system, table)
    kept = checked.table.column("latency").to_pylist()
    assert all(value is not None and 1e-6 <= value <= 3.6e6 for value in kept)
    accounted = len(kept) + sum(checked.skipped.values()) + checked.refused.total
    assert accounted == len(latencies)


@pytest.mark.parametrize(
    ("value", "reason", "sentence"),
    [
        (True, Reason.WRONG_TYPE, "x is true, a boolean, not a number"),
        (None, Reason.WRONG_TYPE, "x is missing"),
        ("1.5", Reason.WRONG_TYPE, "x is the text '1.5', not a number"),
        ({"a": 1}, Reason.WRONG_TYPE, "x is an object, not a number"),
        (float("nan"), Reason.NOT_FINITE, "x is nan, not a finite number"),
        (Decimal("Infinity"), Reason.NOT_FINITE, "x is Infinity, not a finite number"),
        (1e308, Reason.OUT_OF_RANGE, "x is 1e+308, outside 1 ns to 1 hour (in ms: 0.000001 to 3600000)"),
        (Decimal("1e999999"), Reason.OUT_OF_RANGE, "x is 1E+999999, outside 1 ns to 1 hour"),
        (0.0000004, Reason.OUT_OF_RANGE, "x is 4e-07, outside 1 ns to 1 hour"),
    ],
)
def test_each_refusal_is_one_sentence_with_its_reason(value: Any, reason: Reason, sentence: str) -> None:
    with pytest.raises(Refused) as refused:
        latency_ns("x", value, "ms")
    assert refused.value.reason is reason and refused.value.sentence.startswith(sentence)


@given(CSV_CELLS)
def test_a_csv_cell_passes_as_a_count_only_when_it_is_a_whole_number_in_range(cell: str) -> None:
    try:
        checked = count("n", cell, text=True)
    except Refused:
        return
    assert isinstance(checked, int) and 0 <= checked <= 2**53 - 1 and Decimal(cell.strip()) == checked


def test_a_unit_of_no_time_is_refused() -> None:
    with pytest.raises(Refused) as refused:
        latency_ns("x", 1.0, "fortnight")
    assert refused.value.reason is Reason.UNIT


def test_conversion_is_exact_at_the_bounds() -> None:
    assert latency_ns("x", 0.000001, "ms") == 1
    assert latency_ns("x", 3_600_000, "ms") == MAX_LATENCY_NS
    assert latency_ns("x", "68.9821", "us", text=True) == 68_982
    assert latency_ns("x", 1, "s") == 1_000_000_000


def test_refusals_name_the_first_and_count_the_rest() -> None:
    refusals = Refusals()
    for line in range(NAMED_REFUSALS + 5):
        refusals.admit(f"f.csv:{line}", lambda: latency_ns("y", True, "ms"))
    assert refusals.counts == {"wrong_type": NAMED_REFUSALS + 5}
    lines = refusals.lines()
    assert lines[0] == "f.csv:0: refused: y is true, a boolean, not a number"
    assert lines[-1] == "5 more figures refused" and len(lines) == NAMED_REFUSALS + 1


# --- Whatever a SOL-ExecBench upstream sends, the store holds only figures ---------------------

FIGURE_FIELDS = ("latency_ms", "sol_score", "avg_speedup", "fast_1_count", "fast_1_total")
FINITE_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e308, 0.2, 0.5, 16, 1.2, 2.5])
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(st.sampled_from(FIGURE_FIELDS), FINITE_JSON, max_size=3), min_size=1, max_size=3))
def test_the_store_holds_only_valid_figures_whatever_the_upstream_sends(db, changes: list[dict[str, Any]]) -> None:
    upstream = FakeUpstream(kernel_ids=(40,))
    for index, change in enumerate(changes):
        upstream.submission(40, index % len(upstream.submissions[40])).update(change)
    summary = run_ingest(upstream.adapter(), db.sessions, origin="fake upstream")
    assert summary.status in {"succeeded", "partial"}
    with db.sessions() as session:
        for run in session.scalars(select(Run)):
            assert 1 <= run.latency_ns <= MAX_LATENCY_NS
            assert run.sol_score is None or (0 <= run.sol_score <= 2 and (run.sol_score <= 1 or run.held_for_review))
            metrics = json.loads(run.manifest_json)["spec"]["sourceNative"]["metrics"]
            assert all(isinstance(metrics[name], int | float) for name in metrics)
            assert not any(isinstance(value, bool) or not math.isfinite(value) for value in metrics.values())
