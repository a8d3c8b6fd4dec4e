"""Users, API keys and the audit log."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from kernelindex.accounts.passwords import DUMMY_HASH, hash_password, verify_password
from kernelindex.db.account_tables import ApiKey, AuditEntry
from kernelindex.db.tables import User as User  # the account row the store returns, for its callers' annotations

HANDLE = re.compile(r"^[A-Za-z0-9_-]{2,32}$")
SCOPES = ("read", "attest", "reruns", "submissions:write")
KEY_PREFIX = "ki_"


class AccountError(ValueError):
    """A request about an account that cannot be met; the message says why."""


def handle_problem(handle: str) -> str | None:
    if not HANDLE.fullmatch(handle):
        return "A handle is 2 to 32 letters, digits, dashes or underscores."
    return None


def find_user(session: Session, handle: str) -> User | None:
    return session.scalar(select(User).where(func.lower(User.handle) == handle.lower()))


def create_user(session: Session, handle: str, password: str, maintainer: bool = False) -> User:
    """Raises ``AccountError`` if the handle is malformed or taken (case-insensitively)."""
    if problem := handle_problem(handle):
        raise AccountError(problem)
    if find_user(session, handle) is not None:
        raise AccountError(f"The handle {handle!r} is taken.")
    user = User(handle=handle, password_hash=hash_password(password), is_maintainer=maintainer, created_at=now())
    session.add(user)
    session.flush()
    return user


def authenticate(session: Session, handle: str, password: str) -> User | None:
    user = find_user(session, handle) if HANDLE.fullmatch(handle) else None
    if user is None:
        verify_password(DUMMY_HASH, password)  # same work, so timing does not reveal handles
        return None
    return user if verify_password(user.password_hash, password) else None


def session_user(session: Session, user_id: int, generation: object) -> User | None:
    """The account a signed session names, if the session is still live: ``generation`` is the
    account's ``session_generation`` when the session began, and ``end_sessions`` has not run since."""
    user = session.get(User, user_id)
    if user is None or not isinstance(generation, int) or generation != user.session_generation:
        return None
    return user


def end_sessions(session: Session, user: User) -> None:
    """End every session of ``user``, on every worker: the cookies they hold name an old generation."""
    session.execute(update(User).where(User.id == user.id).values(session_generation=User.session_generation + 1))
    session.refresh(user)


def now() -> datetime:
    return datetime.now(UTC)


def _key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_api_key(session: Session, user: User, label: str, scopes: list[str]) -> tuple[ApiKey, str]:
    """A new key and its secret text, which is shown once and never stored."""
    if not scopes or any(scope not in SCOPES for scope in scopes):
        raise AccountError(f"Choose one or more scopes of: {', '.join(SCOPES)}.")
    label = label.strip()
    if not 1 <= len(label) <= 100:
        raise AccountError("Give the key a label of 1 to 100 characters, so you can tell your keys apart.")
    # NUL above all: PostgreSQL refuses it in text, so it would fail the write, not the form.
    if any(ord(character) < 32 or character == "\x7f" for character in label):
        raise AccountError("The label contains control characters; type it again without them.")
    prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    key = ApiKey(
        user_id=user.id,
        prefix=prefix,
        key_hash=_key_hash(secret),
        label=label,
        scopes=sorted(set(scopes)),
        created_at=now(),
    )
    session.add(key)
    session.flush()
    return key, secret


def api_keys(session: Session, user: User) -> list[ApiKey]:
    return list(session.scalars(select(ApiKey).where(ApiKey.user_id == user.id).order_by(ApiKey.created_at.desc())))


def revoke_api_key(session: Session, user: User, key_id: int) -> ApiKey:
    key = session.get(ApiKey, key_id)
    if key is None or key.user_id != user.id:
        raise AccountError("You have no such key.")
    if key.revoked_at is None:
        key.revoked_at = now()
    return key


def user_for_api_key(session: Session, secret: str, scope: str) -> User | None:
    """The user a key belongs to, if the key exists, is not revoked and has ``scope``."""
    match = re.fullmatch(rf"{KEY_PREFIX}([0-9a-f]{{12}})_[A-Za-z0-9_-]{{20,}}", secret)
    if match is None:
        return None
    key = session.scalar(select(ApiKey).where(ApiKey.prefix == match[1]))
    if key is None or key.revoked_at is not None or scope not in key.scopes:
        return None
    if not secrets.compare_digest(key.key_hash, _key_hash(secret)):
        return None
    key.last_used_at = now()
    return session.get(User, key.user_id)


def audit(session: Session, actor: User | None, action: str, target: str, reason: str | None = None) -> None:
    session.add(
        AuditEntry(actor_id=actor.id if actor else None, action=action, target=target, reason=reason, created_at=now())
    )
