"""The session-signing secret: configured, or generated once and kept in the store."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.account_tables import AppSecret

SESSION_SECRET = "session-signing-key"


def session_secret(sessions: sessionmaker[Session]) -> str:
    """The generated secret, created on first use; every worker of one store reads the same."""
    with sessions() as session:
        found = session.get(AppSecret, SESSION_SECRET)
        if found is not None:
            return found.value
    try:
        with sessions.begin() as session:
            value = secrets.token_urlsafe(48)
            session.add(AppSecret(name=SESSION_SECRET, value=value, created_at=datetime.now(UTC)))
        return value
    except IntegrityError:
        # Another worker created it first: use theirs.
        with sessions() as session:
            return session.get_one(AppSecret, SESSION_SECRET).value
