"""Manifest-backed records: reading their manifests as typed models; writing them.

Every read of a stored manifest goes through ``load_manifest``, which parses the JSON
text into the Pydantic model of its kind once and keeps it (``run_manifest(row)`` and its
siblings check the kind). What the API serves byte for byte is ``manifest_document``: the
stored JSON as it is, whose digest a reader recomputes.

A record is keyed by its manifest name. When the digest is unchanged nothing is
written at all, which is what makes a repeated ingest free; when it changed, the row
takes the new manifest and the old digest stays in ``manifest_version``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kernelindex.db.base import Base
from kernelindex.db.tables import Attestation as AttestationRow
from kernelindex.db.tables import ManifestRecord, ManifestVersion
from kernelindex.manifests import (
    Attestation,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    Manifest,
    ManifestError,
    WorkloadSuite,
    parse_manifest,
)
from kernelindex.store.batch import StoredRun
from kernelindex.store.bulk import insert_rows, version_rows

Row = TypeVar("Row", bound=ManifestRecord)
Kind = TypeVar("Kind", bound=Manifest)


class Stored(Protocol):
    """Anything holding a stored manifest: a record's row, a ``ManifestVersion``, a ``StoredManifest``."""

    @property
    def digest(self) -> str: ...

    @property
    def manifest_json(self) -> str: ...


@dataclass(frozen=True)
class StoredText:
    """A manifest's digest and stored JSON, as read by a query that selects the two columns."""

    digest: str
    manifest_json: str


@dataclass(frozen=True)
class _Key:
    digest: str
    # Part of the key, though the digest nearly names it: the digest covers apiVersion, kind and
    # spec, not metadata, so two records with one spec and different names share a digest.
    text: str = field(repr=False)


@lru_cache(maxsize=2048)
def _parse(key: _Key) -> Manifest:
    # Bounded, and safe to share: what a digest (and text) names never changes, and the models are frozen.
    return parse_manifest(json.loads(key.text))


def load_manifest(digest: str, manifest_json: str) -> Manifest:
    """The stored manifest ``manifest_json`` (whose digest is ``digest``) as the model of its kind.

    Parsed once and cached: later loads of the same manifest return the same (frozen) object.
    Raises ``ManifestError`` if the text is not a valid manifest of a known kind.
    """
    return _parse(_Key(digest, manifest_json))


def load_as(kind: type[Kind], record: Stored) -> Kind:
    """``record``'s manifest, which must be of ``kind``; ``ManifestError`` if it is another."""
    manifest = load_manifest(record.digest, record.manifest_json)
    if not isinstance(manifest, kind):
        raise ManifestError([("kind", f"{record.digest} is a {manifest.kind}, not a {kind.KIND}")])
    return manifest


def run_manifest(record: Stored) -> BenchmarkRun:
    return load_as(BenchmarkRun, record)


def workload_manifest(record: Stored) -> WorkloadSuite:
    return load_as(WorkloadSuite, record)


def implementation_manifest(record: Stored) -> Implementation:
    return load_as(Implementation, record)


def protocol_manifest(record: Stored) -> BenchmarkProtocol:
    return load_as(BenchmarkProtocol, record)


def environment_manifest(record: Stored) -> ExecutionEnvironment:
    return load_as(ExecutionEnvironment, record)


def attestation_manifest(record: Stored) -> Attestation:
    return load_as(Attestation, record)


def manifest_document(record: Stored) -> dict[str, Any]:
    """The stored manifest as plain JSON, exactly as stored: what the API serves, so its digest recomputes.

    A fresh object each call: callers may hand it to a response model without sharing it.
    """
    document: dict[str, Any] = json.loads(record.manifest_json)
    return document


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
            select(AttestationRow.hidden_reason).where(
                AttestationRow.name == version.name, AttestationRow.state == "hidden"
            )
        ).first()
        if moderated is not None:
            return replace(stored, manifest_json="", hidden_reason=moderated.hidden_reason or "moderated")
    return stored


def manifest_text(manifest: Manifest) -> str:
    """The stored (and served) JSON of a manifest: compact, UTF-8, in model field order."""
    return manifest.text


def _identity(record: Manifest | StoredRun) -> tuple[str, str, str]:
    """The kind, name and digest of what is written (its text is built only when it is written)."""
    if isinstance(record, StoredRun):
        return BenchmarkRun.KIND, record.name, record.digest
    return record.KIND, record.metadata.name, record.digest


def _stored_text(record: Manifest | StoredRun) -> str:
    return record.text if isinstance(record, StoredRun) else manifest_text(record)


def existing_by_name(session: Session, table: type[Row], names: Iterable[str]) -> dict[str, Row]:
    wanted = set(names)
    if not wanted:
        return {}
    rows = session.scalars(select(table).where(table.name.in_(wanted)))
    return {row.name: row for row in rows}


def put(
    session: Session,
    table: type[Row],
    manifest: Manifest | StoredRun,
    columns: dict[str, Any],
    current: Row | None,
    now: datetime,
) -> tuple[Row, Outcome]:
    """Insert or update one record from its manifest; write nothing if its digest is unchanged."""
    kind, name, digest = _identity(manifest)
    if current is not None and current.digest == digest:
        return current, Outcome.UNCHANGED
    text = _stored_text(manifest)
    if current is None:
        row = table(name=name, digest=digest, manifest_json=text, created_at=now, updated_at=now, **columns)
        session.add(row)
        session.add(ManifestVersion(kind=kind, name=name, digest=digest, manifest_json=text, recorded_at=now))
        return row, Outcome.ADDED
    session.execute(
        update(ManifestVersion)
        .where(
            ManifestVersion.kind == kind,
            ManifestVersion.name == name,
            ManifestVersion.digest == current.digest,
        )
        .values(superseded_at=now)
    )
    _record_version(session, kind, name, digest, text, now)
    current.digest = digest
    current.manifest_json = text
    current.updated_at = now
    for key, value in columns.items():
        setattr(current, key, value)
    return current, Outcome.UPDATED


def insert_new(
    session: Session,
    table: type[Row],
    records: Iterable[tuple[Manifest | StoredRun, dict[str, Any]]],
    now: datetime,
) -> int:
    """Insert records known to be new (no row has their names), with their first versions.

    The same rows ``put`` would add, written by the bulk path (``kernelindex.store.bulk``) instead
    of one ORM object each: a first load writes thousands of runs per workload, and SOL-ExecBench
    an implementation per run. ``columns`` must name every column without a server default.
    Returns how many were inserted.
    """
    rows, kinds = [], set()
    for manifest, columns in records:
        kind, name, digest = _identity(manifest)
        kinds.add(kind)
        rows.append(
            {
                "name": name,
                "digest": digest,
                "manifest_json": _stored_text(manifest),
                "created_at": now,
                "updated_at": now,
                **columns,
            }
        )
    if rows:
        (kind,) = kinds  # one table holds one kind of manifest
        insert_rows(session, cast("type[Base]", table), rows)  # each manifest table is a mapped class
        insert_rows(session, ManifestVersion, version_rows(kind, rows, now))
    return len(rows)


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
