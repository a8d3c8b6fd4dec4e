"""The checks a submission passes before anything is stored, one pure function each.

Each returns ``None`` when the document passes, or a ``Refusal`` naming its check (the ``check``
member of the problem JSON the API answers), the HTTP status and a sentence a person can act on.
The store reads the facts they need (``WorkloadFacts``, the bounds, whether a digest is known) and
calls them in the order of ``CHECKS``; the first refusal is the answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from kernelindex import figures
from kernelindex.submissions.document import MAX_BYTES, MAX_CASES, Submission

# The checks, in the order they are made; each names itself in a refusal.
CHECKS = ("size", "schema", "digest", "workload", "case", "unit", "below-bound", "duplicate", "rate")
SUBMITTED_SOURCE = "submissions"
# No GPU kernel, launch included, takes less; a figure below it was written in another unit.
MIN_LATENCY_NS = 100
MAX_LATENCY_NS = 3600 * 10**9  # an hour
# Clocks differ: a run observed a little "in the future" is a clock, a day ahead is a mistake.
FUTURE_SLACK = timedelta(hours=1)
_SHOWN_PROBLEMS = 5


@dataclass(frozen=True)
class Refusal:
    """Why a submission is refused: the ``check`` it failed, the HTTP ``status`` and the ``detail``;
    ``extra`` adds members to the problem JSON (the bound a figure beat)."""

    check: str
    status: int
    detail: str
    extra: Mapping[str, Any] = field(default_factory=dict)


class SubmissionRefused(Exception):
    def __init__(self, refusal: Refusal):
        super().__init__(refusal.detail)
        self.refusal = refusal


@dataclass(frozen=True)
class WorkloadFacts:
    """What the checks read of the registry's workload: its slug, digest and each case's digest."""

    slug: str
    digest: str
    case_digests: Sequence[str]


@dataclass(frozen=True)
class CaseBound:
    """A lower bound on one case's latency and what it is ("SOL-ExecBench T_SOL")."""

    bound_ns: float
    name: str


# --- size and schema -----------------------------------------------------------------------


def check_size(raw: bytes) -> Refusal | None:
    if len(raw) > MAX_BYTES:
        return Refusal(
            "size",
            413,
            f"The submission is {len(raw):,} bytes; the limit is {MAX_BYTES:,}. Link large files as artifacts "
            "(a URL and its sha256) instead of sending them.",
        )
    return None


def parse_submission(raw: bytes, now: datetime) -> Submission | Refusal:
    """The document, validated; or the ``schema`` (or ``size``) refusal that says what is wrong with it."""
    if b"\x00" in raw:
        return _schema("The body contains a NUL byte; send the submission as UTF-8 JSON text.")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return _schema("The body is not UTF-8 text; send the submission as UTF-8 JSON.")
    except (ValueError, RecursionError) as exc:
        return _schema(f"The body is not JSON: {str(exc)[:200]}.")
    if not isinstance(data, dict):
        return _schema("A submission is one JSON object; see fixtures/submissions/example.json.")
    if (where := _control_character(data, "")) is not None:
        return _schema(f"{where} contains a control character (such as NUL); remove it and send it again.")
    try:
        document = Submission.model_validate(data)
    except ValidationError as exc:
        return _schema(f"The submission does not fit the schema: {_problems(exc)}.")
    results = document.run.spec.case_results or []
    if len(results) > MAX_CASES:
        return Refusal("size", 413, f"The run holds {len(results):,} case results; the limit is {MAX_CASES:,}.")
    return _run_rules(document, now)


def _schema(detail: str) -> Refusal:
    return Refusal("schema", 400, detail)


