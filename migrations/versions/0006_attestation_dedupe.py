"""Attestations: a double-submit key and an idempotency key, both unique per account.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

Why: the double-submit guard read earlier rows, then inserted, so parallel identical posts
all passed it (ten parallel API posts stored three rows). The database now refuses the
duplicate: ``dedupe_key`` (the SHA-256 of the type and the normalised body, kept while the
statement is within the guard's window) is unique per account and run. ``idempotency_key``
holds an API client's ``Idempotency-Key`` header, unique per account, so a retried post is
answered with the row it made instead of writing a second. Both are NULL for earlier rows,
and NULLs never collide, so no backfill is needed.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("attestation") as batch:
        batch.add_column(sa.Column("dedupe_key", sa.String(64), nullable=True))
        batch.add_column(sa.Column("idempotency_key", sa.String(200), nullable=True))
        batch.create_unique_constraint("uq_attestation_user_id_run_id_dedupe_key", ["user_id", "run_id", "dedupe_key"])
        batch.create_unique_constraint("uq_attestation_user_id_idempotency_key", ["user_id", "idempotency_key"])


def downgrade() -> None:
    with op.batch_alter_table("attestation") as batch:
        batch.drop_constraint("uq_attestation_user_id_idempotency_key", type_="unique")
        batch.drop_constraint("uq_attestation_user_id_run_id_dedupe_key", type_="unique")
        batch.drop_column("idempotency_key")
        batch.drop_column("dedupe_key")
