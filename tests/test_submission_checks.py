"""The submission checks as pure functions, over the example document and plain facts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kernelindex.manifests import parse_manifest
from kernelindex.submissions.checks import (
    CaseBound,
    Refusal,
    WorkloadFacts,
    check_bounds,
    check_cases,
    check_units,
    parse_submission,
)
from kernelindex.submissions.document import Submission, case_digest

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "example.json"
NOW = datetime(2026, 12, 7, tzinfo=UTC)


def document(change: Any = None) -> Submission:
    data = json.loads(EXAMPLE.read_text())
    if change is not None:
        change(data)
        data["digests"]["run"] = parse_manifest(data["run"]).digest
    return Submission.model_validate(data)


def facts() -> WorkloadFacts:
    data = json.loads(EXAMPLE.read_text())
    return WorkloadFacts(data["workload"]["slug"], data["workload"]["digest"], [c["caseDigest"] for c in data["cases"]])


def test_the_example_passes_the_pure_checks() -> None:
    parsed = parse_submission(EXAMPLE.read_bytes(), NOW)
    assert isinstance(parsed, Submission)
    assert check_cases(parsed, facts()) is None
    assert check_units(parsed) is None
    assert check_bounds(parsed, {}) is None


def test_a_case_digest_is_the_digest_of_its_axes_alone() -> None:
    assert case_digest({"b": 1, "a": 2}) == case_digest({"a": 2, "b": 1})
    assert case_digest({"a": 2}) != case_digest({"a": 3})
    assert case_digest({"a": 2}).startswith("sha256:")


def test_every_known_bound_is_checked_and_the_refusal_names_the_one_beaten() -> None:
    submitted = document()
    fast_case = submitted.run.spec.case_results[4]  # type: ignore[index]
    latency = fast_case["latencyNs"]["mean"]
    bounds = {4: [CaseBound(latency / 2, "published T_SOL"), CaseBound(latency + 1, "datasheet speed of light")]}
    refusal = check_bounds(submitted, bounds)
    assert isinstance(refusal, Refusal)
    assert (refusal.check, refusal.extra["bound"], refusal.extra["caseIndex"]) == (
        "below-bound",
        "datasheet speed of light",
        4,
    )
    assert check_bounds(submitted, {4: [CaseBound(latency, "equal is not below")]}) is None


def test_a_one_case_run_lists_that_case_alone() -> None:
    def one_case(data: dict[str, Any]) -> None:
        spec = data["run"]["spec"]
        spec["caseIndex"] = 5
        spec["caseResults"] = [spec["caseResults"][5]]
        spec["timing"]["latencyNs"]["mean"] = spec["caseResults"][0]["latencyNs"]["mean"]
        data["cases"] = [data["cases"][5]]

    assert check_cases(document(one_case), facts()) is None

    def another_case(data: dict[str, Any]) -> None:
        one_case(data)
        data["run"]["spec"]["caseIndex"] = 6

    refusal = check_cases(document(another_case), facts())
    assert refusal is not None and refusal.check == "case" and "case 6 alone" in refusal.detail


def test_a_suite_figure_outside_its_cases_is_a_unit_mistake() -> None:
    def in_milliseconds(data: dict[str, Any]) -> None:
        data["run"]["spec"]["timing"]["latencyNs"]["mean"] = 100_000_000

    refusal = check_units(document(in_milliseconds))
    assert refusal is not None and refusal.check == "unit" and "outside its cases' figures" in refusal.detail


@pytest.mark.parametrize(
    "raw",
    [b'{"\\u0000": 1}', '{"kind": "Sub\u0085mission"}'.encode(), b'{"kind": "\\u001b[31m"}'],
    ids=["NUL in a key", "C1 control", "escape"],
)
def test_control_characters_anywhere_are_schema_refusals(raw: bytes) -> None:
    refusal = parse_submission(raw, NOW)
    assert isinstance(refusal, Refusal) and refusal.check == "schema" and "control character" in refusal.detail


def test_a_run_observed_in_the_future_is_refused() -> None:
    refusal = parse_submission(EXAMPLE.read_bytes(), datetime(2026, 1, 1, tzinfo=UTC))
    assert isinstance(refusal, Refusal) and (refusal.check, refusal.status) == ("schema", 422)
