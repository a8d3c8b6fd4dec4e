"""Runs per workload and source, and each collection's counts and busiest workloads, kept on write.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06

Why: home ranked every workload of the catalogue to find each collection's busiest (35 ms of SQL
at 17,000 workloads) and counted every run to give each source's stored runs (18 ms at 220,000
runs). ``collection_tally`` holds each collection's counts and busiest workloads, over every GPU
and per GPU; ``workload_source_tally`` the runs each source holds of each workload; and
``workload_tally.fastest_run_id`` each workload's headline run, which home found by walking every
comparison group of the workloads it shows. The transactions that write runs or workloads
recompute the rows they change (``kernelindex.store.tallies``, ``kernelindex.store.collection_tallies``).
Filled here.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workload_source_tally",
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], name="fk_workload_source_tally_workload_id_workload"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_workload_source_tally_source_id_source"),
        sa.PrimaryKeyConstraint("workload_id", "source_id", name="pk_workload_source_tally"),
    )
    op.create_index("ix_workload_source_tally_source_id_runs", "workload_source_tally", ["source_id", "runs"])
    op.create_table(
        "collection_tally",
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("gpu_slug", sa.String(200), nullable=False),
        sa.Column("workloads", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("eligible_runs", sa.Integer(), nullable=False),
        sa.Column("measured", sa.Integer(), nullable=False),
        sa.Column("busiest", sa.JSON(), nullable=False),
        sa.Column("first_by_name", sa.JSON(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_collection_tally_source_id_source"),
        sa.PrimaryKeyConstraint("source_id", "collection", "gpu_slug", name="pk_collection_tally"),
    )
    op.add_column("workload_tally", sa.Column("fastest_run_id", sa.Integer(), nullable=True))
    # Imported here, not at the top: the fill is the store's own recount, so the rows it writes
    # are exactly those the writes maintain (the rules of ``kernelindex.ranking``).
    from kernelindex.store import collection_tallies, tallies

    with Session(bind=op.get_bind()) as session:
        tallies.recount(session)
        collection_tallies.recount(session)


def downgrade() -> None:
    with op.batch_alter_table("workload_tally") as batch:
        batch.drop_column("fastest_run_id")
    op.drop_table("collection_tally")
    op.drop_index("ix_workload_source_tally_source_id_runs", table_name="workload_source_tally")
    op.drop_table("workload_source_tally")
