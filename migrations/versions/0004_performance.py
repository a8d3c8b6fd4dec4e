"""The catalogue version: one counter that every write to the public catalogue increases.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

Why: rendered pages and JSON are cached in each worker process and served without
touching the catalogue tables. A worker knows its cache is current by reading this one
integer per request; every transaction that changes what a public page shows (ingest,
attestations, moderation) increases it in the same transaction, so a reader never sees the
new data under the old number. Several workers stay correct without talking to each other.

Also two indexes in the API's keyset orders of runs (latency, name) and (observed, name):
without them, the first page of /api/v1/runs sorts the whole run table.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "catalogue_state",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_catalogue_state"),
    )
    # 1: the catalogue; 2: attestations and reports (shown on fewer pages, written more often).
    op.bulk_insert(table, [{"id": 1, "version": 1}, {"id": 2, "version": 1}])
    op.create_index("ix_run_latency_ns_name", "run", ["latency_ns", "name"])
    op.create_index("ix_run_observed_at_name", "run", ["observed_at", "name"])


def downgrade() -> None:
    op.drop_index("ix_run_observed_at_name", table_name="run")
    op.drop_index("ix_run_latency_ns_name", table_name="run")
    op.drop_table("catalogue_state")
