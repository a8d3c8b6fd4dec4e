"""Submitted runs and their review.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07

Why: anyone with an account may submit a run (``POST /api/v1/submissions``, ``/submit``); it waits
in the maintainers' review queue, and an accepted one becomes a run of the "submissions" source.
A submission keeps the document as sent, the digests the checks found, its state and the review's
note and reviewer; decisions are also in the audit log. The table is new, so the downgrade drops it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "submission",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("public_id", sa.String(32), nullable=False),
        sa.Column("submitter_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("document_json", sa.Text(), nullable=False),
        sa.Column("run_digest", sa.String(71), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("workload_digest", sa.String(71), nullable=False),
        sa.Column("submitted_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("reviewed_at", UTC_TIMESTAMP, nullable=True),
        sa.Column("reviewer_id", sa.Integer(), nullable=True),
        sa.Column("review_note", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["submitter_id"], ["user_account.id"], name="fk_submission_submitter_id_user_account"),
        sa.ForeignKeyConstraint(["reviewer_id"], ["user_account.id"], name="fk_submission_reviewer_id_user_account"),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], name="fk_submission_workload_id_workload"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name="fk_submission_run_id_run"),
        sa.PrimaryKeyConstraint("id", name="pk_submission"),
        sa.UniqueConstraint("public_id", name="uq_submission_public_id"),
        sa.UniqueConstraint("run_id", name="uq_submission_run_id"),
    )
    op.create_index("ix_submission_submitter_id", "submission", ["submitter_id"])
    op.create_index("ix_submission_run_digest", "submission", ["run_digest"])
    op.create_index("ix_submission_status_submitted_at", "submission", ["status", "submitted_at"])


def downgrade() -> None:
    op.drop_index("ix_submission_status_submitted_at", table_name="submission")
    op.drop_index("ix_submission_run_digest", table_name="submission")
    op.drop_index("ix_submission_submitter_id", table_name="submission")
    op.drop_table("submission")
