"""Benchmark protocols as their page shows them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Protocol, Run
from kernelindex.store.rerun_protocols import published_rerun_protocol


@dataclass(frozen=True)
class ProtocolSummary:
    """A stored protocol, its current manifest and how many runs were measured under it."""

    name: str
    title: str
    digest: str
    manifest_json: str
    run_count: int


def protocol_by_name(session: Session, name: str) -> ProtocolSummary | None:
    """A stored protocol; else a published rerun protocol no bundle has used yet (with no runs)."""
    protocol = session.scalar(select(Protocol).where(Protocol.name == name))
    if protocol is None:
        published = published_rerun_protocol(name)
        if published is None:
            return None
        return ProtocolSummary(name, published.metadata.title or name, published.digest, published.text, 0)
    run_count = session.scalar(select(func.count()).select_from(Run).where(Run.protocol_id == protocol.id)) or 0
    return ProtocolSummary(protocol.name, protocol.title, protocol.digest, protocol.manifest_json, run_count)
