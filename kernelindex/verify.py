"""Recomputing and checking the digests of manifests a reader holds.

Accepts any JSON document: a bare manifest, ``{"digest", "manifest"}`` pairs (as the
registry serves them), lists, JSON Lines, or any nesting of these, plain or gzip-compressed
(the catalogue export, ``/exports/catalog.jsonl.gz``, is gzip JSON Lines). Every manifest
found is validated against its kind and its digest recomputed; every digest it is claimed
to have, and every digest a run or an attestation refers to, is checked against the
manifests of that kind in the document (where it holds any). In JSON Lines each check names the
line its manifest is on.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kernelindex.manifests import ManifestError, manifest_digest, parse_manifest

RUN_REFERENCES = {
    "protocolDigest": "BenchmarkProtocol",
    "workloadDigest": "WorkloadSuite",
    "environmentDigest": "ExecutionEnvironment",
    "implementationDigest": "Implementation",
}
# Every digest a manifest of each kind names, by field: ``{kind: {field: kind named}}``.
REFERENCES = {
    "BenchmarkRun": RUN_REFERENCES,
    "Attestation": {"runDigest": "BenchmarkRun"},
}


@dataclass(frozen=True)
class Check:
    ok: bool
    kind: str
    name: str
    digest: str
    message: str
    line: int | None = None  # where the manifest is, in JSON Lines


@dataclass(frozen=True)
class Document:
    value: Any
    # For JSON Lines: the line number (from 1) of each item of ``value``; None for one JSON value.
    lines: list[int] | None = None


GZIP_MAGIC = b"\x1f\x8b"


def load_document(data: bytes) -> Document:
    """Parse JSON, or JSON Lines (one value a line) when the whole is not one value; either
    may be gzip-compressed."""
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"a damaged gzip file: {exc}") from None
    text = data.decode("utf-8", errors="replace")
    try:
        return Document(json.loads(text))
    except json.JSONDecodeError as whole_error:
        numbered = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(numbered) < 2:
            raise ValueError(f"not JSON: {whole_error}") from None
        values = []
        for number, line in numbered:
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"neither JSON nor JSON Lines: line {number}: {exc.msg}") from None
        return Document(values, [number for number, _ in numbered])


def _is_manifest(value: Any) -> bool:
    return isinstance(value, dict) and {"apiVersion", "kind", "spec"} <= value.keys()


def _found(value: Any) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Every manifest in a document, with the digest claimed for it (if any)."""
    if _is_manifest(value):
        yield value, None
    elif isinstance(value, dict):
        if _is_manifest(value.get("manifest")) and isinstance(value.get("digest"), str):
            yield value["manifest"], value["digest"]
            rest = {k: v for k, v in value.items() if k not in ("manifest", "digest")}
        else:
            rest = value
        for item in rest.values():
            yield from _found(item)
    elif isinstance(value, list):
        for item in value:
            yield from _found(item)


def verify_document(
    document: Any, expected_digest: str | None = None, lines: Sequence[int] | None = None
) -> list[Check]:
    """Check every manifest in ``document``; ``expected_digest`` is one the reader was promised
    (for example from a ``/manifests/{digest}`` URL). ``lines``: ``document`` is JSON Lines,
    its items on these lines (``Document.lines``)."""
    checks: list[Check] = []
    found: list[tuple[dict[str, Any], str | None, int | None]]
    if lines is None:
        found = [(manifest, claimed, None) for manifest, claimed in _found(document)]
    else:
        found = [
            (manifest, claimed, line)
            for item, line in zip(document, lines, strict=True)
            for manifest, claimed in _found(item)
        ]
    by_kind: dict[str, set[str]] = {}
    for manifest, _, _ in found:
        with contextlib.suppress(ValueError):  # reported as a failed check below
            by_kind.setdefault(str(manifest["kind"]), set()).add(manifest_digest(manifest))
    for manifest, claimed, line in found:
        kind = str(manifest.get("kind"))
        name = str((manifest.get("metadata") or {}).get("name", "?"))
        try:
            digest = manifest_digest(manifest)
        except ValueError as exc:
            checks.append(Check(False, kind, name, "", f"cannot be digested: {exc}", line))
            continue
        try:
            parse_manifest(manifest)
        except ManifestError as exc:
            checks.append(Check(False, kind, name, digest, f"not a valid {kind}: {exc}", line))
            continue
        if claimed is not None and claimed != digest:
            checks.append(Check(False, kind, name, digest, f"claimed {claimed}, recomputed {digest}", line))
            continue
        problems = [
            f"{field} {manifest['spec'][field]} matches no {ref_kind} in the document"
            for field, ref_kind in REFERENCES.get(kind, {}).items()
            if ref_kind in by_kind and manifest["spec"].get(field) not in by_kind[ref_kind]
        ]
        if problems:
            checks.append(Check(False, kind, name, digest, "; ".join(problems), line))
            continue
        checks.append(Check(True, kind, name, digest, "digest matches" if claimed else "digest recomputed", line))
    if expected_digest is not None and all(check.digest != expected_digest for check in checks):
        checks.append(Check(False, "-", "-", expected_digest, "no manifest in the document has this digest"))
    return checks


def digest_in_url(url: str) -> str | None:
    match = re.search(r"/manifests/(sha256:[0-9a-f]{64})", url)
    return match[1] if match else None
