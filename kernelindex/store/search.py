"""Search (PRODUCT.md §6 ``/search``): ranked results, as-you-type suggestions, "did you mean".

What is indexed, one entry each (``kernelindex.db.search_tables``):

- a workload, of any source: its slug, title and upstream (definition) name (weight
  ``NAME``); collection, tags and origin model (``ALIAS``); description (``TEXT``);
- an implementation project (one entry per project, not per revision), a GPU and an
  origin model: their names and slugs (``NAME``), a GPU's architecture (``ALIAS``), a
  project's runtimes (``ALIAS``) and its revisions and implementations' names (``TEXT``),
  their trailing digits and number-only words left out ("submission-16893" gives
  "submission"; "max-autotune, torch 2.5.0" gives "max", "autotune", "torch"), so a new
  revision seldom changes the entry and the revisions are read grouped, not one by one.

Each result names the sources its records come from (``SearchHit.sources``), read when
it is shown, so the index holds nothing that another source's ingest could leave stale.

Text becomes terms by one rule for documents and queries alike: Unicode-folded (accents
dropped, case folded) runs of letters and digits. Names also give their camel-case parts
("NAFNet": "naf", "net") and the joins of short neighbouring words ("layer norm":
"layernorm"), so either spelling finds them. A query is only ever turned into such terms,
then bound as parameters: no character of it reaches SQL or an operator syntax, whatever
it holds.

Ranking is the same on SQLite and PostgreSQL: an entry scores, per query term, the weight
of its best matching term (doubled for a whole-word match over a prefix match); entries
that match every query term come first. Near misses are corrected from the index's own
vocabulary by edit distance, candidates found by prefix ranges on SQLite and by trigram
similarity (``pg_trgm``) on PostgreSQL.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    or_,
    select,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, load_only

from kernelindex import urls
from kernelindex.db.search_tables import SearchEntry, SearchTerm, SearchWord
from kernelindex.db.tables import Environment, Implementation, Run, Source, Workload
from kernelindex.manifests import Implementation as ImplementationManifest
from kernelindex.slugs import slugify
from kernelindex.store.batch import Batch
from kernelindex.store.bulk import insert_rows
from kernelindex.store.manifests import workload_manifest
from kernelindex.store.schemas import OnGpuItem, SearchHitItem, SearchResponse, SourceRefItem, WorkloadItem
from kernelindex.store.version import mark_changed

KINDS = ("workload", "implementation", "gpu", "model")
PAGE_URLS = {"workload": urls.workload, "implementation": urls.implementation, "gpu": urls.gpu, "model": urls.model}
API_URLS = {
    "workload": urls.api_workload,
    "implementation": urls.api_implementation,
    "gpu": urls.api_gpu,
    "model": urls.api_model,
}

# Where a term came from. A whole-word match counts double a prefix match.
NAME, ALIAS, TEXT = 8, 4, 1

MAX_QUERY_CHARS = 1000  # the web layer allows 200; this bounds the work for any caller
MAX_QUERY_TERMS = 8
MAX_TERM_CHARS = 64  # the width of search_term.term
FEW_HITS = 3  # fewer full matches than this and "did you mean" looks for a correction

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Joined with a neighbour only when both are short ("rms norm", "kv cache", "sm 100").
_JOINABLE = 6
# Words too common to find anything by: neither indexed nor searched for.
STOP_WORDS = frozenset({"a", "an", "and", "by", "for", "of", "or", "the", "to", "via", "with"})


@dataclass(frozen=True)
class HitSource:
    slug: str
    name: str


@dataclass(frozen=True)
class SearchHit:
    kind: str  # "workload" | "implementation" | "gpu" | "model"
    slug: str
    title: str
    subtitle: str
    url: str  # "/workloads/{slug}", "/implementations/{slug}", "/gpus/{slug}", "/models/{slug}"
    sources: tuple[HitSource, ...] = ()  # by name; given by ``search``, not by ``suggest``


@dataclass(frozen=True)
class SearchResults:
    query: str
    hits: list[SearchHit]
    did_you_mean: str | None


# --- Text to terms ------------------------------------------------------------------


def fold(text: str) -> str:
    """Accents dropped and case folded: "Ångström" → "angstrom"."""
    if text.isascii():
        return text.casefold()  # nothing to decompose: most text, read far faster
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    """The terms of a text, in order: folded runs of letters and digits, cut to the column width."""
    return [word[:MAX_TERM_CHARS] for word in _WORD.findall(fold(text))]


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query but its stop words, in order, at most ``MAX_QUERY_TERMS`` of them."""
    terms = dict.fromkeys(word for word in words(text[:MAX_QUERY_CHARS]) if word not in STOP_WORDS)
    return list(terms)[:MAX_QUERY_TERMS]