def _control_character(value: Any, path: str) -> str | None:
    """The path of the first string (or key) holding a control character (``_is_control``)."""
    if isinstance(value, str):
        return path or "the document" if any(_is_control(c) for c in value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if _control_character(key, "") is not None:
                return f"the key {where!r}"
            if (found := _control_character(item, where)) is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (found := _control_character(item, f"{path}[{index}]")) is not None:
                return found
    return None


def _is_control(character: str) -> bool:
    """C0 controls but tab and line breaks (NUL above all: PostgreSQL cannot store it), DEL and C1."""
    code = ord(character)
    return (code < 32 and character not in "\t\n\r") or 0x7F <= code <= 0x9F


def _problems(error: ValidationError) -> str:
    shown = []
    for item in error.errors(include_url=False)[:_SHOWN_PROBLEMS]:
        where = ".".join(str(part) for part in item["loc"])
        message = {"extra_forbidden": "unknown field", "missing": "required field is missing"}.get(
            item["type"], item["msg"].removeprefix("Value error, ")
        )
        shown.append(f"{where}: {message}" if where else message)
    more = error.error_count() - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _run_rules(document: Submission, now: datetime) -> Submission | Refusal:
    """What the schema cannot say: the run speaks for its submitter, not for a source, and is dated."""
    spec = document.run.spec
    if spec.source_native is not None and spec.source_native.source != SUBMITTED_SOURCE:
        return Refusal(
            "schema",
            422,
            f"run.spec.sourceNative names the source {spec.source_native.source!r}; a submitted run is reported "
            f"by its submitter: leave sourceNative out, or name the source {SUBMITTED_SOURCE!r}.",
        )
    if spec.observed_at > now + FUTURE_SLACK:
        return Refusal(
            "schema", 422, f"run.spec.observedAt is {spec.observed_at.isoformat()}, in the future; give when it ran."
        )
    return document


# --- digests ---------------------------------------------------------------------------------


def check_digests(document: Submission) -> Refusal | None:
    """Each manifest's declared digest is its content's, and the run names the manifests sent with it."""
    computed = {
        "run": document.run.digest,
        "implementation": document.implementation.digest,
        "environment": document.environment.digest,
        "protocol": document.protocol.digest,
    }
    declared = document.digests
    for role, digest in computed.items():
        if getattr(declared, role) != digest:
            return _digest(
                f"digests.{role} is {getattr(declared, role)}, but the {role} manifest sent digests to {digest} "
                "(sha256 of the RFC 8785 form of its apiVersion, kind and spec); send the manifest it was computed "
                "from, or compute it again (kernelindex verify does)."
            )
    spec = document.run.spec
    named = {
        "implementationDigest": (spec.implementation_digest, computed["implementation"], "implementation manifest"),
        "environmentDigest": (spec.environment_digest, computed["environment"], "environment manifest"),
        "protocolDigest": (spec.protocol_digest, computed["protocol"], "protocol manifest"),
        "workloadDigest": (spec.workload_digest, document.workload.digest, "workload (workload.digest)"),
    }
    for field_name, (given, expected, what) in named.items():
        if given != expected:
            return _digest(
                f"run.spec.{field_name} is {given}, but the {what} sent with it is {expected}; "
                "the run must name the records sent with it."
            )
    return None


def _digest(detail: str) -> Refusal:
    return Refusal("digest", 422, detail)


# --- the workload and its cases ----------------------------------------------------------------


def check_workload(document: Submission, workload: WorkloadFacts | None) -> Refusal | None:
    slug = document.workload.slug
    if workload is None:
        return Refusal(
            "workload",
            422,
            f"There is no workload {slug!r} in the registry; name one by its slug, as in /workloads/{{slug}}.",
        )
    if document.workload.digest != workload.digest:
        return Refusal(
            "workload",
            422,
            f"The workload {slug} is {workload.digest}, not {document.workload.digest} as the submission says: "
            "that is another workload's digest or an older revision's. Measure the workload as the registry "
            f"holds it now (/workloads/{slug}.json).",
        )
    return None


def check_cases(document: Submission, workload: WorkloadFacts) -> Refusal | None:
    """Every case named exists in the workload with that digest, and the run's per-case figures are
    for exactly those cases: every case of the suite for a suite run, its own for a one-case run."""
    count = len(workload.case_digests)
    listed: dict[int, str] = {}
    for case in document.cases:
        index = case.case_index
        if index >= count:
            return _case(f"cases names case {index}, but {workload.slug} has {count} cases (0 to {count - 1}).")
        if case.case_digest != workload.case_digests[index]:
            return _case(
                f"cases gives case {index} the digest {case.case_digest}, but case {index} of {workload.slug} is "
                f"{workload.case_digests[index]}: the figures would land on a case that was not measured. "
                'A case\'s digest is sha256 of the RFC 8785 form of {"axes": …}, its axes as the workload gives them.'
            )
        if index in listed:
            return _case(f"cases names case {index} twice.")
        listed[index] = case.case_digest
    spec = document.run.spec
    if spec.case_results is None:
        return _case("run.spec.caseResults is missing: a submission gives a figure for each case it measured.")
    measured = [result["caseIndex"] for result in spec.case_results]
    if len(set(measured)) != len(measured):
        return _case("run.spec.caseResults gives a case more than once.")
    if set(measured) != set(listed):
        return _case(
            f"run.spec.caseResults measures cases {_indices(measured)}, but cases lists {_indices(listed)}; "
            "list each measured case once, with its digest."
        )
    if spec.case_index is not None:
        if set(listed) != {spec.case_index}:
            return _case(f"The run measures case {spec.case_index} alone; cases and caseResults must hold it alone.")
    elif len(listed) != count:
        missing = sorted(set(range(count)) - set(listed))
        return _case(
            f"A suite run measures every case of {workload.slug}; cases {_indices(missing)} are missing. "
            "Measure them, or submit one run per case (run.spec.caseIndex)."
        )
    return None


def _case(detail: str) -> Refusal:
    return Refusal("case", 422, detail)


def _indices(values: Sequence[int] | Mapping[int, Any]) -> str:
    ordered = sorted(values)
    shown = ", ".join(str(value) for value in ordered[:10])
    return shown + (f" and {len(ordered) - 10} more" if len(ordered) > 10 else "")


# --- units and statistics --------------------------------------------------------------------------


def check_units(document: Submission) -> Refusal | None:
    """Figures are integer nanoseconds of the statistic the protocol names, and the suite figure
    aggregates its cases (it lies between the fastest and the slowest)."""
    timing = document.run.spec.timing
    statistic = timing.primary_statistic
    protocol_statistic = document.protocol.spec.measurement.primary_statistic
    if statistic != protocol_statistic:
        return _unit(
            f"The run's primary statistic is {statistic!r}, but its protocol measures {protocol_statistic!r}; "
            "report the statistic the protocol names."
        )
    for name, value in timing.latency_ns.items():
        if refusal := _plausible(value, f"The run's {name}"):
            return refusal
    case_figures = []
    for result in document.run.spec.case_results or []:
        latencies = result["latencyNs"]
        if statistic not in latencies:
            return _unit(f"Case {result['caseIndex']} has no {statistic!r}, the run's primary statistic.")
        for name, value in latencies.items():
            if refusal := _plausible(value, f"Case {result['caseIndex']}'s {name}"):
                return refusal
        case_figures.append(latencies[statistic])
    suite = timing.latency_ns[statistic]
    if document.run.spec.case_index is None and case_figures and not min(case_figures) <= suite <= max(case_figures):
        return _unit(
            f"The suite's {statistic}, {figures.latency(suite)}, lies outside its cases' figures "
            f"({figures.latency(min(case_figures))} to {figures.latency(max(case_figures))}): an aggregate of the "
            "cases cannot. Are they in the same unit and statistic?"
        )
    return None


def _plausible(value: int, what: str) -> Refusal | None:
    if value < MIN_LATENCY_NS:
        return _unit(
            f"{what} is {value} ns, less than any GPU kernel takes ({MIN_LATENCY_NS} ns). Latencies are integer "
            "nanoseconds: was it written in microseconds or milliseconds?"
        )
    if value > MAX_LATENCY_NS:
        return _unit(f"{what} is {value:,} ns, over an hour. Latencies are integer nanoseconds.")
    return None


def _unit(detail: str) -> Refusal:
    return Refusal("unit", 422, detail)


# --- the speed-of-light bound ----------------------------------------------------------------------


def check_bounds(document: Submission, bounds: Mapping[int, Sequence[CaseBound]]) -> Refusal | None:
    """No case is faster than a known lower bound on its latency (``bounds`` by case index): a figure
    below the speed of light was not measured correctly (a skipped computation, an unsynchronised timer)."""
    statistic = document.run.spec.timing.primary_statistic
    for result in document.run.spec.case_results or []:
        index, latency_ns = result["caseIndex"], result["latencyNs"][statistic]
        for bound in bounds.get(index, ()):
            share = figures.share_of_bound(bound.bound_ns, latency_ns)
            if share is not None and share > 100:
                return Refusal(
                    "below-bound",
                    422,
                    f"Case {index}'s {statistic}, {figures.latency(latency_ns)}, is below the workload's bound for "
                    f"it, {figures.latency(bound.bound_ns)} ({bound.name}): no correct kernel is that fast. "
                    "Check the timing (synchronisation, a skipped computation, a cached result).",
                    {"caseIndex": index, "latencyNs": latency_ns, "boundNs": bound.bound_ns, "bound": bound.name},
                )
    return None


# --- duplicates ------------------------------------------------------------------------------------


def check_duplicate(document: Submission, known: bool) -> Refusal | None:
    """``known``: the registry holds this run (by digest), or a submission of it waits or was accepted."""
    if known:
        return Refusal(
            "duplicate",
            409,
            f"The run {document.run.digest} is already in the registry or waiting for review; "
            "a run is submitted once. A new measurement is a new run (another digest).",
        )
    return None
