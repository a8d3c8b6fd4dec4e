"""The search index: one entry per thing a reader can look for, and the words that find it.

The index is derived data. ``kernelindex.store.search`` builds it from the records, keeps
it current as records are ingested and can rebuild it from scratch at any time. It is two
plain tables on both backends (no SQLite FTS5 virtual table, whose shadow tables the ORM
could not describe), so both databases rank and suggest exactly alike.

- ``search_entry``: a workload, an implementation project, a GPU or an origin model, with
  what a result line shows. ``fingerprint`` hashes the entry and its terms, so a refresh
  that would write the same thing writes nothing.
- ``search_term``: an inverted index, one row per (term, entry), keyed term first so a
  term or a term prefix is one range scan; ``weight`` says which field the term came
  from (see ``kernelindex.store.search``).
- ``search_word``: every term the index has held, once: the vocabulary "did you mean"
  corrects from. Words are added as entries are written and pruned by a rebuild; one no
  longer in ``search_term`` is simply never proposed.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, SmallInteger, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kernelindex.db.base import Base

# Indexes that migration 0002 adds on PostgreSQL only: the models cannot describe operator
# classes portably, so ``migrations/env.py`` keeps autogenerate from proposing to drop them.
POSTGRESQL_ONLY_INDEXES = frozenset({"ix_search_term_term_pattern", "ix_search_word_word_trgm"})


class SearchEntry(Base):
    __tablename__ = "search_entry"
    __table_args__ = (UniqueConstraint("kind", "slug"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    slug: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(300))
    subtitle: Mapped[str] = mapped_column(String(300))
    fingerprint: Mapped[str] = mapped_column(String(32))


class SearchTerm(Base):
    __tablename__ = "search_term"
    # Without a rowid, SQLite stores the rows in the primary-key B-tree itself: a prefix
    # scan reads (term, entry_id, weight) in one pass, like a covering index.
    __table_args__ = {"sqlite_with_rowid": False}

    term: Mapped[str] = mapped_column(String(64), primary_key=True)
    entry_id: Mapped[int] = mapped_column(
        ForeignKey("search_entry.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    weight: Mapped[int] = mapped_column(SmallInteger)


class SearchWord(Base):
    __tablename__ = "search_word"

    word: Mapped[str] = mapped_column(String(64), primary_key=True)