@dataclass
class Terms:
    """The terms of one entry, each with the weight of the best field it came from."""

    weights: dict[str, int] = field(default_factory=dict)

    def add(self, text: str | None, weight: int, name: bool = False) -> Terms:
        if not text:
            return self
        found = words(text)
        for word in found:
            self._put(word, weight)
            if word.isdigit() and word.lstrip("0") and word != word.lstrip("0"):
                self._put(word.lstrip("0"), weight)  # "040" is found by "40" too
        if name:
            for raw in _WORD.findall(text):
                for part in _CAMEL.split(raw):
                    self._put(fold(part)[:MAX_TERM_CHARS], weight)
            for first, second in pairwise(found):
                if len(first) <= _JOINABLE and len(second) <= _JOINABLE and not {first, second} & STOP_WORDS:
                    self._put(first + second, weight)
        return self

    def _put(self, term: str, weight: int) -> None:
        if term and term not in STOP_WORDS and self.weights.get(term, 0) < weight:
            self.weights[term] = weight


# --- Entries ------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    kind: str
    slug: str
    title: str
    subtitle: str
    terms: Mapping[str, int]

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the terms: equal fingerprints, nothing to rewrite in ``search_term``."""
        content = json.dumps(sorted(self.terms.items()), ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(content.encode()).hexdigest()[:32]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def workload_entry(workload: Workload, upstream_name: str | None = None) -> Entry:
    """A workload's entry; ``upstream_name`` (the definition's name) is read from its manifest if not given."""
    if upstream_name is None:
        upstream_name = workload_manifest(workload).spec.definition.name
    terms = Terms().add(workload.title, NAME, name=True).add(workload.name, NAME).add(upstream_name, NAME, name=True)
    terms.add(workload.collection, ALIAS, name=True).add(workload.origin_model, ALIAS, name=True)
    for tag in workload.tags:
        terms.add(str(tag), ALIAS, name=True)
    terms.add(workload.description, TEXT)
    details = [workload.collection, workload.origin_model, _plural(workload.case_count, "case")]
    subtitle = " · ".join(part for part in details if part)
    return Entry("workload", workload.name, workload.title, subtitle[:300], terms.weights)


def _name_entry(
    kind: str, slug: str, title: str, subtitle: str, extra: Iterable[str] = (), text: Iterable[str] = ()
) -> Entry:
    terms = Terms().add(title, NAME, name=True).add(slug, NAME)
    for alias in extra:
        terms.add(alias, ALIAS, name=True)
    for words_of_text in text:
        terms.add(words_of_text, TEXT, name=True)
    return Entry(kind, slug, title[:300], subtitle[:300], terms.weights)


def _without_numbers(text: str) -> str:
    """The words of ``text`` that are not all digits, as a name: "torch 2.5." → "torch"."""
    return " ".join(word for word in _WORD.findall(text) if not word.isdigit())


@lru_cache(maxsize=4096)
def _model_slug(model: str) -> str:
    return slugify(model, fallback="")


# The statements of the writing side, built once: an ingest runs them for every batch.
_MODEL_SPELLINGS = (
    select(Workload.origin_model, func.count())
    .where(Workload.origin_model.is_not(None))
    .group_by(Workload.origin_model)
)
_GPUS = select(Environment.gpu_slug, Environment.gpu_product, Environment.architecture).order_by(
    Environment.gpu_slug, Environment.gpu_product
)
_PROJECT_SPELLINGS = select(Implementation.project_slug, func.min(Implementation.project)).group_by(
    Implementation.project_slug
)
# A project's revisions grouped by their texts without trailing digits ("submission-16893" and
# "submission-16894" are one row), the same on SQLite and PostgreSQL.
_DIGITS = "0123456789"
_REVISION_TEXTS = (
    Implementation.project_slug,
    func.rtrim(Implementation.name, _DIGITS),
    func.rtrim(Implementation.revision, _DIGITS),
    Implementation.runtime,
)
_ALL_REVISIONS = select(*_REVISION_TEXTS, func.count()).group_by(*_REVISION_TEXTS)
_REVISIONS = _ALL_REVISIONS.where(Implementation.project_slug.in_(bindparam("slugs", expanding=True)))
# Counted from the index on project_slug alone: the rows themselves (manifests) are not read.
_REVISION_COUNTS = (
    select(Implementation.project_slug, func.count())
    .where(Implementation.project_slug.in_(bindparam("slugs", expanding=True)))
    .group_by(Implementation.project_slug)
)
_STORED_PROJECT_TERMS = (
    select(SearchEntry.slug, SearchTerm.term, SearchTerm.weight)
    .join(SearchTerm, SearchTerm.entry_id == SearchEntry.id)
    .where(SearchEntry.kind == "implementation", SearchEntry.slug.in_(bindparam("slugs", expanding=True)))
)
_STORED_TITLES = select(SearchEntry.slug, SearchEntry.title).where(
    SearchEntry.kind == bindparam("kind"), SearchEntry.slug.in_(bindparam("slugs", expanding=True))
)
_STORED = select(
    SearchEntry.kind, SearchEntry.slug, SearchEntry.id, SearchEntry.title, SearchEntry.subtitle, SearchEntry.fingerprint
)
_STORED_BY_KIND = _STORED.where(SearchEntry.kind.in_(bindparam("kinds", expanding=True)))
_STORED_BY_KEY = _STORED.where(tuple_(SearchEntry.kind, SearchEntry.slug).in_(bindparam("keys", expanding=True)))
_DELETE_TERMS = delete(SearchTerm).where(SearchTerm.entry_id.in_(bindparam("ids", expanding=True)))
_DELETE_ENTRIES = delete(SearchEntry).where(SearchEntry.id.in_(bindparam("ids", expanding=True)))
_UPDATE_ENTRY = update(SearchEntry).where(SearchEntry.id == bindparam("entry_id"))
_INSERT_ENTRIES = insert(SearchEntry).returning(SearchEntry.id, sort_by_parameter_order=True)
_STALE_WORKLOADS = select(SearchEntry.id).where(
    SearchEntry.kind == "workload", SearchEntry.slug.not_in(select(Workload.name))
)


def model_entries(session: Session, only: str | None = None) -> list[Entry]:
    """One entry per origin model (by slug, spellings merged), with its number of workloads.

    ``only`` builds just the entry of that model slug (an empty list if no workload has it).
    """
    spellings: dict[str, Counter[str]] = {}
    for model, count in session.connection().execute(_MODEL_SPELLINGS):
        assert model is not None  # the statement leaves out workloads without a model
        slug = _model_slug(model)
        if slug and (only is None or slug == only):
            spellings.setdefault(slug, Counter())[model] += count
    entries = []
    for slug, names in spellings.items():
        title = min(names, key=lambda name: (-names[name], name))  # the most used spelling
        entries.append(_name_entry("model", slug, title, _plural(names.total(), "workload")))
    return entries


def gpu_entries(session: Session) -> list[Entry]:
    """One entry per GPU (by slug), with its architecture and number of environments."""
    products: dict[str, str] = {}
    architectures: dict[str, set[str]] = {}
    environments: Counter[str] = Counter()
    for slug, product, architecture in session.connection().execute(_GPUS):
        products.setdefault(slug, product)
        architectures.setdefault(slug, set()).update([architecture] if architecture else [])
        environments[slug] += 1
    entries = []
    for slug, product in products.items():
        known = sorted(architectures[slug])
        subtitle = " · ".join([*known, _plural(environments[slug], "environment")])
        entries.append(_name_entry("gpu", slug, product, subtitle, known))
    return entries


@dataclass
class _Revisions:
    """What a project's revisions add to its entry: their count and their words but numbers."""

    count: int = 0
    runtimes: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # the revisions and the implementations' manifest names

    def add_texts(self, implementation: str, revision: str, runtime: str | None) -> None:
        self.runtimes.add(_without_numbers(runtime or ""))
        self.names.update(_without_numbers(text.rstrip(_DIGITS)) for text in (revision, implementation))


