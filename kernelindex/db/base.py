"""The declarative base: one metadata, one constraint naming convention, UTC timestamps."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import JSON, DateTime, MetaData, String, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend.

    SQLite has no time zones, so values are stored as naive UTC there and given their
    zone back on the way out; naive values are refused on the way in, because a naive
    timestamp is a bug waiting to be read in the wrong zone.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


E = TypeVar("E", bound=StrEnum)


class StrEnumColumn(TypeDecorator[E]):
    """A ``StrEnum`` stored as its value in a plain string column (no database enum type).

    Strings outside the enum are refused both ways with a message naming the allowed values,
    so a bad value from the database fails where it is read, not somewhere downstream.
    """

    impl = String
    cache_ok = True

    def __init__(self, enum: type[E], length: int):
        super().__init__(length)
        self.enum = enum

    def _member(self, value: str) -> E:
        try:
            return self.enum(value)
        except ValueError:
            allowed = ", ".join(member.value for member in self.enum)
            raise ValueError(f"{value!r} is not a {self.enum.__name__} (one of {allowed})") from None

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else self._member(value).value

    def process_result_value(self, value: str | None, dialect: Dialect) -> E | None:
        return None if value is None else self._member(value)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UtcDateTime(), dict[str, Any]: JSON, list[Any]: JSON}
