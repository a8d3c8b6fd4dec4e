"""Writing manifest-backed records: insert, update with history, or leave alone.

A record is keyed by its manifest name. When the digest is unchanged nothing is
written at all, which is what makes a repeated ingest free; when it changed, the row
takes the new manifest and the old digest stays in ``manifest_version``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kernelindex.db.tables import Attestation, ManifestRecord, ManifestVersion
from kernelindex.manifests import Manifest

Row = TypeVar("Row", bound=ManifestRecord)


class Outcome(StrEnum):
    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class StoredManifest:
    """One stored version of a manifest; ``current`` when no newer version superseded it.

    ``hidden_reason`` is set when a maintainer hid the record (an attestation): its
    manifest is then withheld from every public view, and ``manifest_json`` is empty.
    """

    digest: str
    kind: str
    name: str
    manifest_json: str
    current: bool
    hidden_reason: str | None = None


def manifest_by_digest(session: Session, digest: str) -> StoredManifest | None:
    """The stored manifest with this digest, whichever record it belongs (or belonged) to.

    A hidden attestation's manifest comes back without its text, with the maintainer's reason.
    """
    version = session.scalars(select(ManifestVersion).where(ManifestVersion.digest == digest).limit(1)).first()
    if version is None:
        return None
    stored = StoredManifest(
        digest=version.digest,
        kind=version.kind,
        name=version.name,
        manifest_json=version.manifest_json,
        current=version.superseded_at is None,
    )
    if version.kind == "Attestation":
        moderated = session.execute(
            select(Attestation.hidden_reason).where(Attestation.name == version.name, Attestation.state == "hidden")
        ).first()
        if moderated is not None:
            return replace(stored, manifest_json="", hidden_reason=moderated.hidden_reason or "moderated")
    return stored


def manifest_text(manifest: Manifest) -> str:
    """The stored (and served) JSON of a manifest: compact, UTF-8, in model field order."""
    return json.dumps(manifest.to_json(), ensure_ascii=False, separators=(",", ":"))


def existing_by_name(session: Session, table: type[Row], names: Iterable[str]) -> dict[str, Row]:
    wanted = set(names)
    if not wanted:
        return {}
    rows = session.scalars(select(table).where(table.name.in_(wanted)))
    return {row.name: row for row in rows}


def put(
    session: Session,
    table: type[Row],
    manifest: Manifest,
    columns: dict[str, Any],
    current: Row | None,
    now: datetime,
) -> tuple[Row, Outcome]:
    """Insert or update one record from its manifest; write nothing if its digest is unchanged."""
    digest = manifest.digest
    name = manifest.metadata.name
    if current is not None and current.digest == digest:
        return current, Outcome.UNCHANGED
    text = manifest_text(manifest)
    if current is None:
        row = table(name=name, digest=digest, manifest_json=text, created_at=now, updated_at=now, **columns)
        session.add(row)
        session.add(ManifestVersion(kind=manifest.KIND, name=name, digest=digest, manifest_json=text, recorded_at=now))
        return row, Outcome.ADDED
    session.execute(
        update(ManifestVersion)
        .where(
            ManifestVersion.kind == manifest.KIND,
            ManifestVersion.name == name,
            ManifestVersion.digest == current.digest,
        )
        .values(superseded_at=now)
    )
    _record_version(session, manifest.KIND, name, digest, text, now)
    current.digest = digest
    current.manifest_json = text
    current.updated_at = now
    for key, value in columns.items():
        setattr(current, key, value)
    return current, Outcome.UPDATED


def _record_version(session: Session, kind: str, name: str, digest: str, text: str, now: datetime) -> None:
    earlier = session.scalar(
        select(ManifestVersion).where(
            ManifestVersion.kind == kind, ManifestVersion.name == name, ManifestVersion.digest == digest
        )
    )
    if earlier is not None:
        # The upstream went back to a value it had before: that version is current again.
        earlier.superseded_at = None
        return
    session.add(ManifestVersion(kind=kind, name=name, digest=digest, manifest_json=text, recorded_at=now))
