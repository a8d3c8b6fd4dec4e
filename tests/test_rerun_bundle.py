"""Signed rerun bundles: round trip, and every way a bundle is refused (no torch needed)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import stat
from pathlib import Path

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.rerun.bundle import (
    FORMAT,
    BundleError,
    KeyFileError,
    generate_key,
    key_id,
    load_private_key,
    public_key_b64,
    public_key_raw,
    read_bundle,
    sign_payload,
    verify_bundle,
    write_bundle,
)

PAYLOAD = {"bundleId": "abc", "status": "passed", "suite": {"latencyNs": 123456, "boundNs": 1.5}, "cases": [1, 2.25]}


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def _approved(key: Ed25519PrivateKey) -> dict[str, str]:
    return {key_id(public_key_raw(key.public_key())): public_key_b64(key)}


def test_bundle_round_trip_through_a_file(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    bundle = sign_payload(copy.deepcopy(PAYLOAD), key)
    write_bundle(bundle, tmp_path / "b.json")
    loaded = read_bundle(tmp_path / "b.json")
    assert verify_bundle(loaded, _approved(key)) == PAYLOAD
    sig = bundle["signature"]
    assert bundle["format"] == FORMAT == "kernelindex-rerun-bundle/v1"
    assert sig["algorithm"] == "ed25519"
    raw = base64.b64decode(sig["publicKey"])
    assert len(raw) == 32
    assert sig["keyId"] == "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]
    # the signature is over the RFC 8785 bytes of the payload
    key.public_key().verify(base64.b64decode(sig["value"]), rfc8785.dumps(PAYLOAD))


def test_bundle_tampered_payload_is_refused(key: Ed25519PrivateKey) -> None:
    bundle = sign_payload(copy.deepcopy(PAYLOAD), key)
    bundle["payload"]["suite"]["latencyNs"] = 100000
    with pytest.raises(BundleError, match="bad signature"):
        verify_bundle(bundle, _approved(key))


def test_bundle_unknown_key_is_refused(key: Ed25519PrivateKey) -> None:
    bundle = sign_payload(PAYLOAD, key)
    with pytest.raises(BundleError, match="not an approved"):
        verify_bundle(bundle, _approved(Ed25519PrivateKey.generate()))


def test_bundle_key_id_that_does_not_belong_to_the_key_is_refused(key: Ed25519PrivateKey) -> None:
    other = Ed25519PrivateKey.generate()
    bundle = sign_payload(PAYLOAD, other)
    bundle["signature"]["keyId"] = key_id(public_key_raw(key.public_key()))  # claims the approved id
    with pytest.raises(BundleError, match="does not belong"):
        verify_bundle(bundle, _approved(key))


def test_bundle_public_key_differing_from_the_approved_one_is_refused(key: Ed25519PrivateKey) -> None:
    bundle = sign_payload(PAYLOAD, key)
    kid = bundle["signature"]["keyId"]
    with pytest.raises(BundleError, match="does not match the approved"):
        verify_bundle(bundle, {kid: public_key_b64(Ed25519PrivateKey.generate())})


def test_bundle_signed_by_another_key_under_a_valid_id_is_refused(key: Ed25519PrivateKey) -> None:
    bundle = sign_payload(PAYLOAD, key)
    forged = sign_payload(PAYLOAD, Ed25519PrivateKey.generate())
    bundle["signature"]["value"] = forged["signature"]["value"]
    with pytest.raises(BundleError, match="bad signature"):
        verify_bundle(bundle, _approved(key))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b.update(format="kernelindex-rerun-bundle/v2"), "unknown bundle format"),
        (lambda b: b.pop("signature"), "no signature"),
        (lambda b: b.update(payload=[1]), "no payload"),
        (lambda b: b.update(extra=1), "unexpected bundle fields"),
        (lambda b: b["signature"].update(algorithm="rsa"), "unsupported signature algorithm"),
        (lambda b: b["signature"].update(publicKey="not base64!"), "not valid base64"),
        (lambda b: b["signature"].update(publicKey=base64.b64encode(b"short").decode()), "32-byte"),
        (lambda b: b["signature"].pop("keyId"), "no key id"),
        (lambda b: b["signature"].update(value=7), "base64 string"),
    ],
)
def test_bundle_malformed_structure_is_refused_with_a_message(key: Ed25519PrivateKey, mutate, message: str) -> None:
    bundle = sign_payload(PAYLOAD, key)
    mutate(bundle)
    with pytest.raises(BundleError, match=message):
        verify_bundle(bundle, _approved(key))
    with pytest.raises(BundleError, match="JSON object"):
        verify_bundle([bundle], _approved(key))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, (1, 2), 2**60])
def test_bundle_payload_must_be_finite_plain_json(key: Ed25519PrivateKey, bad: object) -> None:
    with pytest.raises(BundleError):
        sign_payload({"value": bad}, key)


@pytest.mark.parametrize("raw", [False, True])
def test_bundle_key_file_is_private_loadable_and_never_overwritten(tmp_path: Path, raw: bool) -> None:
    path = tmp_path / "rerun.key"
    key = generate_key(path, raw=raw)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert public_key_b64(load_private_key(path)) == public_key_b64(key)
    before = path.read_bytes()
    with pytest.raises(KeyFileError, match="refusing to overwrite"):
        generate_key(path)
    assert path.read_bytes() == before


def test_bundle_unreadable_key_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError):
        load_private_key(tmp_path / "missing")
    (tmp_path / "junk").write_bytes(b"not a key")
    with pytest.raises(KeyFileError):
        load_private_key(tmp_path / "junk")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(BundleError):
        read_bundle(tmp_path / "bad.json")
    assert json.loads(json.dumps(PAYLOAD)) == PAYLOAD
