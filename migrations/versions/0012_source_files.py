"""The files an ingest read whole, by content digest.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

Why: AIConfigurator's database is 736 Parquet files and 12.6 M rows; an ingest that finds a
file it already stored (same path, same sha256) need not read it again, so running the same
package version twice writes nothing and a newer one reads only what changed.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "source_file",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(500), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_source_file_source_id_source"),
        sa.PrimaryKeyConstraint("id", name="pk_source_file"),
        sa.UniqueConstraint("source_id", "path", name="uq_source_file_source_id_path"),
    )


def downgrade() -> None:
    op.drop_table("source_file")