def _read_revisions(rows: Iterable[Any]) -> dict[str, _Revisions]:
    revisions: dict[str, _Revisions] = {}
    for slug, implementation, revision, runtime, count in rows:
        found = revisions.setdefault(slug, _Revisions())
        found.count += count
        found.add_texts(implementation, revision, runtime)
    return revisions


def _project_entry(slug: str, title: str, revisions: _Revisions, stored: Mapping[str, int] | None = None) -> Entry:
    entry = _name_entry(
        "implementation",
        slug,
        title,
        _plural(revisions.count, "revision"),
        sorted(revisions.runtimes),
        sorted(revisions.names),
    )
    if not stored:
        return entry
    terms = dict(stored)
    for term, weight in entry.terms.items():
        terms[term] = max(weight, terms.get(term, 0))
    return replace(entry, terms=terms)


def project_entries(
    session: Session, implementations: Sequence[ImplementationManifest] | None = None, revised: bool = False
) -> list[Entry]:
    """One entry per implementation project (by slug), with its number of revisions.

    A project is spelled as the first of its spellings in sort order. ``implementations``
    (manifests just stored) limits it to their projects, whose spelling so far is the
    entry's. A stored entry whose spelling stands gets the words of these implementations
    added to its terms, which hold those of every earlier one; any other (a new project, a
    new spelling, or every one when ``revised``: an implementation changed) is read again
    from all its revisions. Either way the terms are those ``rebuild_index`` gives.
    """
    connection = session.connection()
    if implementations is None:
        every = _read_revisions(connection.execute(_ALL_REVISIONS))
        return [
            _project_entry(slug, name, every[slug])
            for slug, name in connection.execute(_PROJECT_SPELLINGS)
            if slug in every
        ]
    spellings: dict[str, str] = {}
    for manifest in implementations:
        name = manifest.spec.project.name
        slug = slugify(name)
        spellings[slug] = min(spellings.get(slug, name), name)
    slugs = sorted(spellings)
    stored_titles = dict(connection.execute(_STORED_TITLES, {"kind": "implementation", "slugs": slugs}).all())
    for slug, title in stored_titles.items():
        spellings[slug] = min(spellings[slug], title)
    kept = [] if revised else [slug for slug in slugs if stored_titles.get(slug) == spellings[slug]]
    stored: dict[str, dict[str, int]] = {}
    revisions: dict[str, _Revisions] = {}
    if kept:
        for slug, term, weight in connection.execute(_STORED_PROJECT_TERMS, {"slugs": kept}):
            stored.setdefault(slug, {})[term] = weight
        for slug, count in connection.execute(_REVISION_COUNTS, {"slugs": kept}):
            revisions[slug] = _Revisions(count=count)
        for manifest in implementations:
            if (found := revisions.get(slugify(manifest.spec.project.name))) is not None:
                found.add_texts(manifest.metadata.name, manifest.spec.revision, manifest.spec.runtime)
    reread = [slug for slug in slugs if slug not in revisions]
    if reread:
        revisions.update(_read_revisions(connection.execute(_REVISIONS, {"slugs": reread})))
    return [
        _project_entry(slug, name, revisions[slug], stored.get(slug))
        for slug, name in spellings.items()
        if slug in revisions
    ]


