"""The bundled reruns' ``checked.json``: checked in full once, trusted only for the exact bytes it pins."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.ingest.reruns.importer import (
    BUNDLED_KEYS_FILE,
    CHECKED_FILE,
    CheckedFile,
    check_bundle_files,
    checked_list_text,
    import_bundle_files,
    import_bundled_reruns,
    load_approved_keys,
    read_checked_list,
)
from kernelindex.ingest.snapshot import SnapshotError, verify_checksums
from kernelindex.paths import BUNDLED_RERUNS
from kernelindex.rerun.bundle import key_id, public_key_raw
from tests.rerun_bundles import approved_keys, make_payload, resign_with_tampering, signed


def test_the_checked_list_is_what_checking_every_bundle_in_full_gives() -> None:
    """Every bundle's signature and figures checked again, as on a first start before the list: a
    bundle, a check or a key changed without writing the list again fails here."""
    files = sorted((BUNDLED_RERUNS / "bundles").glob("*.json"))
    found = check_bundle_files(files, load_approved_keys(BUNDLED_RERUNS / BUNDLED_KEYS_FILE).public_keys)
    refused = {path.name: result for path, result in found.items() if isinstance(result, str)}
    assert not refused, list(refused.items())[:3]
    passed = {path: result for path, result in found.items() if isinstance(result, CheckedFile)}
    assert (BUNDLED_RERUNS / CHECKED_FILE).read_text() == checked_list_text(BUNDLED_RERUNS, passed), (
        "fixtures/reruns/checked.json is stale: write it again with "
        "`python -c 'from kernelindex.ingest.reruns.importer import write_checked_list; "
        "from kernelindex.paths import BUNDLED_RERUNS; write_checked_list(BUNDLED_RERUNS)'`"
    )
    assert set(read_checked_list(BUNDLED_RERUNS)) == set(files)
    # The list is pinned by the dataset's MANIFEST.sha256, as every bundle is.
    assert f"  {CHECKED_FILE}" in (BUNDLED_RERUNS / "MANIFEST.sha256").read_text()
    assert verify_checksums(BUNDLED_RERUNS) == len(files) + 2  # the bundles, the keys and the list


def test_an_edited_checked_list_is_refused_before_anything_is_read(loaded_db, tmp_path: Path) -> None:
    copy = tmp_path / "reruns"
    shutil.copytree(BUNDLED_RERUNS, copy)
    listing = copy / CHECKED_FILE
    listing.write_text(listing.read_text().replace('"sha256": "', '"sha256": "0', 1))
    with pytest.raises(SnapshotError, match="does not match"):
        import_bundled_reruns(loaded_db.sessions, copy)


def test_a_listed_file_is_trusted_only_for_the_bytes_and_key_listed(loaded_db, tmp_path: Path) -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    kid = key_id(public_key_raw(key.public_key()))
    good = signed(make_payload(), key)

    def tamper(payload: dict) -> None:
        payload["cases"][0]["timing"]["medianNs"] += 1

    tampered = resign_with_tampering(good, key, tamper)
    path = tmp_path / "bundle.json"
    path.write_bytes(tampered)
    approved = approved_keys(lab=(key, other))

    def imported(listed: CheckedFile) -> str | None:
        results = import_bundle_files(loaded_db.sessions, [path], approved, checked={path: listed})
        return results[0].error

    # Listed as the good file's bytes: these bytes differ, so they are checked in full, and refused.
    error = imported(CheckedFile(hashlib.sha256(good).hexdigest(), kid))
    assert error is not None and "does not follow from its samples" in error
    # Listed with another key than the one that signed it: refused.
    other_kid = key_id(public_key_raw(other.public_key()))
    error = imported(CheckedFile(hashlib.sha256(tampered).hexdigest(), other_kid))
    assert error is not None and "not signed by" in error
    # The exact bytes with their key: read as checked (the list, pinned by MANIFEST.sha256, vouches).
    assert imported(CheckedFile(hashlib.sha256(tampered).hexdigest(), kid)) is None
