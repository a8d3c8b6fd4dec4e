"""Keyset pagination: sort keys, positions and the strictly-after predicate.

A page ends at a *position* (the sort values of its last item, the unique name last),
and the next page starts strictly after it. Inserting or removing other rows never
shifts a position, so walking the pages of an unchanged set yields every item exactly
once. The opaque cursor token around a position is made by the web layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, false, func, literal_column, or_, select
from sqlalchemy.orm import QueryableAttribute, Session


@dataclass(frozen=True)
class SortKey:
    """One sort key of a listing; ``kind`` is the type of its value in a position."""

    name: str
    kind: type
    descending: bool = False
    nullable: bool = False


SLUG_ORDER = (SortKey("slug", str),)

Position = tuple[Any, ...]
# A column, labelled expression or ORM attribute that a listing sorts or filters on.
Expr = ColumnElement[Any] | QueryableAttribute[Any]


class PositionError(ValueError):
    """A position that does not fit the listing's sort keys."""


def position_to_json(position: Position) -> list[Any]:
    return [value.isoformat() if isinstance(value, datetime) else value for value in position]


def position_from_json(keys: Sequence[SortKey], raw: Any) -> Position:
    """Check a decoded position against the sort keys it claims to belong to."""
    if not isinstance(raw, list) or len(raw) != len(keys):
        raise PositionError("the position does not match this sort")
    values: list[Any] = []
    for key, value in zip(keys, raw, strict=True):
        if value is None:
            if not key.nullable:
                raise PositionError(f"the position has no value for {key.name}")
            values.append(None)
        elif (key.kind is str and isinstance(value, str)) or (
            key.kind is int and isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
        ):
            values.append(value)
        elif key.kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            values.append(float(value))
        elif key.kind is datetime and isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                raise PositionError(f"the position's {key.name} is not a timestamp") from None
            if moment.tzinfo is None:
                raise PositionError(f"the position's {key.name} has no time zone")
            try:
                values.append(moment.astimezone(UTC))
            except OverflowError:
                raise PositionError(f"the position's {key.name} is out of range") from None
        else:
            raise PositionError(f"the position's {key.name} has the wrong type")
    return tuple(values)


def _ordered(keys: Sequence[SortKey], exprs: dict[str, Expr]) -> list[tuple[Expr, bool]]:
    """(expression, descending) pairs; a nullable key sorts its nulls last through a 0/1 flag."""
    ordered: list[tuple[Expr, bool]] = []
    for key in keys:
        expr = exprs[key.name]
        if key.nullable:
            ordered.append((case((expr.is_(None), 1), else_=0), False))
        ordered.append((expr, key.descending))
    return ordered


def _expanded(keys: Sequence[SortKey], position: Position) -> list[Any]:
    values: list[Any] = []
    for key, value in zip(keys, position, strict=True):
        if key.nullable:
            values.append(1 if value is None else 0)
        values.append(value)
    return values


def _strictly_after(ordered: list[tuple[Expr, bool]], values: list[Any]) -> ColumnElement[bool]:
    """Rows that sort strictly after ``values``: (a > x) or (a = x and b > y) or …, per direction."""
    clauses = []
    for index, ((expr, descending), value) in enumerate(zip(ordered, values, strict=True)):
        if value is None:
            continue  # among nulls nothing is strictly after; the null flag before it decides
        equal_before = [
            e.is_(None) if v is None else e == v for (e, _), v in zip(ordered[:index], values[:index], strict=True)
        ]
        clauses.append(and_(*equal_before, expr < value if descending else expr > value))
    return or_(*clauses) if clauses else false()


def keyset_page(
    session: Session,
    stmt: Select[Any],
    keys: Sequence[SortKey],
    exprs: dict[str, Expr],
    after: Position | None,
    limit: int,
) -> tuple[list[Any], Position | None]:
    """Run ``stmt`` for one page; returns its rows (key values appended) and the next page's position."""
    ordered = _ordered(keys, exprs)
    labelled = [exprs[key.name].label(f"_key_{index}") for index, key in enumerate(keys)]
    stmt = stmt.add_columns(*labelled).order_by(*(expr.desc() if desc else expr.asc() for expr, desc in ordered))
    if after is not None:
        stmt = stmt.where(_strictly_after(ordered, _expanded(keys, after)))
    rows = list(session.execute(stmt.limit(limit + 1)).all())
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, tuple(rows[-1][-len(keys) :])


def numbered_page(
    session: Session,
    stmt: Select[Any],
    keys: Sequence[SortKey],
    exprs: dict[str, Expr],
    offset: int,
    limit: int,
) -> tuple[list[Any], int]:
    """Run ``stmt`` for one numbered page in the same order as ``keyset_page``; returns its rows and the total.

    HTML pages show "page 3 of 7", which needs a total and an offset; the API pages by
    position instead, which stays exact while rows are inserted. Both sort alike.
    """
    # Counted without the listed columns, which a covering index may not hold: SQLite would read
    # every matching row (a workload's carries its manifest) to count them. ``stmt`` is never
    # DISTINCT, so its rows and the counted ones are as many.
    counted: Select[Any] = stmt.with_only_columns(literal_column("1"), maintain_column_froms=True).order_by(None)
    total = session.scalar(select(func.count()).select_from(counted.subquery())) or 0
    ordered = _ordered(keys, exprs)
    stmt = stmt.order_by(*(expr.desc() if desc else expr.asc() for expr, desc in ordered))
    return list(session.execute(stmt.offset(offset).limit(limit)).all()), total


def page_of(items: list[tuple[str, Any]], after: Position | None, limit: int) -> tuple[list[Any], Position | None]:
    """Keyset paging of a small list held in memory, sorted by its unique slug."""
    items = sorted(items, key=lambda item: item[0])
    if after is not None:
        items = [item for item in items if item[0] > after[0]]
    page = items[:limit]
    more = len(items) > limit
    return [value for _, value in page], ((page[-1][0],) if more else None)