# --- Writing ------------------------------------------------------------------------


def reindex_workloads(session: Session, workloads: Iterable[Workload]) -> None:
    """Index these workloads again as they now are (a revision given a title that tells it apart)."""
    _sync(session, [workload_entry(workload) for workload in workloads])


def _sync(session: Session, entries: Iterable[Entry], prune: Iterable[str] = ()) -> None:
    """Make the stored entries named in ``entries`` equal to them, writing only the differences.

    Stored entries of a kind in ``prune`` that ``entries`` does not name are deleted. The
    session holds no objects of the index, so this reads and writes through its connection.
    """
    wanted = {(entry.kind, entry.slug): entry for entry in entries}
    prune = set(prune)
    connection = session.connection()
    stored = {}
    if prune:
        stored.update({(r.kind, r.slug): r for r in connection.execute(_STORED_BY_KIND, {"kinds": sorted(prune)})})
    named = sorted(key for key in wanted if key[0] not in prune)
    if named:
        stored.update({(r.kind, r.slug): r for r in connection.execute(_STORED_BY_KEY, {"keys": named})})

    gone = [row.id for key, row in stored.items() if key not in wanted]
    retitled, reworded = [], []
    for key, entry in wanted.items():
        row = stored.get(key)
        if row is None:
            continue
        if row.fingerprint != entry.fingerprint:
            reworded.append((row.id, entry))
        if (row.title, row.subtitle, row.fingerprint) != (entry.title, entry.subtitle, entry.fingerprint):
            retitled.append((row.id, entry))
    if gone or reworded:
        connection.execute(_DELETE_TERMS, {"ids": gone + [entry_id for entry_id, _ in reworded]})
    if gone:
        connection.execute(_DELETE_ENTRIES, {"ids": gone})
    if retitled:
        connection.execute(
            _UPDATE_ENTRY,
            [
                {"entry_id": i, "title": e.title, "subtitle": e.subtitle, "fingerprint": e.fingerprint}
                for i, e in retitled
            ],
        )
    new = [entry for key, entry in wanted.items() if key not in stored]
    if new:
        rows = [
            {"kind": e.kind, "slug": e.slug, "title": e.title, "subtitle": e.subtitle, "fingerprint": e.fingerprint}
            for e in new
        ]
        reworded += zip(connection.execute(_INSERT_ENTRIES, rows).scalars(), new, strict=True)
    terms = [
        {"term": term, "entry_id": entry_id, "weight": weight}
        for entry_id, entry in reworded
        for term, weight in entry.terms.items()
    ]
    if terms:
        insert_rows(session, SearchTerm, terms)  # the bulk path: an index of thousands of entries at once
        _add_words(session, {row["term"] for row in terms})


