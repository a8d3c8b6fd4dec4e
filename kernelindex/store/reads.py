"""Read queries for the pages and the JSON permalinks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Run, Source, Workload
from kernelindex.manifests.types import RunStatus


def eligible(run: Any = Run, as_of: datetime | None = None) -> ColumnElement[bool]:
    """Runs that may be ranked (PRODUCT.md §5), as a SELECT filter on ``Run`` or an alias of it;
    with ``as_of``, as they stood then: a maintainer's withdrawal made later is not yet applied.

    The SQL form of ``kernelindex.ranking.ineligibility_reasons``: the two must agree.
    """
    not_withdrawn = run.withdrawn_at.is_(None)
    if as_of is not None:
        not_withdrawn = or_(not_withdrawn, run.withdrawn_at >= as_of)
    return and_(
        run.status == RunStatus.PASSED,
        not_withdrawn,
        run.upstream_withdrawn.is_(False),
        run.held_for_review.is_(False),
        or_(run.review_state.is_(None), run.review_state != "rejected"),
    )


@dataclass(frozen=True)
class SourceSummary:
    slug: str
    name: str
    url: str
    last_observed_at: datetime | None


def sources(session: Session) -> list[SourceSummary]:
    return [
        SourceSummary(slug=s.slug, name=s.name, url=s.url, last_observed_at=s.last_observed_at)
        for s in session.scalars(select(Source).order_by(Source.name))
    ]


def store_is_empty(session: Session) -> bool:
    return session.scalar(select(func.count()).select_from(Workload)) == 0
