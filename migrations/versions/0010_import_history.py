"""An ingestion report for the rerun bundles imported before imports were recorded.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03

Why: a source loaded by import (the controlled reruns) had no ingestion history, so its page
said "No ingestion yet" beside its runs. Imports now leave a report; this gives each source
whose bundles were imported earlier one report standing for those imports (from the first to
the last import, with the runs they added), so its history starts where its data does.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ORIGIN = "rerun bundles imported before imports were recorded"
UTC_TIMESTAMP = sa.DateTime(timezone=True)

report = sa.table(
    "ingestion_report",
    sa.column("source_id", sa.Integer),
    sa.column("origin", sa.String),
    sa.column("read_from", sa.String),
    sa.column("status", sa.String),
    sa.column("started_at", UTC_TIMESTAMP),
    sa.column("finished_at", UTC_TIMESTAMP),
    sa.column("counts", sa.JSON),
    sa.column("errors", sa.JSON),
    sa.column("drift", sa.JSON),
)
run = sa.table("run", sa.column("id", sa.Integer), sa.column("source_id", sa.Integer))
result = sa.table("rerun_result", sa.column("run_id", sa.Integer), sa.column("bundle_id", sa.Integer))
bundle = sa.table("rerun_bundle", sa.column("id", sa.Integer), sa.column("imported_at", UTC_TIMESTAMP))


def upgrade() -> None:
    connection = op.get_bind()
    unreported = ~sa.select(report.c.source_id).where(report.c.source_id == run.c.source_id).exists()
    imports = connection.execute(
        sa.select(
            run.c.source_id,
            sa.func.count(run.c.id).label("runs"),
            sa.func.min(bundle.c.imported_at).label("first"),
            sa.func.max(bundle.c.imported_at).label("last"),
        )
        .join(result, result.c.run_id == run.c.id)
        .join(bundle, bundle.c.id == result.c.bundle_id)
        .where(run.c.source_id.is_not(None), unreported)
        .group_by(run.c.source_id)
    ).all()
    if imports:
        op.bulk_insert(
            report,
            [
                {
                    "source_id": row.source_id,
                    "origin": ORIGIN,
                    "read_from": "import",
                    "status": "succeeded",
                    "started_at": row.first,
                    "finished_at": row.last,
                    "counts": {"added": {"run": row.runs}},
                    "errors": [],
                    "drift": [],
                }
                for row in imports
            ],
        )


def downgrade() -> None:
    op.execute(report.delete().where(report.c.origin == ORIGIN))
