"""Runner keys approved for operators' accounts: a maintainer approves one in /admin, naming who the
operator is and the machine, and revokes it; an upload (``POST /api/v1/reruns``) is taken only from
the account its signing key was approved for, while the key is unrevoked.

The runs an approved key signs are credited to the account's operator, ``account:<handle>``: never the
identity of the registry's own runner (``runner-keys.json`` names ``kernelindex``), so two operators'
agreeing reruns on two GPUs can be independent (``ranking.independent``).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session, aliased

from kernelindex.accounts.text import control_character_problem
from kernelindex.db.rerun_tables import RerunBundle, RerunResult, RunnerKey
from kernelindex.db.tables import Run, Workload
from kernelindex.rerun.bundle import ALGORITHM, FORMAT, key_id
from kernelindex.store.accounts import User, audit, find_user, now
from kernelindex.store.moderation import ModerationError

MAX_OPERATOR_NAME = 200
MAX_MACHINE = 300
OPERATOR_PREFIX = "account:"


def operator_id(handle: str) -> str:
    """The operator a key approved for the account ``handle`` signs as, on its runs."""
    return f"{OPERATOR_PREFIX}{handle}"


@dataclass(frozen=True)
class RunnerKeyRow:
    key_id: str
    public_key: str
    user_id: int
    handle: str  # the operator's account
    operator: str  # ``operator_id(handle)``: what the key's runs are credited to
    operator_name: str
    machine: str
    approved_by: str
    approved_at: datetime
    revoked_at: datetime | None
    revoked_by: str | None


def _rows(session: Session, *where: ColumnElement[bool]) -> list[RunnerKeyRow]:
    owner, approver, revoker = aliased(User), aliased(User), aliased(User)
    rows = session.execute(
        select(RunnerKey, owner.handle, approver.handle, revoker.handle)
        .join(owner, owner.id == RunnerKey.user_id)
        .join(approver, approver.id == RunnerKey.approved_by_id)
        .outerjoin(revoker, revoker.id == RunnerKey.revoked_by_id)
        .where(*where)
        .order_by(RunnerKey.approved_at.desc(), RunnerKey.id.desc())
    )
    return [
        RunnerKeyRow(
            key_id=key.key_id,
            public_key=key.public_key,
            user_id=key.user_id,
            handle=handle,
            operator=operator_id(handle),
            operator_name=key.operator_name,
            machine=key.machine,
            approved_by=approved_by,
            approved_at=key.approved_at,
            revoked_at=key.revoked_at,
            revoked_by=revoked_by,
        )
        for key, handle, approved_by, revoked_by in rows
    ]


def runner_keys(session: Session) -> list[RunnerKeyRow]:
    """Every approved key, revoked ones included, newest approval first."""
    return _rows(session)


def runner_key(session: Session, kid: str) -> RunnerKeyRow | None:
    """The approved key with this key id (revoked or not); None where no maintainer approved it."""
    found = _rows(session, RunnerKey.key_id == kid)
    return found[0] if found else None


def _field(value: str, limit: int, missing: str) -> str:
    """``value`` stripped; ``ModerationError`` where it is empty, too long or holds a control character."""
    value = value.strip()
    if not value:
        raise ModerationError(missing)
    if len(value) > limit:
        raise ModerationError(f"Keep it to {limit:,} characters; this is {len(value):,}.")
    if problem := control_character_problem(value):
        raise ModerationError(f"The text {problem}; type it again without them.")
    return value


def public_key_id(public_key: str) -> tuple[str, str]:
    """``(key id, base64 public key)`` of a raw 32-byte Ed25519 public key written in base64."""
    text = public_key.strip()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ModerationError(
            "The public key is not base64: paste the publicKey of the runner's key (runner-keys.json or a bundle's "
            "signature), 44 characters ending in '='."
        ) from None
    if len(raw) != 32:
        raise ModerationError(f"The public key is {len(raw)} bytes; an Ed25519 public key is 32 bytes.")
    return key_id(raw), base64.b64encode(raw).decode("ascii")


def approve_runner_key(
    session: Session, maintainer: User, handle: str, public_key: str, operator_name: str, machine: str
) -> RunnerKeyRow:
    """Approve a runner key for the account ``handle``; ``ModerationError`` names what cannot be taken."""
    kid, key = public_key_id(public_key)
    account = find_user(session, handle.strip()) if handle.strip() else None
    if account is None:
        raise ModerationError(
            f"There is no account {handle.strip()!r}: the operator signs up first, then you approve their key.", 404
        )
    name = _field(operator_name, MAX_OPERATOR_NAME, "Say who the operator is: a name and affiliation.")
    where = _field(machine, MAX_MACHINE, "Name the machine the key measures on: its GPU and host.")
    earlier = runner_key(session, kid)
    if earlier is not None and earlier.revoked_at is not None:
        raise ModerationError(
            f"The key {kid} was approved for {earlier.handle} and revoked on {earlier.revoked_at:%Y-%m-%d}; a revoked "
            "key is never approved again: the operator makes a new key.",
            409,
        )
    if earlier is not None:
        raise ModerationError(f"The key {kid} is already approved, for {earlier.handle}.", 409)
    session.add(
        RunnerKey(
            key_id=kid,
            public_key=key,
            user_id=account.id,
            operator_name=name,
            machine=where,
            approved_by_id=maintainer.id,
            approved_at=now(),
        )
    )
    session.flush()
    audit(session, maintainer, "runner_key.approve", f"{kid} for {account.handle}", f"{name}; machine: {where}")
    approved = runner_key(session, kid)
    assert approved is not None
    return approved


def revoke_runner_key(session: Session, maintainer: User, kid: str, reason: str) -> RunnerKeyRow:
    """Revoke an approved key: every later upload it signs is refused; its runs stay."""
    why = _field(reason, 500, "Give a reason for revoking the key (the audit log keeps it).")
    key = session.scalar(select(RunnerKey).where(RunnerKey.key_id == kid))
    if key is None:
        raise ModerationError(f"No approved runner key has the id {kid!r}.", 404)
    if key.revoked_at is not None:
        raise ModerationError(f"The key {kid} is already revoked.", 409)
    key.revoked_at, key.revoked_by_id = now(), maintainer.id
    session.flush()
    audit(session, maintainer, "runner_key.revoke", kid, why)
    revoked = runner_key(session, kid)
    assert revoked is not None
    return revoked


# --- Uploads ------------------------------------------------------------------------------

KEY_ID_PATTERN = "^ed25519:[0-9a-f]{16}$"
# The shape of a bundle (``rerun.bundle``), checked before anything else; the API documents it.
BUNDLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["format", "payload", "signature"],
    "additionalProperties": False,
    "properties": {
        "format": {"type": "string", "enum": [FORMAT]},
        "payload": {"type": "object", "description": "what the runner measured, as it signed it"},
        "signature": {
            "type": "object",
            "required": ["algorithm", "keyId", "publicKey", "value"],
            "additionalProperties": False,
            "properties": {
                "algorithm": {"type": "string", "enum": [ALGORITHM]},
                "keyId": {"type": "string", "pattern": KEY_ID_PATTERN},
                "publicKey": {"type": "string"},
                "value": {"type": "string"},
            },
        },
    },
}


def shape_problem(document: Any) -> str | None:
    """What keeps ``document`` from having a bundle's shape (``BUNDLE_SCHEMA``), or None."""
    if not isinstance(document, dict) or set(document) != set(BUNDLE_SCHEMA["required"]):
        return "a JSON object of format, payload and signature"
    if document["format"] != FORMAT:
        return f"its format is {FORMAT!r}"
    if not isinstance(document["payload"], dict):
        return "its payload is an object"
    signature = document["signature"]
    fields = BUNDLE_SCHEMA["properties"]["signature"]["required"]
    if not isinstance(signature, dict) or set(signature) != set(fields):
        return f"its signature is an object of {', '.join(fields)}"
    if not all(isinstance(signature[field], str) for field in fields) or signature["algorithm"] != ALGORITHM:
        return f"its signature's fields are text, its algorithm {ALGORITHM!r}"
    if not re.fullmatch(KEY_ID_PATTERN, signature["keyId"]):
        return "its signature's keyId is ed25519: and 16 hex digits"
    return None


def bundles_of_workload(session: Session, workload: str) -> list[tuple[str, str]]:
    """``(bundle id, bundle text)`` of every rerun stored under the workload named ``workload``."""
    rows = session.execute(
        select(RerunBundle.bundle_id, RerunBundle.bundle_json)
        .join(RerunResult, RerunResult.bundle_id == RerunBundle.id)
        .join(Run, Run.id == RerunResult.run_id)
        .join(Workload, Workload.id == Run.workload_id)
        .where(Workload.name == workload)
        .order_by(RerunBundle.id)
    )
    return [(bundle_id, text) for bundle_id, text in rows]


class UploadRefused(Exception):
    """An uploaded bundle refused by one check, named by ``check``, with the HTTP status it is answered
    with; nothing of it was written."""

    def __init__(self, status: int, check: str, detail: str):
        super().__init__(detail)
        self.status, self.check, self.detail = status, check, detail


@dataclass(frozen=True)
class Uploaded:
    """An uploaded bundle, stored: the suite run it became, and the operator it is credited to."""

    bundle_id: str
    run_name: str
    key_id: str
    operator: str
