"""Accounts: API keys, the audit log, rate-limit counters and the generated session secret.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

Why: signing in, API keys with scopes, and limits on writes. Rate-limit counters live in
the database (one row per key and window) so that several worker processes share them
when no Redis is configured. The session-signing secret is generated on first start and
kept here, so a deployment needs no secret in a file and every worker signs alike; an
explicit KERNELINDEX_SECRET_KEY overrides it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_key",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("label", sa.String(100), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.Column("last_used_at", UTC_TIMESTAMP, nullable=True),
        sa.Column("revoked_at", UTC_TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_key"),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"], name="fk_api_key_user_id_user_account"),
        sa.UniqueConstraint("prefix", name="uq_api_key_prefix"),
    )
    op.create_index("ix_api_key_user_id", "api_key", ["user_id"])

    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(300), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
        sa.ForeignKeyConstraint(["actor_id"], ["user_account.id"], name="fk_audit_log_actor_id_user_account"),
    )
    op.create_index("ix_audit_log_created_at", "audit_log", ["created_at"])

    op.create_table(
        "rate_limit_counter",
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "window_start", name="pk_rate_limit_counter"),
    )

    op.create_table(
        "app_secret",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.String(200), nullable=False),
        sa.Column("created_at", UTC_TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_app_secret"),
    )


def downgrade() -> None:
    for table in ("app_secret", "rate_limit_counter", "audit_log", "api_key"):
        op.drop_table(table)