def _add_words(session: Session, words: Iterable[str]) -> None:
    """Add the words the vocabulary lacks, in one statement."""
    dialect = postgresql if _is_postgresql(session) else sqlite
    rows = [{"word": word} for word in sorted(words)]
    if rows:
        session.connection().execute(dialect.insert(SearchWord).on_conflict_do_nothing(), rows)


def index_batch(session: Session, batch: Batch, workload: Workload, counts: Mapping[str, int]) -> None:
    """Bring the index up to date with one batch ``apply_batch`` wrote, in the same transaction.

    ``workload`` is the batch's stored workload; ``counts`` are ``apply_batch``'s
    ``"<outcome>.<table>"`` counts. A batch that added or updated no workload,
    implementation or environment is not looked at: an unchanged re-ingest reads and
    writes nothing here.
    """
    added, updated = (
        {table for table in ("workload", "implementation", "environment") if counts.get(f"{outcome}.{table}")}
        for outcome in ("added", "updated")
    )
    entries: list[Entry] = []
    prune: set[str] = set()
    if "workload" in added | updated:
        spec = batch.workload.spec
        entries.append(workload_entry(workload, spec.definition.name))
        if "workload" in updated:
            # A changed definition may bring a new slug or origin model: recount them all.
            stale = list(session.connection().execute(_STALE_WORKLOADS).scalars())
            if stale:
                session.connection().execute(_DELETE_TERMS, {"ids": stale})
                session.connection().execute(_DELETE_ENTRIES, {"ids": stale})
            entries += model_entries(session)
            prune.add("model")
        elif spec.origin_model:
            entries += model_entries(session, only=_model_slug(spec.origin_model))
    if "implementation" in added | updated:
        entries += project_entries(session, batch.implementations, revised="implementation" in updated)
    if "environment" in added | updated:
        entries += gpu_entries(session)
        prune.add("gpu")
    if entries or prune:
        _sync(session, entries, prune=prune)


def index_new_workloads(
    session: Session,
    workloads: Sequence[tuple[Workload, str]],
    implementations: Sequence[ImplementationManifest],
    gpus_changed: bool,
) -> None:
    """Index workloads just added together (``apply_new_batches``; each with its definition's
    name), with the projects of the implementations written with them and, when an environment
    was, the GPUs."""
    entries = [workload_entry(workload, name) for workload, name in workloads]
    prune: set[str] = set()
    for model in sorted({_model_slug(w.origin_model) for w, _ in workloads if w.origin_model}):
        entries += model_entries(session, only=model)
    if implementations:
        entries += project_entries(session, implementations)
    if gpus_changed:
        entries += gpu_entries(session)
        prune.add("gpu")
    _sync(session, entries, prune=prune)


def rebuild_index(session: Session) -> None:
    """Build every entry from the stored records, writing only what differs from the index."""
    mark_changed(session)
    # The columns an entry reads, and no others: a migration runs this on the schema of its own
    # revision, which lacks the columns later revisions add.
    columns = load_only(
        Workload.name,
        Workload.title,
        Workload.collection,
        Workload.origin_model,
        Workload.tags,
        Workload.description,
        Workload.case_count,
        Workload.manifest_json,
    )
    workloads = [workload_entry(workload) for workload in session.scalars(select(Workload).options(columns))]
    others = [*project_entries(session), *gpu_entries(session), *model_entries(session)]
    _sync(session, [*workloads, *others], prune=KINDS)
    connection = session.connection()
    connection.execute(delete(SearchWord).where(SearchWord.word.not_in(select(SearchTerm.term))))
    _add_words(session, connection.execute(select(SearchTerm.term).distinct()).scalars())


# --- Reading ------------------------------------------------------------------------
#
# Statements are built once per shape (number of terms, backend) with bound parameters, so
# a keystroke costs one cached statement's execution, not a statement's construction.


def _term_range(term: str, prefix: bool) -> tuple[str, str]:
    """The [low, high) range of terms equal to ``term`` or, with ``prefix``, starting with it.

    Terms hold letters and digits only, so "\x01" sorts before any character that can follow.
    """
    if prefix and len(term) > 1:
        return term, term[:-1] + chr(ord(term[-1]) + 1)
    return term, term + "\x01"


