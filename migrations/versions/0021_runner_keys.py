"""Runner keys approved for operators' accounts.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07

Why: operators other than the registry upload signed rerun bundles through the API. A maintainer
approves each operator's runner key for one account in /admin, stating who the operator is and the
machine; an upload is accepted only when its signing key is approved, unrevoked, for the uploading
account. The registry's own keys stay in its configured keys file.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "runner_key",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("operator_name", sa.String(200), nullable=False),
        sa.Column("machine", sa.String(300), nullable=False),
        sa.Column("approved_by_id", sa.Integer(), nullable=False),
        sa.Column("approved_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("revoked_at", UTC_TIMESTAMP, nullable=True),
        sa.Column("revoked_by_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_runner_key"),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"], name="fk_runner_key_user_id_user_account"),
        sa.ForeignKeyConstraint(
            ["approved_by_id"], ["user_account.id"], name="fk_runner_key_approved_by_id_user_account"
        ),
        sa.ForeignKeyConstraint(
            ["revoked_by_id"], ["user_account.id"], name="fk_runner_key_revoked_by_id_user_account"
        ),
        sa.UniqueConstraint("key_id", name="uq_runner_key_key_id"),
    )
    op.create_index("ix_runner_key_user_id", "runner_key", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_runner_key_user_id", table_name="runner_key")
    op.drop_table("runner_key")
