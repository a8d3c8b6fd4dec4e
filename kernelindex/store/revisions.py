"""The revisions of one problem: a source that revises a problem file publishes each content as
a workload of its own, with an external id ``<problem>@<content hash>`` (KernelBench:
``level1/19@<16 hex>``). The workloads of one source whose external ids share the part up to
and including "@" are the revisions of one problem.

The *current* revision is the one its source published last (``current_revision``): the others
are superseded, and each carries the current one's id (``Workload.superseded_by_id``), set by
the transaction that writes a revision or its runs (``mark_revisions``), so that coverage counts
and listings can keep to current revisions with a plain condition.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

from sqlalchemy import event, func, inspect, or_, select
from sqlalchemy.orm import Session, UOWTransaction

from kernelindex import urls
from kernelindex.db.tables import Run, Workload
from kernelindex.store.manifests import workload_manifest
from kernelindex.store.schemas import WorkloadRevision
from kernelindex.store.search import reindex_workloads

REVISION_MARK = "@"


def problem_of(external_id: str) -> str | None:
    """The problem an external id names a revision of (``level1/19``), or ``None`` if it names none."""
    problem, mark, content = external_id.partition(REVISION_MARK)
    return problem if mark and problem and content else None


def current_revision(revisions: Sequence[tuple[int, str, datetime | None]]) -> int:
    """Of one problem's revisions, as (workload id, external id, first published), the id of the
    current one: the one published last. A revision with no publication date yet (no run) is the
    newest; equal dates go by external id. The order ``workload_revisions`` lists them in."""
    return max(revisions, key=lambda r: (r[2] is None, r[2] or datetime.min, r[1]))[0]


def _first_published() -> Any:
    """Per workload, when its own source first published a run of it (a later rerun by anyone
    else publishes nothing of the problem), else when anyone first did."""
    own = (
        select(func.min(Run.observed_at))
        .where(Run.workload_id == Workload.id, Run.source_id == Workload.source_id)
        .scalar_subquery()
    )
    anyone = select(func.min(Run.observed_at)).where(Run.workload_id == Workload.id).scalar_subquery()
    return func.coalesce(own, anyone)


def mark_revisions(session: Session, workload_ids: Iterable[int] | None) -> None:
    """Set ``superseded_by_id`` and the title on every revision of the problems of
    ``workload_ids`` (of every problem without), in the session's transaction: None on the
    current revision, the current one's id on the others; a title that tells the revision from
    the others of its problem (``revision_titles``). Rows already right are left alone."""
    revised = Workload.external_id.contains(REVISION_MARK, autoescape=True)
    problems: set[tuple[int, str]] = set()
    ids = None if workload_ids is None else sorted(set(workload_ids))
    for start in range(0, len(ids) if ids is not None else 1, _CHUNK):
        of_ids = [] if ids is None else [Workload.id.in_(ids[start : start + _CHUNK])]
        rows = session.execute(select(Workload.source_id, Workload.external_id).where(revised, *of_ids))
        problems.update((source, problem) for source, external_id in rows if (problem := problem_of(external_id)))
    by_problem: dict[tuple[int, str], list[tuple[Workload, datetime | None]]] = defaultdict(list)
    for source in sorted({source for source, _ in problems}):
        names = sorted(problem for of, problem in problems if of == source)
        for start in range(0, len(names), _CHUNK):
            starts = [
                Workload.external_id.startswith(n + REVISION_MARK, autoescape=True)
                for n in names[start : start + _CHUNK]
            ]
            found = session.execute(
                select(Workload, _first_published()).where(Workload.source_id == source, or_(*starts))
            )
            for record, published in found:
                if (problem := problem_of(record.external_id)) is not None:
                    by_problem[source, problem].append((record, published))
    retitled = []
    for revisions in by_problem.values():
        current = current_revision([(w.id, w.external_id, published) for w, published in revisions])
        titles = revision_titles([_facts(w) for w, _ in revisions]) if len(revisions) > 1 else {}
        for record, _ in revisions:
            wanted = None if record.id == current else current
            if record.superseded_by_id != wanted:
                record.superseded_by_id = wanted
            title = titles.get(record.id, workload_manifest(record).metadata.title or record.title)[:300]
            if record.title != title:
                record.title = title
                retitled.append(record)
    # Search finds and shows a revision by the title that tells it apart.
    reindex_workloads(session, retitled)


@dataclass(frozen=True)
class RevisionFacts:
    """What tells one revision from another: its own title, its constant axes, its content."""

    id: int
    title: str
    axes: dict[str, Any]
    content: str  # the content hash in its external id


def _facts(workload: Workload) -> RevisionFacts:
    return revision_facts(workload.id, workload.external_id, json.loads(workload.manifest_json))


def revision_facts(workload_id: int, external_id: str, manifest: dict[str, Any]) -> RevisionFacts:
    """A revision's facts from its manifest as served (a ``WorkloadSuite``'s JSON)."""
    definition = manifest["spec"]["definition"]
    axes = {name: axis.get("value") for name, axis in definition["axes"].items() if axis.get("type") == "const"}
    title = manifest["metadata"].get("title") or definition["name"]
    return RevisionFacts(workload_id, title, axes, external_id.partition(REVISION_MARK)[2])


def differing_axes(revisions: Sequence[RevisionFacts]) -> list[str]:
    """The constant axes whose values are not the same in every one of ``revisions``, by name."""
    names = sorted({name for r in revisions for name in r.axes})
    return [name for name in names if len({repr(r.axes.get(name)) for r in revisions}) > 1]


def revision_titles(revisions: Sequence[RevisionFacts]) -> dict[int, str]:
    """Id → a title for each revision of one problem that tells it from the others that share its
    own title: the axes whose values differ ("Square matrix multiplication (N=4096)"), else its
    content hash. A revision whose title no other shares keeps it."""
    by_title: dict[str, list[RevisionFacts]] = defaultdict(list)
    for revision in revisions:
        by_title[revision.title].append(revision)
    titles = {}
    for title, same in by_title.items():
        differ = differing_axes(same)
        for revision in same:
            if len(same) < 2:
                titles[revision.id] = title
            elif differ:
                told = ", ".join(f"{name}={_value(revision.axes.get(name))}" for name in differ)
                titles[revision.id] = f"{title} ({told})"
            else:
                titles[revision.id] = f"{title} (content {revision.content[:8]})"
    return titles


def what_changed(older: RevisionFacts, current: RevisionFacts) -> str:
    """How ``current`` differs from ``older``, in words ("N: 2048 → 4096")."""
    changed = [
        f"{name}: {_value(older.axes.get(name))} → {_value(current.axes.get(name))}"
        for name in differing_axes([older, current])
    ]
    if changed:
        return "; ".join(changed)
    return f"the problem's code changed (content {older.content[:8]} → {current.content[:8]}); its sizes did not"


def _value(value: Any) -> str:
    return "none" if value is None else str(value)


_NOTED = "kernelindex.revisions_noted"  # revised workloads added or renumbered in this transaction
_CHUNK = 200


def note_new_revisions(session: Session) -> set[int]:
    """The revised workloads this transaction added or whose external id it changed (taken)."""
    return session.info.pop(_NOTED, set())


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: UOWTransaction) -> None:
    new = set(map(id, session.new))
    for row in chain(session.new, session.dirty):
        if getattr(row, "__tablename__", None) != "workload" or REVISION_MARK not in (row.external_id or ""):
            continue
        attrs = inspect(row).attrs
        if id(row) in new or attrs.external_id.history.has_changes() or attrs.title.history.has_changes():
            session.info.setdefault(_NOTED, set()).add(row.id)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_NOTED, None)


def workload_revisions(session: Session, workload: Workload) -> list[WorkloadRevision]:
    """Every revision of ``workload``'s problem, this one included, oldest published first, each
    saying whether it is the current revision and, if not, what changed in the current one;
    empty when the workload is no revision or its problem has no other."""
    problem = problem_of(workload.external_id)
    if problem is None:
        return []
    rows = session.execute(
        select(Workload, _first_published()).where(
            Workload.source_id == workload.source_id,
            Workload.external_id.startswith(problem + REVISION_MARK, autoescape=True),
        )
    ).all()
    if len(rows) < 2:
        return []
    facts = {row.id: _facts(row) for row, _ in rows}
    current_id = current_revision([(row.id, row.external_id, published) for row, published in rows])
    revisions = [
        WorkloadRevision(
            slug=row.name,
            title=row.title,
            external_id=row.external_id,
            content_sha256=_content_sha256(row),
            first_published_at=published,
            current=row.id == workload.id,
            superseded=row.id != current_id,
            changes=None if row.id == current_id else what_changed(facts[row.id], facts[current_id]),
            url=urls.workload(row.name),
            api_url=urls.api_workload(row.name),
        )
        for row, published in rows
    ]
    # A revision with no run yet has no publication date: it lists last.
    return sorted(revisions, key=lambda r: (r.first_published_at is None, r.first_published_at, r.external_id))


def _content_sha256(workload: Workload) -> str:
    """The reference program's sha256, which the definition carries; else the hash in the external id."""
    reference = workload_manifest(workload).spec.definition.reference
    return reference.sha256 if reference else workload.external_id.partition(REVISION_MARK)[2]
