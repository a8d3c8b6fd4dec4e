"""The files an ingest read whole, by content digest; GPU datasheets and names, by source.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

Why: AIConfigurator's database is 736 Parquet files and 12.6 M rows; an ingest that finds a
file it already stored (same path, same sha256) need not read it again, so running the same
package version twice writes nothing and a newer one reads only what changed. And a GPU page
says where each source's name for it comes from (a device string, a system folder, an
architecture and compute-unit count), since sources name GPUs differently, and shows the
datasheet figures a source publishes for it (AIConfigurator's systems/<system>.yaml).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("source", sa.Column("gpu_naming", sa.Text(), nullable=False, server_default=""))
    op.create_table(
        "gpu_datasheet",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("gpu_slug", sa.String(200), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("figures", sa.JSON(), nullable=False),
        sa.Column("reference", sa.Text(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_gpu_datasheet_source_id_source"),
        sa.PrimaryKeyConstraint("id", name="pk_gpu_datasheet"),
        sa.UniqueConstraint("gpu_slug", "source_id", name="uq_gpu_datasheet_gpu_slug_source_id"),
    )
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
    op.drop_table("gpu_datasheet")
    op.drop_table("source_file")
    op.drop_column("source", "gpu_naming")
