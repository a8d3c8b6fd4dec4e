"""Submitted runs waiting for review, and what the review decided.

A submission keeps the document exactly as sent (``document_json``) and the digests the checks
worked out; an accepted one names the run it became. Nothing is deleted: a rejected submission
keeps its reason, one sent back for changes keeps the maintainer's note, and every decision is
also in the audit log.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from kernelindex.db.base import Base
from kernelindex.db.tables import DIGEST, Run, User, Workload


class SubmissionRecord(Base):
    __tablename__ = "submission"
    __table_args__ = (
        # The review queue, oldest first, and the duplicate check by run digest.
        Index("ix_submission_status_submitted_at", "status", "submitted_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # The public id in URLs and the API's answer: random, so that ids say nothing of how many there are.
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    submitter_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    # "pending", "accepted", "rejected" or "changes-requested".
    status: Mapped[str] = mapped_column(String(24))
    document_json: Mapped[str] = mapped_column(Text)
    run_digest: Mapped[str] = mapped_column(DIGEST, index=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workload.id"))
    workload_digest: Mapped[str] = mapped_column(DIGEST)
    submitted_at: Mapped[datetime]
    reviewed_at: Mapped[datetime | None]
    reviewer_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    # The maintainer's reason for a rejection, their note on a request for changes or an acceptance.
    review_note: Mapped[str | None] = mapped_column(Text)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("run.id"), unique=True)

    submitter: Mapped[User] = relationship(foreign_keys=[submitter_id])
    reviewer: Mapped[User | None] = relationship(foreign_keys=[reviewer_id])
    workload: Mapped[Workload] = relationship()
    run: Mapped[Run | None] = relationship()
