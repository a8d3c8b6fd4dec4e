"""Run counts per workload and GPU, kept on write.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05

Why: home, ``/workloads``, GPU pages and search counted every run of the catalogue on each
render (hundreds of milliseconds at 200,000 runs, seconds at a million). ``workload_tally``
holds, per workload, its runs and eligible runs on each GPU and on every GPU together (the row
whose ``gpu_slug`` is empty), with its best SOL score; each writing transaction recomputes the
rows of the workloads it changed (``kernelindex.store.tallies``). Filled here from the runs.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The SQL form of kernelindex.store.reads.eligible() as of this revision.
ELIGIBLE = (
    "r.status = 'passed' AND r.withdrawn_at IS NULL AND r.upstream_withdrawn = false "
    "AND r.held_for_review = false AND (r.review_state IS NULL OR r.review_state != 'rejected')"
)


def upgrade() -> None:
    op.create_table(
        "workload_tally",
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("gpu_slug", sa.String(200), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("eligible_runs", sa.Integer(), nullable=False),
        sa.Column("best_sol", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], name="fk_workload_tally_workload_id_workload"),
        sa.PrimaryKeyConstraint("workload_id", "gpu_slug", name="pk_workload_tally"),
    )
    op.create_index("ix_workload_tally_gpu_slug_workload_id", "workload_tally", ["gpu_slug", "workload_id"])
    counted = f"count(*), sum(CASE WHEN {ELIGIBLE} THEN 1 ELSE 0 END), max(CASE WHEN {ELIGIBLE} THEN r.sol_score END)"
    op.execute(
        "INSERT INTO workload_tally (workload_id, gpu_slug, runs, eligible_runs, best_sol) "
        f"SELECT r.workload_id, e.gpu_slug, {counted} FROM run r JOIN environment e ON e.id = r.environment_id "
        "GROUP BY r.workload_id, e.gpu_slug "
        f"UNION ALL SELECT r.workload_id, '', {counted} FROM run r GROUP BY r.workload_id"
    )


def downgrade() -> None:
    op.drop_index("ix_workload_tally_gpu_slug_workload_id", table_name="workload_tally")
    op.drop_table("workload_tally")