def _in_range(postgresql: bool, low: ColumnElement[str], high: ColumnElement[str]) -> ColumnElement[bool]:
    """``term`` in [low, high), compared code point by code point on either backend.

    SQLite's default collation compares so; on PostgreSQL the pattern operators do (and
    use ``ix_search_term_term_pattern``) whatever the database's collation.
    """
    if postgresql:
        return and_(
            SearchTerm.term.op("~>=~", is_comparison=True)(low), SearchTerm.term.op("~<~", is_comparison=True)(high)
        )
    return and_(SearchTerm.term >= low, SearchTerm.term < high)


def _is_postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _per_term(i: int, postgresql: bool) -> Select[int, int]:
    """Entries holding query term ``i`` (``t{i}``, in ``[lo{i}, hi{i})``) as a word or a word
    prefix, with their score for it: the weight of their best matching term, doubled when whole."""
    exact = SearchTerm.term == bindparam(f"t{i}")
    return (
        select(
            SearchTerm.entry_id.label("entry_id"),
            func.max(SearchTerm.weight * case((exact, 2), else_=1)).label("score"),
        )
        .where(_in_range(postgresql, bindparam(f"lo{i}"), bindparam(f"hi{i}")))
        .where(SearchTerm.weight >= bindparam("min_weight"))
        .group_by(SearchTerm.entry_id)
    )


_ENTRY_COLUMNS = (SearchEntry.kind, SearchEntry.slug, SearchEntry.title, SearchEntry.subtitle)


def _best_first(statement: Any, *first: Any) -> Select[Any]:
    """``statement``'s entries of the kinds asked for, ordered by ``first``, then shortest title."""
    return (
        statement.where(SearchEntry.kind.in_(bindparam("kinds", expanding=True)))
        .order_by(*first, func.length(SearchEntry.title), SearchEntry.title, SearchEntry.kind, SearchEntry.slug)
        .limit(bindparam("limit", type_=Integer))
    )


@lru_cache(maxsize=64)
def _every_term_statement(terms: int, postgresql: bool) -> Select[Any]:
    """Entries matching every one of ``terms`` query terms, best first: each term's entries joined,
    which the database intersects from the smallest."""
    matched = [_per_term(i, postgresql).subquery(f"m{i}") for i in range(terms)]
    joined: Any = matched[0]
    for other in matched[1:]:
        joined = joined.join(other, other.c.entry_id == matched[0].c.entry_id)
    score = sum((other.c.score for other in matched[1:]), matched[0].c.score)
    statement = select(*_ENTRY_COLUMNS).select_from(joined).join(SearchEntry, SearchEntry.id == matched[0].c.entry_id)
    return _best_first(statement, score.desc())


@lru_cache(maxsize=64)
def _most_terms_statement(terms: int, postgresql: bool) -> Select[Any]:
    """Entries matching any of ``terms`` query terms, those matching the most first."""
    matched = union_all(*(_per_term(i, postgresql) for i in range(terms))).subquery("matched")
    best = (
        select(matched.c.entry_id, func.count().label("terms"), func.sum(matched.c.score).label("score"))
        .group_by(matched.c.entry_id)
        .subquery("best")
    )
    statement = select(*_ENTRY_COLUMNS).join(best, best.c.entry_id == SearchEntry.id)
    return _best_first(statement, best.c.terms.desc(), best.c.score.desc())


def _ranked(
    session: Session, terms: list[str], limit: int, kinds: Iterable[str], min_weight: int, require_all: bool
) -> tuple[list[SearchHit], bool]:
    """The best ``limit`` entries matching every term (each as a whole word or a word prefix), and
    True; or, when none does and ``require_all`` is false, those matching the most terms, and False.

    Entries matching every term are found by joining each term's entries: 23 ms on PostgreSQL for
    "moe 7168 fp8" on the AIConfigurator catalogue, against 32 ms for grouping the 14,000 entries
    that match any term to count their terms, which only a query matching no entry whole needs.
    """
    params: dict[str, object] = {"min_weight": min_weight, "kinds": sorted(kinds), "limit": limit}
    for i, term in enumerate(terms):
        params[f"t{i}"] = term
        params[f"lo{i}"], params[f"hi{i}"] = _term_range(term, prefix=True)
    postgresql, connection = _is_postgresql(session), session.connection()
    rows = connection.execute(_every_term_statement(len(terms), postgresql), params).all()
    every_term = bool(rows) or len(terms) == 1
    if not every_term and not require_all:
        rows = connection.execute(_most_terms_statement(len(terms), postgresql), params).all()
    hits = [SearchHit(kind, slug, title, subtitle, PAGE_URLS[kind](slug)) for kind, slug, title, subtitle in rows]
    return hits, every_term


