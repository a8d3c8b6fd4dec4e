"""Search index: an entry per workload, implementation project, GPU and origin model, the
terms that find it, and the vocabulary that corrects near misses.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-09

Why: ``/search`` and its as-you-type suggestions (PRODUCT.md §6) must answer in a few
milliseconds at 10,000 workloads (§10), which scanning the records cannot do. The index is
an inverted index in plain tables, the same on SQLite and PostgreSQL, so both rank alike
and the models describe the whole schema (an FTS5 virtual table would add shadow tables
that no model can describe, and PostgreSQL would need a second design anyway).
``search_term`` is keyed term first, so a word or a word prefix is one range scan; on
SQLite it is a WITHOUT ROWID table, so that scan reads the key B-tree and nothing else.
``search_word`` holds each term once, for "did you mean".

On PostgreSQL two more indexes, which the models do not describe (``migrations/env.py``
keeps them out of ``alembic check``):
- ``search_term (term varchar_pattern_ops) INCLUDE (weight, entry_id)``: prefix ranges
  compare code points whatever the database's collation, as index-only scans;
- a ``pg_trgm`` GIN index on ``search_word.word``: "did you mean" finds similar words by
  trigram similarity. The extension is created if missing and left in place by the
  downgrade, since other objects of the database may use it by then.

The upgrade fills the index from the records already stored (nothing to do on a new
database); from then on the ingest keeps it current.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "search_entry",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("slug", sa.String(200), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("subtitle", sa.String(300), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_search_entry"),
        sa.UniqueConstraint("kind", "slug", name="uq_search_entry_kind_slug"),
    )
    op.create_table(
        "search_term",
        sa.Column("term", sa.String(64), nullable=False),
        sa.Column("entry_id", sa.Integer(), nullable=False),
        sa.Column("weight", sa.SmallInteger(), nullable=False),
        sa.PrimaryKeyConstraint("term", "entry_id", name="pk_search_term"),
        sa.ForeignKeyConstraint(
            ["entry_id"], ["search_entry.id"], name="fk_search_term_entry_id_search_entry", ondelete="CASCADE"
        ),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_search_term_entry_id", "search_term", ["entry_id"])
    op.create_table(
        "search_word",
        sa.Column("word", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("word", name="pk_search_word"),
    )

    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.execute(
            "CREATE INDEX ix_search_term_term_pattern ON search_term"
            " (term varchar_pattern_ops) INCLUDE (weight, entry_id)"
        )
        op.execute("CREATE INDEX ix_search_word_word_trgm ON search_word USING gin (word gin_trgm_ops)")

    # Imported here, not at the top: the backfill is the store's own rebuild, so the index
    # it writes is exactly the one the ingest maintains.
    from kernelindex.store.search import rebuild_index

    with Session(bind=op.get_bind()) as session:
        rebuild_index(session)
        session.flush()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_search_word_word_trgm", table_name="search_word")
        op.drop_index("ix_search_term_term_pattern", table_name="search_term")
    op.drop_table("search_word")
    op.drop_index("ix_search_term_entry_id", table_name="search_term")
    op.drop_table("search_term")
    op.drop_table("search_entry")
