"""On PostgreSQL, an index of each workload's tag list as text.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06

Why: the tag filter offers every tag of the catalogue, read from the distinct tag lists (427 of
them among 18,000 workloads on the AIConfigurator catalogue). PostgreSQL read every workload's
row for them: 15.5 ms of the 84 ms of ``/gpus/h200``. Along this index it steps from one list to
the next (``kernelindex.store.workloads.facet_values``): 2.2 ms. SQLite has ``ix_workload_tags``
(migration 0018) since; PostgreSQL has no btree for ``json``, hence the text form, with the list
itself included so that the index alone answers.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX ix_workload_tags_text ON workload ((tags::text)) INCLUDE (tags)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_workload_tags_text", table_name="workload")
