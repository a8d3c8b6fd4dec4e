"""An attribution line per source, shown wherever its figures are.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03

Why: openly licensed sources (MIT, BSD-2) ask for their copyright notice with any copy;
every page that shows a source's figures names the source and its licence in one line.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, not a batch copy: SQLite would have to drop ``source``, which runs and
# workloads refer to.
def upgrade() -> None:
    op.add_column("source", sa.Column("attribution", sa.Text(), server_default="", nullable=False))


def downgrade() -> None:
    op.drop_column("source", "attribution")
