"""Field types shared by every manifest kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StringConstraints,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from kernelindex.manifests.digest import DIGEST_PATTERN


class EvidenceLevel(StrEnum):
    """How well a run's figure is supported (PRODUCT.md §4), weakest first. Derived, never submitted."""

    REPORTED = "reported"
    REPRODUCIBLE = "reproducible"
    VERIFIED = "verified"
    # A second controlled rerun agrees, but not an independent one (same operator, or one not stated).
    REPRODUCED = "reproduced"
    REPLICATED = "replicated"


class RunStatus(StrEnum):
    """A run's correctness status, as its ``BenchmarkRun`` manifest states it."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"


class AttestationType(StrEnum):
    """What an ``Attestation`` says about a run."""

    REPRODUCED = "reproduced"
    COULD_NOT_REPRODUCE = "could_not_reproduce"
    ENVIRONMENT_NOTE = "environment_note"
    REGRESSION_OBSERVED = "regression_observed"


E = TypeVar("E", bound=StrEnum)


def _wire(enum: type[E]) -> tuple[PlainValidator, PlainSerializer, WithJsonSchema]:
    """Validation, serialisation and JSON Schema of ``enum`` as a field: exactly those of a ``Literal``
    of its values (the same error message, an inline schema), so the published schemas, OpenAPI
    included, and the errors people read keep their shape."""
    values = [member.value for member in enum]
    expected = ", ".join(repr(value) for value in values[:-1]) + f" or {values[-1]!r}"

    def member(value: object) -> E:
        if isinstance(value, str) and value in values:
            return enum(value)
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})

    return (
        PlainValidator(member),
        PlainSerializer(lambda value: value.value, return_type=str),
        WithJsonSchema({"enum": values, "type": "string"}),
    )


# As model fields: validated from their wire strings, serialised as them.
RunStatusField = Annotated[RunStatus, *_wire(RunStatus)]
EvidenceLevelField = Annotated[EvidenceLevel, *_wire(EvidenceLevel)]
AttestationTypeField = Annotated[AttestationType, *_wire(AttestationType)]


def _require_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamp must carry a time zone and be in UTC (end it with Z)")
    if value.utcoffset() != timedelta(0):
        raise ValueError("timestamp must be in UTC (end it with Z), not another offset")
    return value.astimezone(UTC)


def format_utc(value: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``, keeping exactly the sub-second precision the value has.

    Milliseconds stay milliseconds (``.544Z``) and microseconds stay microseconds, so a
    timestamp round-trips byte for byte and its manifest's digest is stable.
    """
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond % 1000 == 0 and value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    elif value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def _require_text_or_datetime(value: object) -> object:
    # Pydantic would read a bare number as seconds since the epoch; a manifest must say what it means.
    if isinstance(value, int | float):
        raise ValueError("timestamp must be an ISO 8601 string in UTC, such as 2026-07-03T03:55:35.544Z")
    return value


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(_require_text_or_datetime),
    AfterValidator(_require_utc),
    PlainSerializer(format_utc, return_type=str),
]
Digest = Annotated[str, StringConstraints(pattern=DIGEST_PATTERN.pattern)]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9.-]{0,198}[a-z0-9])?$")]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=300)]
LongText = Annotated[str, StringConstraints(max_length=20_000)]
LatencyNs = Annotated[int, Field(strict=True, gt=0, le=10**15)]
PositiveMs = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# JSON numbers beyond ±(2**53 − 1) are not exact in IEEE 754 doubles, so RFC 8785 refuses them.
MAX_SAFE_INTEGER = 2**53 - 1
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_SAFE_INTEGER)]
SafeInt = Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


def _refuse_unsafe_integer(value: object) -> object:
    # Checked before the union is tried, or an oversized integer would pass as a rounded float.
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        raise ValueError(f"integers must lie within ±{MAX_SAFE_INTEGER} to be exact in JSON")
    return value


# A number as JSON can carry it exactly: NaN and infinities have no JSON form at all.
JsonNumber = Annotated[SafeInt | FiniteFloat, BeforeValidator(_refuse_unsafe_integer)]
# Source-native figures are kept verbatim.
NativeValue = Annotated[SafeInt | FiniteFloat | str | bool, BeforeValidator(_refuse_unsafe_integer)]
AxisValue = NativeValue


class Strict(BaseModel):
    """Base of every manifest part: unknown fields are errors, JSON names are camelCase."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        # JSON names only: accepting snake_case too would let two spellings mean one field.
        validate_by_name=False,
        frozen=True,
        str_strip_whitespace=False,
    )
