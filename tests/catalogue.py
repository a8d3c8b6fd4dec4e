"""What two stores must agree on to hold the same catalogue, whatever their history."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from kernelindex.db.base import Base
from kernelindex.db.engine import make_engine
from kernelindex.db.search_tables import SearchEntry
from kernelindex.db.tables import ManifestVersion, Run

# Bookkeeping of how a store got its content, not content: one ingest or two leave different reports.
NOT_CONTENT = {"ingestion_report", "rate_limit_counter", "app_secret", "page_version"}
MANIFEST_TABLES = ("workload", "implementation", "protocol", "environment", "run", "attestation", "rerun_case")


def catalogue_fingerprint(url: str) -> dict[str, Any]:
    """Row counts of every content table, every current and past digest, the flags of every
    run and the search index, in a form that compares equal across backends."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            tables = {t.name: t for t in Base.metadata.sorted_tables}
            counts = {
                name: connection.scalar(select(func.count()).select_from(table))
                for name, table in tables.items()
                if name not in NOT_CONTENT
            }
            digests = {
                name: sorted(connection.execute(select(tables[name].c.name, tables[name].c.digest)).all())
                for name in MANIFEST_TABLES
            }
            versions = sorted(
                connection.execute(
                    select(
                        ManifestVersion.kind,
                        ManifestVersion.name,
                        ManifestVersion.digest,
                        ManifestVersion.superseded_at.is_(None),
                    )
                ).all()
            )
            flags = sorted(
                connection.execute(
                    select(Run.name, Run.missing_since.is_(None), Run.held_for_review, Run.upstream_withdrawn)
                ).all()
            )
            search = sorted(connection.execute(select(SearchEntry.kind, SearchEntry.slug, SearchEntry.fingerprint)))
    finally:
        engine.dispose()
    return {
        "counts": counts,
        "digests": {k: [tuple(r) for r in v] for k, v in digests.items()},
        "versions": [tuple(r) for r in versions],
        "flags": [tuple(r) for r in flags],
        "search": [tuple(r) for r in search],
    }
