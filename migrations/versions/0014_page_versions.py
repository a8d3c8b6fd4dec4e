"""Page versions by what a page shows, instead of one catalogue version.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05

Why: with one number for the whole catalogue, every write (an attestation on one run, the
ingest of one kernel) made every worker drop every cached page. ``page_version`` holds a
number per scope a page can depend on (``workload:<id>``, ``run:<id>``, ``source:<id>``,
``lists``, ``attestations``, ``all``), each the sequence number of the last write that
changed it; the ``seq`` row holds the last number given out. The index on ``seq`` lets a
worker read everything changed since the last number it has seen (``kernelindex.store.version``).
Nothing is carried over: every page cached under the old number is dropped when a worker
restarts on this revision anyway.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "page_version",
        sa.Column("scope", sa.String(80), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("scope", name="pk_page_version"),
    )
    op.create_index("ix_page_version_seq", "page_version", ["seq"])
    # The sequence's row exists from the start, so that two first writers queue on its lock.
    op.bulk_insert(table, [{"scope": "seq", "seq": 0}])
    op.drop_table("catalogue_state")


def downgrade() -> None:
    table = op.create_table(
        "catalogue_state",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_catalogue_state"),
    )
    op.bulk_insert(table, [{"id": 1, "version": 1}, {"id": 2, "version": 1}])
    op.drop_index("ix_page_version_seq", table_name="page_version")
    op.drop_table("page_version")
