"""The revisions of one problem: a source that revises a problem file publishes each content as
a workload of its own, with an external id ``<problem>@<content hash>`` (KernelBench:
``level1/19@<16 hex>``). The workloads of one source whose external ids share the part up to
and including "@" are the revisions of one problem.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Run, Workload
from kernelindex.store.manifests import workload_manifest
from kernelindex.store.schemas import WorkloadRevision

REVISION_MARK = "@"


def problem_of(external_id: str) -> str | None:
    """The problem an external id names a revision of (``level1/19``), or ``None`` if it names none."""
    problem, mark, content = external_id.partition(REVISION_MARK)
    return problem if mark and problem and content else None


def workload_revisions(session: Session, workload: Workload) -> list[WorkloadRevision]:
    """Every revision of ``workload``'s problem, this one included, oldest published first;
    empty when the workload is no revision or its problem has no other."""
    problem = problem_of(workload.external_id)
    if problem is None:
        return []
    first_run = select(func.min(Run.observed_at)).where(Run.workload_id == Workload.id).scalar_subquery()
    rows = session.execute(
        select(Workload, first_run).where(
            Workload.source_id == workload.source_id,
            Workload.external_id.startswith(problem + REVISION_MARK, autoescape=True),
        )
    ).all()
    if len(rows) < 2:
        return []
    revisions = [
        WorkloadRevision(
            slug=row.name,
            title=row.title,
            external_id=row.external_id,
            content_sha256=_content_sha256(row),
            first_published_at=published,
            current=row.id == workload.id,
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
