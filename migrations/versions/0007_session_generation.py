"""A session generation per account, so that signing out ends every copy of a session.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

Why: a session is a signed cookie; without anything on the server side, a copy saved
before sign-out kept working until it expired (14 days). The cookie now carries the
account's ``session_generation``; sign-out bumps it, and every request that reads the
account compares the two in the store, so the check holds on every worker.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("user_account") as batch:
        batch.add_column(sa.Column("session_generation", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("user_account") as batch:
        batch.drop_column("session_generation")
