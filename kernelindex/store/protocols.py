"""Benchmark protocols as their page shows them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Protocol, Run


@dataclass(frozen=True)
class ProtocolSummary:
    """A stored protocol, its current manifest and how many runs were measured under it."""

    name: str
    title: str
    digest: str
    manifest_json: str
    run_count: int


def protocol_by_name(session: Session, name: str) -> ProtocolSummary | None:
    protocol = session.scalar(select(Protocol).where(Protocol.name == name))
    if protocol is None:
        return None
    run_count = session.scalar(select(func.count()).select_from(Run).where(Run.protocol_id == protocol.id)) or 0
    return ProtocolSummary(protocol.name, protocol.title, protocol.digest, protocol.manifest_json, run_count)
