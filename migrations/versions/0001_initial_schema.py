"""Initial schema: sources, workloads and cases, the four manifest kinds runs refer to,
runs, manifest history, accounts, attestations, reports and ingestion reports.

Revision ID: 0001
Revises:
Create Date: 2026-12-02

Why: the first schema of the registry. Every manifest-backed table carries the same four
columns (name, digest, manifest_json, created/updated times) so that any record can be
served, digested and traced through ``manifest_version`` the same way. Timestamps are
timezone-aware UTC; latencies are integer nanoseconds (BIGINT).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)
DIGEST = sa.String(71)


def manifest_columns(table: str) -> list[sa.Column[object] | sa.UniqueConstraint]:
    """The columns and constraints every manifest-backed table shares."""
    return [
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("digest", DIGEST, nullable=False),
        sa.Column("manifest_json", sa.Text(), nullable=False),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("updated_at", UTC_TIMESTAMP, nullable=False),
        sa.UniqueConstraint("name", name=f"uq_{table}_name"),
    ]


def index_digest(table: str) -> None:
    op.create_index(f"ix_{table}_digest", table, ["digest"])


def upgrade() -> None:
    op.create_table(
        "source",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("url", sa.String(500), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("licence", sa.Text(), nullable=False),
        sa.Column("last_observed_at", UTC_TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_source"),
        sa.UniqueConstraint("slug", name="uq_source_slug"),
    )

    op.create_table(
        "workload",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(64), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("origin_model", sa.String(200), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("case_count", sa.Integer(), nullable=False),
        sa.Column("sol_aggregate_ms", sa.Double(), nullable=True),
        sa.Column("missing_since", UTC_TIMESTAMP, nullable=True),
        sa.Column("last_seen_at", UTC_TIMESTAMP, nullable=True),
        *manifest_columns("workload"),
        sa.PrimaryKeyConstraint("id", name="pk_workload"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_workload_source_id_source"),
        sa.UniqueConstraint("source_id", "external_id", name="uq_workload_source_id_external_id"),
    )
    index_digest("workload")
    op.create_index("ix_workload_collection", "workload", ["collection"])
    op.create_index("ix_workload_origin_model", "workload", ["origin_model"])

    op.create_table(
        "workload_case",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("axes", sa.JSON(), nullable=False),
        sa.Column("baseline_latency_ms", sa.Double(), nullable=True),
        sa.Column("sol_latency_ms", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_workload_case"),
        sa.ForeignKeyConstraint(
            ["workload_id"], ["workload.id"], name="fk_workload_case_workload_id_workload", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("workload_id", "position", name="uq_workload_case_workload_id_position"),
    )

    op.create_table(
        "implementation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project", sa.String(300), nullable=False),
        sa.Column("project_slug", sa.String(200), nullable=False),
        sa.Column("revision", sa.String(300), nullable=False),
        sa.Column("runtime", sa.String(300), nullable=True),
        sa.Column("license", sa.String(300), nullable=True),
        sa.Column("source_available", sa.Boolean(), nullable=False),
        sa.Column("has_install_recipe", sa.Boolean(), nullable=False),
        *manifest_columns("implementation"),
        sa.PrimaryKeyConstraint("id", name="pk_implementation"),
    )
    index_digest("implementation")
    op.create_index("ix_implementation_project_slug", "implementation", ["project_slug"])

    op.create_table(
        "protocol",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("family", sa.String(64), nullable=False),
        sa.Column("harness_name", sa.String(300), nullable=False),
        sa.Column("harness_version", sa.String(300), nullable=False),
        *manifest_columns("protocol"),
        sa.PrimaryKeyConstraint("id", name="pk_protocol"),
    )
    index_digest("protocol")

    op.create_table(
        "environment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("gpu_slug", sa.String(200), nullable=False),
        sa.Column("gpu_product", sa.String(300), nullable=False),
        sa.Column("architecture", sa.String(300), nullable=True),
        *manifest_columns("environment"),
        sa.PrimaryKeyConstraint("id", name="pk_environment"),
    )
    index_digest("environment")
    op.create_index("ix_environment_gpu_slug", "environment", ["gpu_slug"])

    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=True),
        sa.Column("external_id", sa.String(64), nullable=True),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("implementation_id", sa.Integer(), nullable=False),
        sa.Column("protocol_id", sa.Integer(), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("comparison_key", DIGEST, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("evidence", sa.String(16), nullable=False),
        sa.Column("primary_statistic", sa.String(32), nullable=False),
        sa.Column("latency_ns", sa.BigInteger(), nullable=False),
        sa.Column("sol_score", sa.Double(), nullable=True),
        sa.Column("observed_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("upstream_withdrawn", sa.Boolean(), nullable=False),
        sa.Column("upstream_withdrawn_reason", sa.Text(), nullable=True),
        sa.Column("held_for_review", sa.Boolean(), nullable=False),
        sa.Column("withdrawn_at", UTC_TIMESTAMP, nullable=True),
        sa.Column("withdrawn_reason", sa.Text(), nullable=True),
        sa.Column("missing_since", UTC_TIMESTAMP, nullable=True),
        sa.Column("last_seen_at", UTC_TIMESTAMP, nullable=True),
        *manifest_columns("run"),
        sa.PrimaryKeyConstraint("id", name="pk_run"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_run_source_id_source"),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], name="fk_run_workload_id_workload"),
        sa.ForeignKeyConstraint(
            ["implementation_id"], ["implementation.id"], name="fk_run_implementation_id_implementation"
        ),
        sa.ForeignKeyConstraint(["protocol_id"], ["protocol.id"], name="fk_run_protocol_id_protocol"),
        sa.ForeignKeyConstraint(["environment_id"], ["environment.id"], name="fk_run_environment_id_environment"),
        sa.UniqueConstraint("source_id", "external_id", name="uq_run_source_id_external_id"),
    )
    index_digest("run")
    # Serves the leaderboard: one workload's comparison group, fastest first.
    op.create_index("ix_run_leaderboard", "run", ["workload_id", "comparison_key", "latency_ns"])
    op.create_index("ix_run_implementation_id", "run", ["implementation_id"])
    op.create_index("ix_run_environment_id", "run", ["environment_id"])

    op.create_table(
        "manifest_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("digest", DIGEST, nullable=False),
        sa.Column("manifest_json", sa.Text(), nullable=False),
        sa.Column("recorded_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("superseded_at", UTC_TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_manifest_version"),
        sa.UniqueConstraint("kind", "name", "digest", name="uq_manifest_version_kind_name_digest"),
    )
    op.create_index("ix_manifest_version_digest", "manifest_version", ["digest"])

    op.create_table(
        "user_account",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("handle", sa.String(32), nullable=False),
        sa.Column("password_hash", sa.String(300), nullable=False),
        sa.Column("is_maintainer", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_user_account"),
        sa.UniqueConstraint("handle", name="uq_user_account_handle"),
    )

    op.create_table(
        "attestation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("hidden_reason", sa.Text(), nullable=True),
        *manifest_columns("attestation"),
        sa.PrimaryKeyConstraint("id", name="pk_attestation"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name="fk_attestation_run_id_run"),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"], name="fk_attestation_user_id_user_account"),
    )
    index_digest("attestation")
    op.create_index("ix_attestation_run_id", "attestation", ["run_id"])
    op.create_index("ix_attestation_user_id", "attestation", ["user_id"])

    op.create_table(
        "report",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("resolved_at", UTC_TIMESTAMP, nullable=True),
        sa.Column("resolved_by_id", sa.Integer(), nullable=True),
        sa.Column("resolution_note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_report"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name="fk_report_run_id_run"),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"], name="fk_report_user_id_user_account"),
        sa.ForeignKeyConstraint(["resolved_by_id"], ["user_account.id"], name="fk_report_resolved_by_id_user_account"),
    )
    op.create_index("ix_report_run_id", "report", ["run_id"])
    op.create_index("ix_report_state", "report", ["state"])

    op.create_table(
        "ingestion_report",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("origin", sa.String(500), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("finished_at", UTC_TIMESTAMP, nullable=True),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("drift", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ingestion_report"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_ingestion_report_source_id_source"),
    )
    op.create_index("ix_ingestion_report_source_id", "ingestion_report", ["source_id"])


def downgrade() -> None:
    # Children before parents, so every foreign key still resolves while its table exists.
    for table in (
        "ingestion_report",
        "report",
        "attestation",
        "user_account",
        "manifest_version",
        "run",
        "environment",
        "protocol",
        "implementation",
        "workload_case",
        "workload",
        "source",
    ):
        op.drop_table(table)
