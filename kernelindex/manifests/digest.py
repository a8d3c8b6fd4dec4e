"""Content digests of manifests: sha256 over the RFC 8785 (JCS) canonical form.

The identity of a manifest is ``{apiVersion, kind, spec}``; ``metadata`` (name, title,
labels) is presentation and deliberately left out, so renaming a record never changes
what it is.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import rfc8785

DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")
IDENTITY_FIELDS = ("apiVersion", "kind", "spec")


MAX_SAFE_INTEGER = 2**53 - 1


def _written_alike(value: Any) -> bool:
    """Whether ``json.dumps`` (sorted keys, no spaces, UTF-8) writes ``value`` byte for byte as
    RFC 8785 does.

    It does for strings (both escape exactly ``"``, ``\\`` and the control characters, the
    latter as lower-case ``\\u00xx`` or the same short forms), for exact integers and booleans,
    and for ASCII keys (there, code-point order and RFC 8785's UTF-16 order agree). Floats
    agree only where both print positional shortest digits with a fraction; every other
    float takes the library's path.
    """
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_SAFE_INTEGER
    if isinstance(value, float):
        return 1e-4 <= abs(value) < 1e16 and not value.is_integer()
    if isinstance(value, dict):
        return all(isinstance(key, str) and key.isascii() and _written_alike(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_written_alike(item) for item in value)
    return False


# What the standard library may write differently from RFC 8785, found in its output: a number
# that is an integer-valued float ("5.0", "-0.0"), has an exponent ("1e-05") or is an integer
# too long to be exact.
# A string holding such text only sends the value down the slower, always exact path. A number
# follows one of ":,[" (the search puts a "[" before the text, for a bare number): matching that
# character, rather than looking behind for it or for the start, makes the search twice as fast.
_MAY_DIFFER = re.compile(r"[:,\[]-?(?:\d+\.0|\d+(?:\.\d+)?[eE][-+]?\d+|\d{16,})(?=[,\]}]|$)")


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON-compatible value.

    Raises ``ValueError`` for values JSON cannot represent (NaN, infinities, integers
    beyond IEEE 754 doubles), so nothing ambiguous can be digested.

    The usual manifest is written by the standard library's C encoder, which gives the same
    bytes for the values ``_written_alike`` accepts (a property test compares the two on
    random values), at a fraction of the cost: an ingest digests every run it reads. An ASCII
    text without the tokens of ``_MAY_DIFFER`` is accepted without walking the value. A value
    whose only such tokens are integer-valued floats (a power limit of 1000.0 W) is written
    again with them as the integers RFC 8785 writes, a third of the library's cost.
    """
    written = _written_by_standard_library(value)
    if written is None and (as_ints := _integral_floats_as_ints(value)) is not value:
        written = _written_by_standard_library(as_ints)
    if written is not None:
        return written
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(f"value cannot be canonicalised as JSON: {exc}") from exc


def _written_by_standard_library(value: Any) -> bytes | None:
    """``value`` as the standard library writes it with sorted keys, where those are RFC 8785's
    bytes; ``None`` where they may not be, or where it refuses the value."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):
        return None  # the library refuses it with a message
    if not ((text.isascii() and not _MAY_DIFFER.search("[" + text)) or _written_alike(value)):
        return None
    try:
        return text.encode()
    except UnicodeEncodeError:
        return None  # a lone surrogate: the library refuses it with a message


def _integral_floats_as_ints(value: Any) -> Any:
    """``value`` with each integer-valued float within ±(2**53 − 1) as that integer (RFC 8785 writes
    both alike), or ``value`` itself where it holds none."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) <= MAX_SAFE_INTEGER else value
    if isinstance(value, dict):
        items = {key: _integral_floats_as_ints(item) for key, item in value.items()}
        return items if any(items[key] is not item for key, item in value.items()) else value
    if isinstance(value, list):
        elements = [_integral_floats_as_ints(item) for item in value]
        return elements if any(new is not old for new, old in zip(elements, value, strict=True)) else value
    return value


def sha256_digest(value: Any) -> str:
    """``"sha256:" + hex`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


@lru_cache(maxsize=4096)
def comparison_key(workload_digest: str, protocol_digest: str, environment_digest: str) -> str:
    """The digest naming a comparison group; shown as "comparison key sha256:…".

    Kept for recent groups: an ingest asks for the same few keys once per run."""
    return sha256_digest(
        {
            "workloadDigest": workload_digest,
            "protocolDigest": protocol_digest,
            "environmentDigest": environment_digest,
        }
    )


def identity_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a manifest (as plain JSON) that its digest covers."""
    missing = [field for field in IDENTITY_FIELDS if field not in manifest]
    if missing:
        raise ValueError(f"not a manifest: missing {', '.join(missing)}")
    return {field: manifest[field] for field in IDENTITY_FIELDS}


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """Digest of a manifest given as plain JSON (for example, as a reader downloaded it)."""
    return sha256_digest(identity_of(manifest))


def is_digest(text: str) -> bool:
    return DIGEST_PATTERN.fullmatch(text) is not None
