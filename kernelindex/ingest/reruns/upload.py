"""One bundle uploaded by an operator's account (``POST /api/v1/reruns``), checked as the importer
checks a file, and stored in the caller's transaction, or refused by one named check.

The checks, cheapest first; each refusal is an ``UploadRefused`` naming its check:

- ``bundle-json`` (400): the body is not a UTF-8 JSON object with a signature naming its key;
- ``runner-key-approved``, ``runner-key-account``, ``runner-key-revoked`` (403): the signing key must
  be approved by a maintainer for the uploading account, and not revoked;
- ``signature`` (422): the bundle's public key is the approved one and its signature covers the payload;
- ``replay``, ``re-signed``, ``bundle-id`` (409): a bundle with the same id is stored: the same payload
  under the same key (a replay), the same payload signed again by another key, or another payload;
- ``copied-samples`` (409): a stored bundle of the workload holds every one of its raw samples;
- ``payload``, ``protocol``, ``figures``, ``claims`` (422): ``reruns.checked_bundle``, as for any import:
  the payload's form, a published protocol, every figure recomputed from the raw samples, the GPU's
  datasheet;
- ``workload`` (422): the registry has the workload the bundle names, with the same cases.

The bundle's own signature decides what it proves: the uploading account only has to be the one its
key was approved for. Its runs are credited to the account's operator (``runner_keys.operator_id``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from kernelindex.ingest.reruns import BundleRefused, checked_bundle, parse_bundle, signed_payload
from kernelindex.ingest.reruns.importer import Operator, import_bundle
from kernelindex.rerun.bundle import BundleError, canonical_bytes
from kernelindex.store.accounts import User, audit
from kernelindex.store.reruns import bundle_text, stored_bundle
from kernelindex.store.runner_keys import (
    Uploaded,
    UploadRefused,
    bundles_of_workload,
    operator_id,
    runner_key,
    shape_problem,
)

# What each of the importer's named checks is answered with: the body cannot be read (400), or it
# was read and its content is refused (422).
STATUS = {"json": 400, "size": 413}


def upload_bundle(session: Session, data: bytes, user: User) -> Uploaded:
    """Check ``data`` (one bundle) and write it in ``session``'s transaction, which the caller commits;
    ``UploadRefused`` (nothing written) names the check it failed."""
    try:
        return _upload(session, data, user)
    except BundleRefused as exc:
        raise UploadRefused(STATUS.get(exc.check, 422), exc.check, str(exc)) from exc


def _upload(session: Session, data: bytes, user: User) -> Uploaded:
    try:
        document = parse_bundle(data)
    except BundleRefused as exc:
        raise UploadRefused(400, "bundle-json", str(exc)) from exc
    if (problem := shape_problem(document)) is not None:
        raise UploadRefused(400, "bundle-json", f"The body must be one bundle as the runner writes it: {problem}.")
    kid: str = document["signature"]["keyId"]
    key = runner_key(session, kid)
    if key is None:
        raise UploadRefused(
            403, "runner-key-approved", f"The bundle is signed by {kid[:80]}, a key no maintainer approved for uploads."
        )
    if key.user_id != user.id:
        raise UploadRefused(
            403,
            "runner-key-account",
            f"The key {kid} is approved for another account; upload its bundles with that account's API key.",
        )
    if key.revoked_at is not None:
        raise UploadRefused(
            403, "runner-key-revoked", f"The key {kid} was revoked on {key.revoked_at:%Y-%m-%d}; it signs nothing now."
        )
    document, raw_payload = signed_payload(data, {kid: key.public_key})
    if _holds_nul(raw_payload):
        # PostgreSQL stores no NUL in text: refused here, by name, rather than failing the write.
        raise UploadRefused(422, "payload", "The signed payload holds a NUL character, which no field may contain.")
    _refuse_stored(session, raw_payload, kid)
    _refuse_copied(session, raw_payload)
    verified = checked_bundle(data, document, raw_payload)
    operator = Operator(key.operator, key.operator_name, key.approved_by)
    try:
        outcome = import_bundle(session, verified, datetime.now(UTC), operator)
    except BundleError as exc:
        raise UploadRefused(422, "workload", str(exc)) from exc
    assert outcome.run_name is not None  # a new bundle (``_refuse_stored``) becomes a new run
    audit(session, user, "rerun.upload", f"bundle {outcome.bundle_id}", f"run {outcome.run_name}, signed by {kid}")
    return Uploaded(outcome.bundle_id, outcome.run_name, kid, operator_id(user.handle))


def _samples(payload: Any) -> bytes | None:
    """The raw samples of every case, in order, as canonical JSON; None where the payload has none to compare."""
    cases = payload.get("cases") if isinstance(payload, dict) else None
    if not isinstance(cases, list) or not cases:
        return None
    samples = [case.get("timing", {}).get("samplesNs") if isinstance(case, dict) else None for case in cases]
    if any(not isinstance(case, list) or not case for case in samples):
        return None
    try:
        return canonical_bytes({"samples": samples})
    except BundleError:
        return None  # not plain JSON: the payload check refuses it


def _refuse_copied(session: Session, raw_payload: dict[str, Any]) -> None:
    """Refuse a bundle whose raw samples, every one, are those of a stored bundle of the workload: timings
    in nanoseconds are never measured twice alike, so it is the same measurement under a new id (which,
    signed by another operator's key, would make a rerun look independently replicated)."""
    workload = raw_payload.get("workload")
    slug = workload.get("slug") if isinstance(workload, dict) else None
    mine = _samples(raw_payload)
    if not isinstance(slug, str) or mine is None:
        return
    for bundle_id, text in bundles_of_workload(session, slug):
        if _samples(parse_bundle(text.encode("utf-8"))["payload"]) == mine:
            raise UploadRefused(
                409,
                "copied-samples",
                f"Every raw sample of this bundle is one of the stored bundle {bundle_id}'s: the same measurement "
                "under a new id is not a second measurement.",
            )


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


def _refuse_stored(session: Session, raw_payload: dict[str, Any], kid: str) -> None:
    """Refuse a bundle whose id is stored already: replayed, signed again by another key, or reused."""
    bundle_id = raw_payload.get("bundleId")
    # An id of another form is refused by the payload check; looked up, a NUL would fail PostgreSQL's query.
    if not isinstance(bundle_id, str) or re.fullmatch(r"[0-9a-f]{32}", bundle_id) is None:
        return
    stored = bundle_text(session, bundle_id)
    if stored is None:
        return
    earlier = parse_bundle(stored.encode("utf-8"))
    if canonical_bytes(earlier["payload"]) != canonical_bytes(raw_payload):
        raise UploadRefused(
            409, "bundle-id", f"Another bundle with the id {bundle_id} is stored; a bundle's id names one measurement."
        )
    if earlier["signature"]["keyId"] == kid:
        found = stored_bundle(session, bundle_id)
        where = f", as the run {found.run_name}" if found is not None and found.run_name else ""
        raise UploadRefused(409, "replay", f"The bundle {bundle_id} is stored already{where}; it is not stored twice.")
    raise UploadRefused(
        409,
        "re-signed",
        f"The bundle {bundle_id} is stored already, signed by {earlier['signature']['keyId']}; the same measurement "
        "signed again by another key is not a second measurement.",
    )
