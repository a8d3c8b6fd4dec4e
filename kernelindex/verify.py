"""Recomputing and checking the digests of manifests a reader holds.

Accepts any JSON document: a bare manifest, ``{"digest", "manifest"}`` pairs (as the
registry serves them), lists, JSON Lines, or any nesting of these. Every manifest found
is validated against its kind and its digest recomputed; every digest it is claimed to
have, and every digest a run refers to, is checked.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kernelindex.manifests import ManifestError, manifest_digest, parse_manifest

RUN_REFERENCES = {
    "protocolDigest": "BenchmarkProtocol",
    "workloadDigest": "WorkloadSuite",
    "environmentDigest": "ExecutionEnvironment",
    "implementationDigest": "Implementation",
}


@dataclass(frozen=True)
class Check:
    ok: bool
    kind: str
    name: str
    digest: str
    message: str


def load_document(text: str) -> Any:
    """Parse JSON, or JSON Lines (one value a line) when the whole is not one value."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as whole_error:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise ValueError(f"not JSON: {whole_error}") from None
        try:
            return [json.loads(line) for line in lines]
        except json.JSONDecodeError as exc:
            raise ValueError(f"neither JSON nor JSON Lines: {exc}") from None


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


def verify_document(document: Any, expected_digest: str | None = None) -> list[Check]:
    """Check every manifest in ``document``; ``expected_digest`` is one the reader was promised
    (for example from a ``/manifests/{digest}`` URL)."""
    checks: list[Check] = []
    found = list(_found(document))
    by_kind: dict[str, set[str]] = {}
    for manifest, _ in found:
        with contextlib.suppress(ValueError):  # reported as a failed check below
            by_kind.setdefault(str(manifest["kind"]), set()).add(manifest_digest(manifest))
    for manifest, claimed in found:
        kind = str(manifest.get("kind"))
        name = str((manifest.get("metadata") or {}).get("name", "?"))
        try:
            digest = manifest_digest(manifest)
        except ValueError as exc:
            checks.append(Check(False, kind, name, "", f"cannot be digested: {exc}"))
            continue
        try:
            parse_manifest(manifest)
        except ManifestError as exc:
            checks.append(Check(False, kind, name, digest, f"not a valid {kind}: {exc}"))
            continue
        if claimed is not None and claimed != digest:
            checks.append(Check(False, kind, name, digest, f"claimed {claimed}, recomputed {digest}"))
            continue
        problems = [
            f"{field} {manifest['spec'][field]} matches no {ref_kind} in the document"
            for field, ref_kind in RUN_REFERENCES.items()
            if kind == "BenchmarkRun" and ref_kind in by_kind and manifest["spec"].get(field) not in by_kind[ref_kind]
        ]
        if problems:
            checks.append(Check(False, kind, name, digest, "; ".join(problems)))
            continue
        checks.append(Check(True, kind, name, digest, "digest matches" if claimed else "digest recomputed"))
    if expected_digest is not None and all(check.digest != expected_digest for check in checks):
        checks.append(Check(False, "-", "-", expected_digest, "no manifest in the document has this digest"))
    return checks


def digest_in_url(url: str) -> str | None:
    match = re.search(r"/manifests/(sha256:[0-9a-f]{64})", url)
    return match[1] if match else None
