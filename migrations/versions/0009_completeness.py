"""How complete each source's data is: upstream totals per workload, and how each ingest read.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03

Why: a recorded snapshot holds part of an upstream (SOL-ExecBench's holds the top submissions
of each kernel's first page, 3 of kernel 4's 251). Pages state what is stored against what the
upstream counts, and whether it came from a snapshot (of which date, holding what) or from the
live upstream. Additive columns only. Ingests recorded before this revision are classed by
their origin: a snapshot's origin starts with "snapshot ", and a bundled snapshot's folder is
named after its source; any other was read live.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)


# Plain ALTER TABLE, not a batch copy: SQLite would have to drop ``workload``, which runs refer to.
def upgrade() -> None:
    op.add_column("workload", sa.Column("upstream_total", sa.Integer(), nullable=True))
    op.add_column("workload", sa.Column("upstream_total_observed_at", UTC_TIMESTAMP, nullable=True))
    op.add_column("source", sa.Column("run_noun", sa.String(32), server_default="runs", nullable=False))
    op.add_column("ingestion_report", sa.Column("read_from", sa.String(16), server_default="live", nullable=False))
    op.add_column("ingestion_report", sa.Column("snapshot_observed_at", UTC_TIMESTAMP, nullable=True))
    op.add_column("ingestion_report", sa.Column("snapshot_scope", sa.Text(), nullable=True))
    report = sa.table(
        "ingestion_report", sa.column("origin", sa.Text), sa.column("read_from", sa.String), sa.column("source_id")
    )
    source = sa.table("source", sa.column("id"), sa.column("slug", sa.String))
    op.execute(report.update().where(report.c.origin.like("snapshot %")).values(read_from="snapshot"))
    own_folder = sa.select(source.c.id).where(
        source.c.id == report.c.source_id, report.c.origin == sa.literal("snapshot ", sa.String) + source.c.slug
    )
    op.execute(report.update().where(own_folder.exists()).values(read_from="bundled"))


def downgrade() -> None:
    op.drop_column("ingestion_report", "snapshot_scope")
    op.drop_column("ingestion_report", "snapshot_observed_at")
    op.drop_column("ingestion_report", "read_from")
    op.drop_column("source", "run_noun")
    op.drop_column("workload", "upstream_total_observed_at")
    op.drop_column("workload", "upstream_total")
