"""A source named by a filter (``?source=``): its row, or a refusal that lists the slugs there are."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Source


class UnknownSource(LookupError):
    """A filter named a source the registry does not have; the message says which ones it has."""

    def __init__(self, slug: str, known: list[str]):
        listed = ", ".join(known) if known else "none yet"
        super().__init__(f"No source has the slug {slug!r}; the sources are: {listed}.")


def source_named(session: Session, slug: str) -> Source:
    """The source whose slug is ``slug`` (in any case), or ``UnknownSource``."""
    source = session.scalar(select(Source).where(Source.slug == slug.strip().lower()))
    if source is None:
        raise UnknownSource(slug, list(session.scalars(select(Source.slug).order_by(Source.slug))))
    return source
