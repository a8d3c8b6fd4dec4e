"""Bulk exports of the catalogue: the JSON Lines manifest dump and the sitemap's URL list.

The dump (``/exports/catalog.jsonl.gz``) holds the current manifest of every record, one
``{"digest": …, "manifest": …}`` object a line, so that ``kernelindex verify`` can check
each line and every reference between them. A run names the digests of the manifests it
was measured with, and a record keeps its digest when a later ingest changes the manifest
a run names (a rerun's implementation at a new revision): so after the current manifests
of each kind come the earlier versions that an exported manifest still names, and the
export is whole. It is written in a stable order (kind by kind, the current manifests in
the order records were created, then those earlier versions in the order they were
recorded), streamed from the database in batches
and compressed as it goes, into a file under a cache directory named by the state of the
catalogue; while the catalogue is unchanged the file is reused. Output is deterministic
(gzip header without a time or file name), so rebuilding an unchanged catalogue gives
the same bytes and the same sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import (
    Attestation,
    Environment,
    Implementation,
    ManifestRecord,
    ManifestVersion,
    Protocol,
    Run,
    Source,
    Workload,
)
from kernelindex.slugs import slugify

try:  # A lock across worker processes, so that only one builds a given export.
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: concurrent builds stay correct, only wasteful
    fcntl = None  # type: ignore[assignment]

# Bump when the bytes of an export would change for the same catalogue.
EXPORT_FORMAT = 2
EXPORT_NAME = "catalog.jsonl.gz"
BATCH_ROWS = 2000
CHUNK_BYTES = 1 << 16
BUILD_ATTEMPTS = 3
# Published exports kept per database: the current one and the one before it, so that a
# response already streaming the previous file is not cut short by a rebuild.
KEEP_EXPORTS = 2
STALE_FILE_S = 3600

# (kind, table, extra filter): the order of the lines in the export.
EXPORTED: tuple[tuple[str, type[ManifestRecord], tuple[Any, ...]], ...] = (
    ("WorkloadSuite", Workload, ()),
    ("Implementation", Implementation, ()),
    ("BenchmarkProtocol", Protocol, ()),
    ("ExecutionEnvironment", Environment, ()),
    ("BenchmarkRun", Run, ()),
    # Attestations a maintainer hid are moderated out of every public view, the export included.
    ("Attestation", Attestation, (Attestation.state == "published",)),
)


# What a run names by digest: (its field, the kind and table of the record, the run's foreign key).
RUN_REFERENCES: tuple[tuple[str, str, type[ManifestRecord], Any], ...] = (
    ("workloadDigest", "WorkloadSuite", Workload, Run.workload_id),
    ("implementationDigest", "Implementation", Implementation, Run.implementation_id),
    ("protocolDigest", "BenchmarkProtocol", Protocol, Run.protocol_id),
    ("environmentDigest", "ExecutionEnvironment", Environment, Run.environment_id),
)
DIGESTS_PER_QUERY = 500


class CatalogueChanging(Exception):
    """The catalogue changed during every attempt to export it (an ingest is writing)."""


@dataclass(frozen=True)
class CatalogueExport:
    path: Path
    sha256: str  # hex digest of the gzip file's bytes
    size: int
    state: str


def _table_id(table: type[ManifestRecord]) -> Any:
    return table.id  # type: ignore[attr-defined]


def exported_counts(session: Session) -> dict[str, int]:
    """How many manifests of each kind an export holds, in export order."""
    earlier = referenced_earlier_versions(session)
    return {
        kind: (session.scalar(select(func.count()).select_from(table).where(*where)) or 0) + len(earlier[kind])
        for kind, table, where in EXPORTED
    }


def referenced_earlier_versions(session: Session) -> dict[str, list[int]]:
    """For each exported kind, the ``manifest_version`` ids (in id order) of the superseded
    manifests that an exported manifest names by digest: a published attestation's run, and
    the workload, implementation, protocol and environment of a current run or of such a run.

    Only manifests whose named record has more than one version are read (a run names the
    record's current digest unless the record changed after the run was written), so on a
    catalogue where nothing was superseded this is one cheap query per reference.
    """
    earlier: dict[str, list[int]] = {kind: [] for kind, _, _ in EXPORTED}
    superseded = ManifestVersion.superseded_at.is_not(None)
    # Attestations name a run by digest; the run may have changed since.
    run_changed = select(ManifestVersion.name).where(ManifestVersion.kind == "BenchmarkRun", superseded)
    attested = session.scalars(
        select(Attestation.manifest_json)
        .join(Run, Run.id == Attestation.run_id)
        .where(Attestation.state == "published", Run.name.in_(run_changed))
    )
    earlier_runs = _versions(session, "BenchmarkRun", (_spec(text, "runDigest") for text in attested))
    earlier["BenchmarkRun"] = [version_id for version_id, _ in earlier_runs]
    for field, kind, table, foreign_key in RUN_REFERENCES:
        changed = select(ManifestVersion.name).where(ManifestVersion.kind == kind, superseded)
        current = session.scalars(
            select(Run.manifest_json)
            .join(table, _table_id(table) == foreign_key)
            .where(table.name.in_(changed))
            .execution_options(yield_per=BATCH_ROWS)
        )
        named = [_spec(text, field) for text in current] + [_spec(text, field) for _, text in earlier_runs]
        earlier[kind] = [version_id for version_id, _ in _versions(session, kind, named)]
    return earlier


def _spec(manifest_json: str, field: str) -> str:
    return str(json.loads(manifest_json)["spec"][field])


def _versions(session: Session, kind: str, digests: Iterable[str]) -> list[tuple[int, str]]:
    """The superseded versions of ``kind`` among ``digests``: (id, manifest text), in id order."""
    wanted = sorted(set(digests))
    found: list[tuple[int, str]] = []
    for start in range(0, len(wanted), DIGESTS_PER_QUERY):
        rows = session.execute(
            select(ManifestVersion.id, ManifestVersion.manifest_json).where(
                ManifestVersion.kind == kind,
                ManifestVersion.superseded_at.is_not(None),
                ManifestVersion.digest.in_(wanted[start : start + DIGESTS_PER_QUERY]),
            )
        )
        found += [(version_id, text) for version_id, text in rows]
    return sorted(found)


def catalogue_state(session: Session) -> str:
    """A short key that changes whenever the exported content can have changed.

    Every manifest write goes through ``store.manifests.put``, which sets ``updated_at``;
    the count and the largest id catch inserts, and the filtered count catches moderation.
    The database's URL is part of the key, so several stores can share a cache directory.
    """
    columns = []
    for _, table, where in EXPORTED:
        id_column = _table_id(table)
        columns += [
            select(func.count()).select_from(table).where(*where).scalar_subquery(),
            select(func.max(id_column)).where(*where).scalar_subquery(),
            select(func.max(table.updated_at)).where(*where).scalar_subquery(),
        ]
    values = session.execute(select(*columns)).one()
    bind = session.get_bind()
    url = bind.engine.url.render_as_string(hide_password=True)
    text = "|".join([f"format={EXPORT_FORMAT}", url, *(_stable(value) for value in values)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _stable(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def manifest_lines(session: Session) -> Iterator[bytes]:
    """Every exported manifest as one JSON line, streamed in batches of ``BATCH_ROWS`` rows.

    The stored manifest text is already compact JSON on one line, so it is spliced in as it
    is, which keeps it byte-identical to what the permalinks serve. Each kind's current
    manifests are followed by its earlier versions that an exported manifest names
    (``referenced_earlier_versions``).
    """
    earlier = referenced_earlier_versions(session)
    for kind, table, where in EXPORTED:
        statement = (
            select(table.digest, table.manifest_json)
            .where(*where)
            .order_by(_table_id(table))
            .execution_options(yield_per=BATCH_ROWS)
        )
        for digest, manifest_json in session.execute(statement):
            yield _line(digest, manifest_json)
        for start in range(0, len(earlier[kind]), BATCH_ROWS):
            versions = session.execute(
                select(ManifestVersion.digest, ManifestVersion.manifest_json)
                .where(ManifestVersion.id.in_(earlier[kind][start : start + BATCH_ROWS]))
                .order_by(ManifestVersion.id)
            )
            for digest, manifest_json in versions:
                yield _line(digest, manifest_json)


def _line(digest: str, manifest_json: str) -> bytes:
    return b'{"digest":"' + digest.encode() + b'","manifest":' + manifest_json.encode() + b"}\n"


def catalogue_export(session: Session, directory: Path) -> CatalogueExport:
    """The export of the catalogue as it is now: the cached file, or a new one.

    A new file is written to a temporary name and renamed into place, so a reader never
    sees half a file; the catalogue's state is read again after writing and the file is
    only published if nothing changed meanwhile. Raises ``CatalogueChanging`` when the
    catalogue changed during each of ``BUILD_ATTEMPTS`` builds.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for _ in range(BUILD_ATTEMPTS):
        state = catalogue_state(session)
        found = _published(directory, state)
        if found is not None:
            return found
        with _locked(directory / f"catalog-{state}.lock"):
            found = _published(directory, state)
            if found is not None:
                return found
            temporary, sha256, size = _write(session, directory)
            if catalogue_state(session) != state:
                temporary.unlink(missing_ok=True)
                continue
            return _publish(directory, state, temporary, sha256, size)
    raise CatalogueChanging("the catalogue changed while it was being exported")


def _paths(directory: Path, state: str) -> tuple[Path, Path]:
    path = directory / f"catalog-{state}.jsonl.gz"
    return path, path.with_name(path.name + ".sha256")


def sha256_line(sha256: str) -> str:
    """The ``sha256sum`` line of an export, naming the file as it is downloaded."""
    return f"{sha256}  {EXPORT_NAME}\n"


def _published(directory: Path, state: str) -> CatalogueExport | None:
    path, checksum = _paths(directory, state)
    try:
        sha256 = checksum.read_text().split()[0]
        size = path.stat().st_size
    except (FileNotFoundError, IndexError):
        return None
    return CatalogueExport(path=path, sha256=sha256, size=size, state=state)


def _write(session: Session, directory: Path) -> tuple[Path, str, int]:
    handle, name = tempfile.mkstemp(dir=directory, prefix=".catalog-", suffix=".tmp")
    temporary = Path(name)
    digest = hashlib.sha256()
    size = 0
    # wbits 31: a gzip container; zlib writes it without a time stamp or file name.
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    try:
        with os.fdopen(handle, "wb") as out:

            def emit(data: bytes) -> None:
                nonlocal size
                if data:
                    out.write(data)
                    digest.update(data)
                    size += len(data)

            pending: list[bytes] = []
            pending_bytes = 0
            for line in manifest_lines(session):
                pending.append(line)
                pending_bytes += len(line)
                if pending_bytes >= CHUNK_BYTES:
                    emit(compressor.compress(b"".join(pending)))
                    pending, pending_bytes = [], 0
            emit(compressor.compress(b"".join(pending)))
            emit(compressor.flush())
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary, digest.hexdigest(), size


def _publish(directory: Path, state: str, temporary: Path, sha256: str, size: int) -> CatalogueExport:
    path, checksum = _paths(directory, state)
    os.replace(temporary, path)
    # The checksum file is written last: its presence says the export beside it is complete.
    handle, name = tempfile.mkstemp(dir=directory, prefix=".catalog-", suffix=".tmp")
    with os.fdopen(handle, "w") as out:
        out.write(sha256_line(sha256))
    os.replace(name, checksum)
    _prune(directory, keep=state)
    return CatalogueExport(path=path, sha256=sha256, size=size, state=state)


_EXPORT_FILE = re.compile(r"^catalog-([0-9a-f]{24})\.(jsonl\.gz|jsonl\.gz\.sha256|lock)$")


def _prune(directory: Path, keep: str) -> None:
    """Keep the export of ``keep`` and the newest other one; remove the rest, with the lock
    files and temporary files that builds (or crashed builds) left behind."""
    by_state: dict[str, list[Path]] = {}
    now = time.time()
    for entry in directory.iterdir():
        match = _EXPORT_FILE.match(entry.name)
        if match:
            by_state.setdefault(match[1], []).append(entry)
        elif entry.name.startswith(".catalog-") and entry.name.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                if now - entry.stat().st_mtime > STALE_FILE_S:
                    entry.unlink()

    def published_at(state: str) -> float:
        with contextlib.suppress(FileNotFoundError):
            return _paths(directory, state)[1].stat().st_mtime
        return 0.0

    published = sorted((s for s in by_state if s != keep and published_at(s)), key=published_at, reverse=True)
    kept = {keep, *published[: KEEP_EXPORTS - 1]}
    for state, paths in by_state.items():
        if state in kept:
            continue
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                # A young lock file may be held by a build in progress: leave it for a later prune.
                if path.suffix != ".lock" or now - path.stat().st_mtime > STALE_FILE_S:
                    path.unlink()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --- The sitemap's URLs --------------------------------------------------------------

STATIC_PATHS = ("/", "/workloads", "/records", "/gpus")


@dataclass(frozen=True)
class SitemapUrl:
    path: str
    lastmod: datetime | None = None


def sitemap_size(session: Session) -> int:
    """How many URLs the sitemap lists."""
    small = _small_sections(session)
    workloads = session.scalar(select(func.count()).select_from(Workload)) or 0
    runs = session.scalar(select(func.count()).select_from(Run)) or 0
    return len(small) + workloads + runs


def sitemap_urls(session: Session, offset: int, limit: int) -> list[SitemapUrl]:
    """URLs ``offset`` to ``offset + limit`` of the sitemap, in a stable order: the fixed
    pages, sources, GPUs, origin models, implementations, workloads, then runs."""
    entries: list[SitemapUrl] = []
    small = _small_sections(session)
    entries += small[offset : offset + limit]
    offset = max(0, offset - len(small))
    limit -= len(entries)
    if limit > 0:
        workloads = _workload_urls(session, offset, limit)
        entries += workloads
        workload_count = session.scalar(select(func.count()).select_from(Workload)) or 0
        offset = max(0, offset - workload_count)
        limit -= len(workloads)
    if limit > 0:
        rows = session.execute(select(Run.name, Run.updated_at).order_by(Run.id).offset(offset).limit(limit)).all()
        entries += [SitemapUrl(urls.run(name), updated_at) for name, updated_at in rows]
    return entries


def _small_sections(session: Session) -> list[SitemapUrl]:
    sources = session.scalars(select(Source.slug).order_by(Source.slug)).all()
    gpus = session.scalars(select(Environment.gpu_slug).distinct().order_by(Environment.gpu_slug)).all()
    models = sorted({slugify(name) for name in session.scalars(select(Workload.origin_model).distinct()) if name})
    projects = session.scalars(
        select(Implementation.project_slug).distinct().order_by(Implementation.project_slug)
    ).all()
    return [
        *(SitemapUrl(path) for path in STATIC_PATHS),
        *(SitemapUrl(urls.source(slug)) for slug in sources),
        *(SitemapUrl(urls.gpu(slug)) for slug in gpus),
        *(SitemapUrl(urls.model(slug)) for slug in models),
        *(SitemapUrl(urls.implementation(slug)) for slug in projects),
    ]


def _workload_urls(session: Session, offset: int, limit: int) -> list[SitemapUrl]:
    rows = session.execute(
        select(Workload.id, Workload.name, Workload.updated_at).order_by(Workload.id).offset(offset).limit(limit)
    ).all()
    if not rows:
        return []
    # A leaderboard changes when its runs do: its lastmod is the newest of both.
    latest_run = dict(
        session.execute(
            select(Run.workload_id, func.max(Run.updated_at))
            .where(Run.workload_id.between(rows[0].id, rows[-1].id))
            .group_by(Run.workload_id)
        ).all()
    )
    return [
        SitemapUrl(urls.workload(row.name), max(filter(None, (row.updated_at, latest_run.get(row.id))))) for row in rows
    ]
