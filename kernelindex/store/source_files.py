"""What an ingest keeps of a source besides its records: the files it read whole, by content
digest (``source_file``), and the GPU datasheets the source publishes (``gpu_datasheet``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import GpuDatasheet, SourceFile
from kernelindex.store.bulk import insert_rows


def stored_files(session: Session, source_id: int) -> dict[str, str]:
    """Path → sha256 of every file of the source that an ingest stored whole."""
    rows = session.execute(select(SourceFile.path, SourceFile.sha256).where(SourceFile.source_id == source_id))
    return {path: sha256 for path, sha256 in rows}


def record_files(session: Session, source_id: int, files: Mapping[str, tuple[str, int]], now: datetime) -> None:
    """Remember ``files`` (path → (sha256, rows)) as stored: the next ingest may skip them."""
    if not files:
        return
    session.execute(delete(SourceFile).where(SourceFile.source_id == source_id, SourceFile.path.in_(list(files))))
    insert_rows(
        session,
        SourceFile,
        [
            {"source_id": source_id, "path": path, "sha256": sha256, "rows": rows, "ingested_at": now}
            for path, (sha256, rows) in sorted(files.items())
        ],
    )


def record_datasheets(
    session: Session, source_id: int, sheets: Mapping[str, tuple[dict[str, float | int], str | None]], now: datetime
) -> None:
    """Keep the datasheet figures a source publishes per GPU slug (figures, reference), replacing its earlier ones."""
    if not sheets:
        return
    session.execute(
        delete(GpuDatasheet).where(GpuDatasheet.source_id == source_id, GpuDatasheet.gpu_slug.in_(list(sheets)))
    )
    insert_rows(
        session,
        GpuDatasheet,
        [
            {"gpu_slug": slug, "source_id": source_id, "figures": figures, "reference": reference, "recorded_at": now}
            for slug, (figures, reference) in sorted(sheets.items())
        ],
    )
