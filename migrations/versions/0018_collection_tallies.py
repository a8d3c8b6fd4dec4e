"""Collection tallies, runs per workload and source, and each workload's headline, kept on write.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06

Why: home ranked every workload of the catalogue to find each collection's busiest (35 ms of SQL
at 17,000 workloads), counted every run to give each source's stored runs (18 ms at 220,000
runs) and walked every comparison group of the workloads it shows to find their headline runs;
a GPU page summed every workload's tally per source and decoded every workload's tags.

- ``collection_tally``: each collection's counts and busiest workloads, over every GPU and per
  GPU, recomputed by the transactions that change them (``kernelindex.store.collection_tallies``)
  along ``ix_workload_tally_busiest``, for which ``workload_tally`` copies each workload's source,
  collection and name;
- ``workload_tally.fastest_run_id``: each workload's fastest eligible run per GPU;
- ``workload_source_tally``: the runs each source holds of each workload;
- on SQLite, ``ix_workload_tags``: the tag filter's choices read from an index.

Every tally is filled here by the store's own recount.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CODE_POINT_NAME = sa.String(200, collation="C").with_variant(sa.String(200), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("workload_tally") as batch:
        batch.add_column(sa.Column("fastest_run_id", sa.Integer(), nullable=True))
        # Filled by the recount below, before any reader sees them.
        batch.add_column(sa.Column("source_id", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("collection", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("name", CODE_POINT_NAME, nullable=False, server_default=""))
    with op.batch_alter_table("workload_tally") as batch:
        batch.alter_column("source_id", server_default=None)
        batch.alter_column("collection", server_default=None)
        batch.alter_column("name", server_default=None)
    op.create_index(
        "ix_workload_tally_busiest",
        "workload_tally",
        ["source_id", "collection", "gpu_slug", sa.text("eligible_runs DESC"), sa.text("runs DESC"), "name"],
    )
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
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_collection_tally_source_id_source"),
        sa.PrimaryKeyConstraint("source_id", "collection", "gpu_slug", name="pk_collection_tally"),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.create_index("ix_workload_tags", "workload", ["tags"])
    # Imported here, not at the top: the fill is the store's own recount, so the rows it writes
    # are exactly those the writes maintain (the rules of ``kernelindex.ranking``).
    from kernelindex.store import collection_tallies, tallies

    with Session(bind=op.get_bind()) as session:
        # The runs per source in this revision's form (0020 adds their GPU and fills them again).
        tallies.recount(session, producers=False)
        collection_tallies.recount(session)
    op.execute(
        "INSERT INTO workload_source_tally (workload_id, source_id, runs) "
        "SELECT workload_id, source_id, count(*) FROM run WHERE source_id IS NOT NULL GROUP BY workload_id, source_id"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_workload_tags", table_name="workload")
    op.drop_table("collection_tally")
    op.drop_index("ix_workload_source_tally_source_id_runs", table_name="workload_source_tally")
    op.drop_table("workload_source_tally")
    op.drop_index("ix_workload_tally_busiest", table_name="workload_tally")
    with op.batch_alter_table("workload_tally") as batch:
        for column in ("name", "collection", "source_id", "fastest_run_id"):
            batch.drop_column(column)
