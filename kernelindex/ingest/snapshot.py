"""Serve a recorded SOL-ExecBench snapshot as if it were the live API.

The snapshot folder holds the API's own response bodies (``api/kernels.json``,
``api/kernels/<id>.json``, ``api/submissions/kernel-<id>.json``). An ``httpx``
mock transport answers the same requests the live client makes, including
``offset``/``limit`` pagination, so a snapshot goes through exactly the same parsing
and mapping code as the live API.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from kernelindex.ingest.bounds import NotARegularFile, read_regular

SNAPSHOT_BASE_URL = "http://snapshot.invalid/api/"
OBSERVED_AT_FILE = "snapshot.json"


class SnapshotError(Exception):
    """The snapshot folder is missing, incomplete or fails its checksum list."""


def verify_checksums(root: Path) -> int:
    """Check ``MANIFEST.sha256`` (``sha256sum`` format) if the snapshot has one.

    Returns how many files were checked; raises ``SnapshotError`` on any mismatch, so a
    corrupted or edited snapshot is never loaded as if it were the record.
    """
    listing = root / "MANIFEST.sha256"
    if not listing.exists():
        return 0
    checked = 0
    for line in _read(listing, root).decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        expected, _, name = line.partition("  ")
        path = root / name.strip()
        if not path.exists():
            raise SnapshotError(f"{path}: listed in MANIFEST.sha256 but missing")
        if hashlib.sha256(_read(path, root)).hexdigest() != expected.strip():
            raise SnapshotError(f"{path}: checksum does not match MANIFEST.sha256")
        checked += 1
    return checked


def _read(path: Path, root: Path) -> bytes:
    """A file of the snapshot: a regular file inside its folder (``SnapshotError`` otherwise:
    a link pointing out, a device or a FIFO is never read)."""
    try:
        return read_regular(path, root)
    except NotARegularFile as exc:
        raise SnapshotError(f"{path}: {exc}") from None


@dataclass(frozen=True)
class SnapshotFacts:
    """What a snapshot says of itself in ``snapshot.json``: when it was recorded, what part of
    the upstream it holds (``scope``), and which of the per-unit totals it carries are the
    upstream's own counts (``upstreamTotals.units``, read at ``upstreamTotals.observedAt``).
    Any other total in a snapshot is not an upstream count: without the list, none is."""

    observed_at: datetime | None = None
    scope: str | None = None
    upstream_total_units: frozenset[str] = frozenset()
    upstream_totals_observed_at: datetime | None = None


def _time(path: Path, value: Any, name: str) -> datetime:
    if not isinstance(value, str):
        raise SnapshotError(f"{path}: {name} must be an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise SnapshotError(f"{path}: {name} is not an ISO 8601 time ({value!r})") from None
    if parsed.tzinfo is None:
        raise SnapshotError(f"{path}: {name} needs a time zone")
    return parsed.astimezone(UTC)


def snapshot_facts(root: Path) -> SnapshotFacts:
    """The snapshot's ``snapshot.json`` (no file: nothing is known of it); ``SnapshotError`` if malformed."""
    path = root / OBSERVED_AT_FILE
    if not path.exists():
        return SnapshotFacts()
    try:
        document = json.loads(_read(path, root))
    except (ValueError, RecursionError) as exc:
        raise SnapshotError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise SnapshotError(f"{path}: expected an object")
    scope = document.get("scope")
    if scope is not None and not isinstance(scope, str):
        raise SnapshotError(f"{path}: scope must be text")
    totals = document.get("upstreamTotals", {})
    units = totals.get("units", []) if isinstance(totals, dict) else None
    if not isinstance(units, list) or not all(isinstance(unit, str) for unit in units):
        raise SnapshotError(f'{path}: upstreamTotals must be {{"units": ["<unit>", …], "observedAt": …}}')
    return SnapshotFacts(
        observed_at=_time(path, document["observedAt"], "observedAt") if "observedAt" in document else None,
        scope=scope,
        upstream_total_units=frozenset(units),
        upstream_totals_observed_at=_time(path, totals["observedAt"], "upstreamTotals.observedAt")
        if "observedAt" in totals
        else None,
    )


def observed_at(root: Path) -> datetime | None:
    """When the snapshot was recorded, from ``snapshot.json`` if present."""
    return snapshot_facts(root).observed_at


def _page(body: bytes, offset: int, limit: int) -> bytes:
    data = json.loads(body)
    submissions = data["data"]["submissions"]
    data["data"] = {
        "submissions": submissions[offset : offset + limit],
        "total": len(submissions),
        "offset": offset,
        "limit": limit,
    }
    return json.dumps(data).encode()


def snapshot_transport(root: Path) -> httpx.MockTransport:
    """A transport answering ``/kernels``, ``/kernels/{id}`` and ``/submissions`` from files."""
    api = root / "api"
    if not (api / "kernels.json").is_file():
        raise SnapshotError(f"{root}: not a SOL-ExecBench snapshot (no api/kernels.json)")

    def handle(request: httpx.Request) -> httpx.Response:
        try:
            return answer(request)
        except SnapshotError:
            # Not a regular file inside the snapshot (a link pointing out, a FIFO): never read.
            return httpx.Response(403)

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/").strip("/")
        if path == "kernels":
            return httpx.Response(200, content=_read(api / "kernels.json", root))
        if match := re.fullmatch(r"kernels/(\d+)", path):
            file = api / "kernels" / f"{match[1]}.json"
            return httpx.Response(200, content=_read(file, root)) if file.exists() else httpx.Response(404)
        if path == "submissions":
            kernel_id = request.url.params.get("kernel_id", "")
            file = api / "submissions" / f"kernel-{kernel_id}.json"
            if not kernel_id.isdigit() or not file.exists():
                return httpx.Response(404)
            offset = int(request.url.params.get("offset", "0"))
            limit = int(request.url.params.get("limit", "20"))
            return httpx.Response(200, content=_page(_read(file, root), offset, limit))
        return httpx.Response(404)

    return httpx.MockTransport(handle)