_SOURCES_OF = {
    "workload": select(Workload.name, Source.slug, Source.name)
    .join(Source, Workload.source_id == Source.id)
    .where(Workload.name.in_(bindparam("slugs", expanding=True))),
    "implementation": select(Implementation.project_slug, Source.slug, Source.name)
    .select_from(Run)
    .join(Implementation, Run.implementation_id == Implementation.id)
    .join(Source, Run.source_id == Source.id)
    .where(Implementation.project_slug.in_(bindparam("slugs", expanding=True)))
    .distinct(),
}
# Models are named by slug, their workloads by spelling: every (spelling, source), a short list.
_MODEL_SOURCES = (
    select(Workload.origin_model, Source.slug, Source.name)
    .join(Source, Workload.source_id == Source.id)
    .where(Workload.origin_model.is_not(None))
    .distinct()
)


def with_sources(session: Session, hits: list[SearchHit]) -> list[SearchHit]:
    """``hits`` with the sources their records come from, by name: a workload's own source,
    the sources of an implementation's runs, those of a model's workloads. A GPU is measured
    on by any source; it names none."""
    wanted: dict[str, list[str]] = {}
    for hit in hits:
        wanted.setdefault(hit.kind, []).append(hit.slug)
    found: dict[tuple[str, str], set[HitSource]] = {}
    connection = session.connection()
    for kind, statement in _SOURCES_OF.items():
        if kind in wanted:
            for slug, source, name in connection.execute(statement, {"slugs": wanted[kind]}):
                found.setdefault((kind, slug), set()).add(HitSource(source, name))
    if "model" in wanted:
        models = set(wanted["model"])
        for model, source, name in connection.execute(_MODEL_SOURCES):
            if (slug := _model_slug(model)) in models:
                found.setdefault(("model", slug), set()).add(HitSource(source, name))
    return [
        replace(hit, sources=tuple(sorted(found.get((hit.kind, hit.slug), ()), key=lambda s: (s.name, s.slug))))
        for hit in hits
    ]


def current_revisions_first(session: Session, hits: list[SearchHit]) -> list[SearchHit]:
    """``hits`` with every superseded revision of a workload after the other hits, in their order:
    a problem's current revision is found before its older ones."""
    slugs = [hit.slug for hit in hits if hit.kind == "workload"]
    if not slugs:
        return hits
    superseded = set(
        session.scalars(select(Workload.name).where(Workload.name.in_(slugs), Workload.superseded_by_id.is_not(None)))
    )
    if not superseded:
        return hits
    return sorted(hits, key=lambda hit: hit.kind == "workload" and hit.slug in superseded)


def search(session: Session, q: str, limit: int = 20, kinds: set[str] | None = None) -> SearchResults:
    """Ranked results for ``q``: entries matching every term, or if none, those matching the most,
    each with its sources (``with_sources``).

    ``q`` is data, never syntax: any text is accepted, and a text without letters or digits
    finds nothing. ``did_you_mean`` is a corrected query when fewer than ``FEW_HITS``
    entries match every term and a term is in no entry, else ``None``. ``kinds`` limits the
    results to those kinds (``ValueError`` for an unknown one); ``limit`` is capped at 100.
    """
    if kinds is not None and not kinds <= set(KINDS):
        raise ValueError(f"unknown kinds {sorted(kinds - set(KINDS))}; the kinds are {', '.join(KINDS)}")
    terms = query_terms(q)
    if not terms:
        return SearchResults(query=q, hits=[], did_you_mean=None)
    limit, wanted = max(1, min(limit, 100)), kinds if kinds is not None else KINDS
    hits, every_term = _ranked(session, terms, limit, wanted, TEXT, require_all=False)
    hits = current_revisions_first(session, hits)
    complete = len(hits) if every_term else 0
    did_you_mean = _did_you_mean(session, terms) if complete < FEW_HITS else None
    return SearchResults(query=q, hits=with_sources(session, hits), did_you_mean=did_you_mean)


def suggest(session: Session, prefix: str, limit: int = 8) -> list[SearchHit]:
    """As-you-type suggestions: entries whose names hold every term of ``prefix`` as a word prefix.

    Names, slugs, collections, tags and models count, descriptions do not; a one-letter
    term waits for its second letter. Any text is accepted; ``limit`` is capped at 50.
    """
    terms = [term for term in query_terms(prefix) if len(term) > 1]
    if not terms:
        return []
    return _ranked(session, terms, max(1, min(limit, 50)), KINDS, ALIAS, require_all=True)[0]


