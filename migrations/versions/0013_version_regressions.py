"""Version regressions and the noise bound they were found with.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03

Why: AIConfigurator publishes the same kernels measured in several versions of each
framework; a newer version slower than an older one at some case is worth showing, on the
workload's per-case ranking and on ``/regressions``. Finding them means reading every case
result of every run (about 12 M at full scale), which no page may do per request: the store
computes them into ``version_regression`` when a source is ingested, with the noise bound of
``regression_noise``. Both tables are derived and start empty; ``refresh_regressions``
fills them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "version_regression",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("comparison_key", sa.String(71), nullable=False),
        sa.Column("gpu_slug", sa.String(200), nullable=False),
        sa.Column("framework", sa.String(64), nullable=False),
        sa.Column("kernel", sa.String(300), nullable=False),
        sa.Column("case_index", sa.Integer(), nullable=False),
        sa.Column("newer_run_id", sa.Integer(), nullable=False),
        sa.Column("newer_version", sa.String(300), nullable=False),
        sa.Column("newer_latency_ns", sa.BigInteger(), nullable=False),
        sa.Column("older_run_id", sa.Integer(), nullable=False),
        sa.Column("older_version", sa.String(300), nullable=False),
        sa.Column("older_latency_ns", sa.BigInteger(), nullable=False),
        sa.Column("slowdown", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_version_regression"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_version_regression_source_id_source"),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], name="fk_version_regression_workload_id_workload"),
        sa.ForeignKeyConstraint(["newer_run_id"], ["run.id"], name="fk_version_regression_newer_run_id_run"),
        sa.ForeignKeyConstraint(["older_run_id"], ["run.id"], name="fk_version_regression_older_run_id_run"),
    )
    op.create_index("ix_version_regression_source_id", "version_regression", ["source_id"])
    op.create_index("ix_version_regression_newer_run_id", "version_regression", ["newer_run_id"])
    op.create_index("ix_version_regression_workload_id_case_index", "version_regression", ["workload_id", "case_index"])
    op.create_index("ix_version_regression_slowdown_id", "version_regression", ["slowdown", "id"])
    op.create_index("ix_version_regression_gpu_slug_slowdown_id", "version_regression", ["gpu_slug", "slowdown", "id"])
    op.create_index(
        "ix_version_regression_framework_slowdown_id", "version_regression", ["framework", "slowdown", "id"]
    )
    op.create_index(
        "ix_version_regression_gpu_slug_framework_slowdown_id",
        "version_regression",
        ["gpu_slug", "framework", "slowdown", "id"],
    )
    op.create_table(
        "regression_noise",
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("bound", sa.Double(), nullable=False),
        sa.Column("pairs", sa.Integer(), nullable=False),
        sa.Column("estimated", sa.Boolean(), nullable=False),
        sa.Column("method", sa.Text(), nullable=False),
        sa.Column("computed_at", UTC_TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("source_id", name="pk_regression_noise"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_regression_noise_source_id_source"),
    )


def downgrade() -> None:
    op.drop_table("regression_noise")
    op.drop_index("ix_version_regression_gpu_slug_framework_slowdown_id", table_name="version_regression")
    op.drop_index("ix_version_regression_framework_slowdown_id", table_name="version_regression")
    op.drop_index("ix_version_regression_gpu_slug_slowdown_id", table_name="version_regression")
    op.drop_index("ix_version_regression_slowdown_id", table_name="version_regression")
    op.drop_index("ix_version_regression_workload_id_case_index", table_name="version_regression")
    op.drop_index("ix_version_regression_newer_run_id", table_name="version_regression")
    op.drop_index("ix_version_regression_source_id", table_name="version_regression")
    op.drop_table("version_regression")
