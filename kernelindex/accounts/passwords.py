"""Password hashing with Argon2id (argon2-cffi's defaults follow RFC 9106's recommendations)."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
MIN_LENGTH = 10
MAX_LENGTH = 256


def password_problem(password: str) -> str | None:
    """Why a new password is refused, or ``None``."""
    if len(password) < MIN_LENGTH:
        return f"Use at least {MIN_LENGTH} characters."
    if len(password) > MAX_LENGTH:
        return f"Use at most {MAX_LENGTH} characters."
    return None


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


# Verified against when the handle is unknown, so a sign-in takes as long either way.
DUMMY_HASH = _hasher.hash("not a password anyone has")
