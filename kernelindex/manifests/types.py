"""Field types shared by every manifest kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer, StringConstraints
from pydantic.alias_generators import to_camel

from kernelindex.manifests.digest import DIGEST_PATTERN


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


UtcDatetime = Annotated[datetime, AfterValidator(_require_utc), PlainSerializer(format_utc, return_type=str)]
Digest = Annotated[str, StringConstraints(pattern=DIGEST_PATTERN.pattern)]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9.-]{0,198}[a-z0-9])?$")]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=300)]
LongText = Annotated[str, StringConstraints(max_length=20_000)]
LatencyNs = Annotated[int, Field(strict=True, gt=0, le=10**15)]
PositiveMs = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(strict=True, ge=0)]
# Source-native figures are kept verbatim; NaN and infinities have no JSON form.
NativeValue = Annotated[float, Field(allow_inf_nan=False)] | int | str | bool


class Strict(BaseModel):
    """Base of every manifest part: unknown fields are errors, JSON names are camelCase."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        str_strip_whitespace=False,
    )
