"""A maintainer's decision on a run held for review: released or rejected, when, and why.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03

Why: a run faster than its suite's speed-of-light bound is held out of the rankings until
a maintainer looks at it; the decision and its note are shown on the run page and must
outlive a re-ingest of the same run.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, not a batch copy: SQLite would have to drop ``run``, which results,
# attestations and reports refer to.
def upgrade() -> None:
    op.add_column("run", sa.Column("review_state", sa.String(16), nullable=True))
    op.add_column("run", sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("run", sa.Column("review_note", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("run", "review_note")
    op.drop_column("run", "reviewed_at")
    op.drop_column("run", "review_state")
