"""Indexes that let home and the completeness line read workloads without their rows.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05

Why: a workload row carries its manifest, so the queries that count workloads per collection,
rank each collection's busiest and sum each source's upstream counts read every row's pages.
Two covering indexes give them what they read: (source, collection, name) and (source, upstream
count, when it was read).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_workload_source_id_collection_name", "workload", ["source_id", "collection", "name"])
    op.create_index(
        "ix_workload_source_id_upstream_total",
        "workload",
        ["source_id", "upstream_total", "upstream_total_observed_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_workload_source_id_upstream_total", table_name="workload")
    op.drop_index("ix_workload_source_id_collection_name", table_name="workload")
