"""Signed result bundles: Ed25519 over the RFC 8785 canonical bytes of the payload (no torch).

A bundle is `{"format": FORMAT, "payload": {...}, "signature": {"algorithm": "ed25519", "keyId":
"ed25519:<first 16 hex of sha256(raw public key)>", "publicKey": "<base64 raw 32 bytes>", "value":
"<base64 signature over rfc8785.dumps(payload)>"}}`. The importer calls `verify_bundle` with the keys it
approves; nothing in a bundle is trusted before that returns.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

FORMAT = "kernelindex-rerun-bundle/v1"
ALGORITHM = "ed25519"


class BundleError(ValueError):
    """A bundle cannot be trusted or read; the message says why in words a maintainer can act on."""


class KeyFileError(OSError):
    """A key file cannot be written or read."""


def public_key_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_raw: bytes) -> str:
    """`ed25519:` + the first 16 hex digits of sha256 of the raw 32-byte public key."""
    return "ed25519:" + hashlib.sha256(public_raw).hexdigest()[:16]


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return base64.b64encode(public_key_raw(pub)).decode("ascii")


def check_json_value(value: Any, where: str = "payload") -> None:
    """Raise BundleError unless `value` is plain JSON with finite numbers (what RFC 8785 can sign)."""
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if abs(value) > 2**53 - 1:
            raise BundleError(f"{where}: integer {value} is outside the exactly representable JSON range")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BundleError(f"{where}: number {value!r} is not finite")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise BundleError(f"{where}: key {k!r} is not a string")
            check_json_value(v, f"{where}.{k}")
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            check_json_value(v, f"{where}[{i}]")
        return
    raise BundleError(f"{where}: {type(value).__name__} is not a JSON value")


def canonical_bytes(payload: dict[str, Any]) -> bytes:
    check_json_value(payload)
    return rfc8785.dumps(payload)


def sign_payload(payload: dict[str, Any], private_key: Ed25519PrivateKey) -> dict[str, Any]:
    """Wrap `payload` in a signed bundle. The payload must be JSON with finite numbers."""
    if not isinstance(payload, dict):
        raise BundleError("the payload must be a JSON object")
    raw_pub = public_key_raw(private_key.public_key())
    signature = private_key.sign(canonical_bytes(payload))
    return {
        "format": FORMAT,
        "payload": payload,
        "signature": {
            "algorithm": ALGORITHM,
            "keyId": key_id(raw_pub),
            "publicKey": base64.b64encode(raw_pub).decode("ascii"),
            "value": base64.b64encode(signature).decode("ascii"),
        },
    }


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise BundleError(f"the signature's {what} must be a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BundleError(f"the signature's {what} is not valid base64") from exc


def verify_bundle(bundle: Any, approved: dict[str, str]) -> dict[str, Any]:
    """Return the payload of `bundle` if it is signed by one of the `approved` keys (key id -> base64
    raw public key); otherwise raise BundleError saying what is wrong."""
    if not isinstance(bundle, dict):
        raise BundleError("a bundle must be a JSON object")
    fmt = bundle.get("format")
    if fmt != FORMAT:
        raise BundleError(f"unknown bundle format {fmt!r}; this importer reads {FORMAT!r}")
    extra = set(bundle) - {"format", "payload", "signature"}
    if extra:
        raise BundleError(f"unexpected bundle fields: {', '.join(sorted(extra))}")
    payload, sig = bundle.get("payload"), bundle.get("signature")
    if not isinstance(payload, dict):
        raise BundleError("the bundle has no payload object")
    if not isinstance(sig, dict):
        raise BundleError("the bundle has no signature object")
    if sig.get("algorithm") != ALGORITHM:
        raise BundleError(f"unsupported signature algorithm {sig.get('algorithm')!r}; expected {ALGORITHM!r}")
    kid = sig.get("keyId")
    if not isinstance(kid, str):
        raise BundleError("the signature has no key id")
    raw_pub = _b64(sig.get("publicKey"), "public key")
    if len(raw_pub) != 32:
        raise BundleError("the signature's public key is not a raw 32-byte Ed25519 key")
    if key_id(raw_pub) != kid:
        raise BundleError(f"key id {kid} does not belong to the public key in the bundle")
    if kid not in approved:
        raise BundleError(f"key {kid} is not an approved rerun key")
    try:
        approved_raw = base64.b64decode(approved[kid], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BundleError(f"the approved public key for {kid} is not valid base64") from exc
    if approved_raw != raw_pub:
        raise BundleError(f"the public key in the bundle does not match the approved key {kid}")
    value = _b64(sig.get("value"), "value")
    try:
        Ed25519PublicKey.from_public_bytes(raw_pub).verify(value, canonical_bytes(payload))
    except InvalidSignature as exc:
        raise BundleError(f"bad signature: the payload was changed after signing, or not signed by {kid}") from exc
    return payload


def generate_key(path: Path | str, *, raw: bool = False) -> Ed25519PrivateKey:
    """Create a new Ed25519 key at `path` (PKCS#8 PEM, or the raw 32 private bytes when `raw`), mode 0600.
    Refuses to overwrite an existing file."""
    key = Ed25519PrivateKey.generate()
    if raw:
        data = key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
        )
    else:
        data = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise KeyFileError(f"{path} already exists; refusing to overwrite a key") from exc
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(path, 0o600)
    return key


def load_private_key(path: Path | str) -> Ed25519PrivateKey:
    """Read an Ed25519 private key written by `generate_key` (PEM PKCS#8, or raw 32 bytes)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from exc
    if len(data) == 32:
        return Ed25519PrivateKey.from_private_bytes(data)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not an unencrypted PEM or raw 32-byte Ed25519 private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def write_bundle(bundle: dict[str, Any], path: Path | str) -> None:
    """Write a bundle as JSON (the signature covers the canonical form, so the layout does not matter)."""
    Path(path).write_text(json.dumps(bundle, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")


def read_bundle(path: Path | str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"cannot read bundle {path}: {exc}") from exc
