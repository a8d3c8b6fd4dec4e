"""Controlled reruns: signed bundles, per-suite results and case-scoped runs.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

Why: a rerun's suite figure is an ordinary run row, but its evidence (the signed bundle
with raw samples) and its case-by-case figures (case-scoped BenchmarkRun manifests with
their roofline bounds) need a home of their own, kept whole so anyone can verify again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "rerun_bundle",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bundle_id", sa.String(64), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("file_sha256", sa.String(64), nullable=False),
        sa.Column("machine_id", sa.String(300), nullable=False),
        sa.Column("started_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("finished_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("imported_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("bundle_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_rerun_bundle"),
        sa.UniqueConstraint("bundle_id", name="uq_rerun_bundle_bundle_id"),
    )
    op.create_index("ix_rerun_bundle_key_id", "rerun_bundle", ["key_id"])

    op.create_table(
        "rerun_result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("bundle_id", sa.Integer(), nullable=False),
        sa.Column("bound_ns", sa.BigInteger(), nullable=False),
        sa.Column("cases_passed", sa.Integer(), nullable=False),
        sa.Column("case_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_rerun_result"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name="fk_rerun_result_run_id_run"),
        sa.ForeignKeyConstraint(["bundle_id"], ["rerun_bundle.id"], name="fk_rerun_result_bundle_id_rerun_bundle"),
        sa.UniqueConstraint("run_id", name="uq_rerun_result_run_id"),
    )
    op.create_index("ix_rerun_result_bundle_id", "rerun_result", ["bundle_id"])

    op.create_table(
        "rerun_case",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("digest", sa.String(71), nullable=False),
        sa.Column("manifest_json", sa.Text(), nullable=False),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("updated_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("bound_ns", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_rerun_case"),
        sa.ForeignKeyConstraint(["result_id"], ["rerun_result.id"], name="fk_rerun_case_result_id_rerun_result"),
        sa.UniqueConstraint("name", name="uq_rerun_case_name"),
        sa.UniqueConstraint("result_id", "position", name="uq_rerun_case_result_id_position"),
    )
    op.create_index("ix_rerun_case_digest", "rerun_case", ["digest"])


def downgrade() -> None:
    for table in ("rerun_case", "rerun_result", "rerun_bundle"):
        op.drop_table(table)