# --- Did you mean -------------------------------------------------------------------


@lru_cache(maxsize=4)
def _known_statement(postgresql: bool) -> Select[str]:
    return select(SearchTerm.term).where(_in_range(postgresql, bindparam("lo"), bindparam("hi"))).limit(1)


@lru_cache(maxsize=4)
def _candidates_statement(postgresql: bool) -> Select[str]:
    """Words of about the right length that may be near ``term``."""
    query = select(SearchWord.word).where(
        func.length(SearchWord.word).between(bindparam("shortest"), bindparam("longest"))
    )
    if postgresql:
        return query.where(SearchWord.word.op("%", is_comparison=True)(bindparam("term")))
    # Typos seldom touch the first letter: look where the first two letters would file the
    # word, or the first and third (a typo in the second), or the first two swapped.
    ranges = [and_(SearchWord.word >= bindparam(f"lo{i}"), SearchWord.word < bindparam(f"hi{i}")) for i in range(3)]
    return query.where(or_(*ranges))


_ENTRIES_WITH = select(func.count()).select_from(SearchTerm).where(SearchTerm.term == bindparam("term"))


def _correction(session: Session, term: str) -> str | None:
    """The word nearest ``term`` within 1 edit (2 past four letters), the one in most entries first."""
    distance = 1 if len(term) <= 4 else 2
    params: dict[str, object] = {"term": term, "shortest": len(term) - distance, "longest": len(term) + distance}
    for i, start in enumerate((term[:2], term[0] + term[2], term[1] + term[0])):
        params[f"lo{i}"], params[f"hi{i}"] = _term_range(start, prefix=True)
    connection = session.connection()
    best: tuple[int, int, str] | None = None
    for word in connection.execute(_candidates_statement(_is_postgresql(session)), params).scalars():
        edits = edit_distance(term, word, distance)
        if len(word) < 3 or word == term or edits > distance:
            continue
        entries = connection.execute(_ENTRIES_WITH, {"term": word}).scalar_one()  # 0: a word no longer used
        if entries and (best is None or (edits, -entries, word) < best):
            best = (edits, -entries, word)
    return best[2] if best else None


def _did_you_mean(session: Session, terms: list[str]) -> str | None:
    """The query with each term that no entry holds (even as a prefix) corrected, if any was."""
    known = _known_statement(_is_postgresql(session))
    corrected, changed = [], False
    for term in terms:
        replacement = None
        if len(term) >= 3 and not term.isdigit():
            low, high = _term_range(term, prefix=True)
            if session.connection().execute(known, {"lo": low, "hi": high}).first() is None:
                replacement = _correction(session, term)
        corrected.append(replacement or term)
        changed |= replacement is not None
    return " ".join(corrected) if changed else None


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (insert, delete, substitute, swap two neighbours), capped at ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before_previous: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before_previous[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before_previous, previous = previous, current
    return min(previous[-1], limit + 1)


def search_response(
    results: SearchResults, on_gpu: Mapping[str, WorkloadItem] | None = None, gpu: str | None = None
) -> SearchResponse:
    """The API form of ``kernelindex.store.search.SearchResults``; ``on_gpu`` (slug → the workload's
    figures on the GPU ``gpu``, ``workloads_on_gpu``) adds those figures to the workload hits."""

    def figures(hit: SearchHit) -> OnGpuItem | None:
        item = on_gpu.get(hit.slug) if on_gpu is not None and hit.kind == "workload" else None
        if item is None or item.gpu is None:
            return None
        return OnGpuItem(gpu=item.gpu, runs=item.runs_on_gpu or 0, fastest=item.fastest)

    return SearchResponse(
        query=results.query,
        hits=[
            # Validated, not constructed: the index stores a hit's kind as text, the schema names the kinds.
            SearchHitItem.model_validate(
                {
                    "kind": hit.kind,
                    "slug": hit.slug,
                    "title": hit.title,
                    "subtitle": hit.subtitle,
                    "sources": [
                        SourceRefItem(slug=source.slug, name=source.name, api_url=urls.api_source(source.slug))
                        for source in hit.sources
                    ],
                    "url": hit.url,
                    "api_url": API_URLS[hit.kind](hit.slug),
                    "on_gpu": figures(hit),
                }
            )
            for hit in results.hits
        ],
        did_you_mean=results.did_you_mean,
        gpu=gpu,
    )
