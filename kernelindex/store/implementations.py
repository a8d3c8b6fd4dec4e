"""Implementations (projects): the listing by slug, and one with its runs per workload.

``/implementations/{slug}``, its JSON twin and ``/api/v1/implementations[/{slug}]`` read
this module; ranks come from ``common.rank_expression``, the SQL form of
``ranking.rank_group``.
"""

from __future__ import annotations

import re
from collections import defaultdict

from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from kernelindex import urls
from kernelindex.db.tables import Implementation, Run, Source
from kernelindex.store.common import contains, group_sizes, name_by_ref, rank_expression
from kernelindex.store.keyset import SLUG_ORDER, Position, keyset_page
from kernelindex.store.manifests import implementation_manifest
from kernelindex.store.reads import eligible
from kernelindex.store.run_queries import run_fields
from kernelindex.store.runs import availability_text, environment_label, with_references
from kernelindex.store.schemas import (
    ImplementationDetail,
    ImplementationItem,
    ImplementationRun,
    ImplementationWorkload,
    RevisionRuns,
    SourceRevisions,
)

# SOL-ExecBench publishes no code, only each submission's figures: its adapter labels an
# implementation "submission-<id>", one upload to the board. Such labels are submissions to a
# reader, not revisions of a published code base (a rerun's source hash, a library version).
SUBMISSION_LABEL = re.compile(r"submission-[0-9]+")


def list_implementations(
    session: Session, q: str | None, after: Position | None, limit: int
) -> tuple[list[ImplementationItem], Position | None]:
    stmt = select(func.min(Implementation.project).label("project")).group_by(Implementation.project_slug)
    if q:
        stmt = stmt.where(or_(contains(Implementation.project, q), contains(Implementation.project_slug, q)))
    rows, position = keyset_page(session, stmt, SLUG_ORDER, {"slug": Implementation.project_slug}, after, limit)
    return _implementation_items(session, [(row[-1], row.project) for row in rows]), position


def _implementation_items(session: Session, projects: list[tuple[str, str]]) -> list[ImplementationItem]:
    slugs = [slug for slug, _ in projects]
    stats = {
        row.slug: row
        for row in session.execute(
            select(
                Implementation.project_slug.label("slug"),
                func.count(func.distinct(Implementation.id)).label("revisions"),
                func.count(Run.id).label("runs"),
                func.coalesce(func.sum(case((eligible(), 1), else_=0)), 0).label("eligible_runs"),
                func.count(func.distinct(Run.workload_id)).label("workloads"),
                func.max(Run.observed_at).label("last_observed_at"),
            )
            .outerjoin(Run, Run.implementation_id == Implementation.id)
            .where(Implementation.project_slug.in_(slugs))
            .group_by(Implementation.project_slug)
        )
    }
    return [
        ImplementationItem(
            slug=slug,
            project=project,
            revisions=stats[slug].revisions,
            runs=stats[slug].runs,
            eligible_runs=stats[slug].eligible_runs,
            workloads=stats[slug].workloads,
            last_observed_at=stats[slug].last_observed_at,
            url=urls.implementation(slug),
            api_url=urls.api_implementation(slug),
        )
        for slug, project in projects
    ]


def implementation_detail(session: Session, ref: str) -> ImplementationDetail | None:
    """By project slug, or by the digest of any of its revisions' manifests.

    Every run of every revision, grouped by workload, each with its rank in its own
    comparison group (null when not eligible) and that group's number of eligible runs;
    ``first_places`` counts the groups where one of its runs ranks #1.
    """
    slug: str | None = ref.lower()
    if ref.startswith("sha256:"):
        name = name_by_ref(session, Implementation, "Implementation", ref)
        slug = session.scalar(select(Implementation.project_slug).where(Implementation.name == name))
    project = session.scalar(select(func.min(Implementation.project)).where(Implementation.project_slug == slug))
    if slug is None or project is None:
        return None
    item = _implementation_items(session, [(slug, project)])[0]
    rank_column = rank_expression().label("rank")
    rows = session.execute(
        with_references(select(Run, rank_column))
        .join(Implementation, Run.implementation_id == Implementation.id)
        .where(Implementation.project_slug == slug)
        .order_by(Run.latency_ns, Run.name)
    ).all()
    sizes = group_sizes(session, {(run.workload_id, run.comparison_key) for run, _ in rows})
    by_workload: dict[str, list[ImplementationRun]] = defaultdict(list)
    titles: dict[str, str] = {}
    first_places = set()
    for run, rank_value in rows:
        fields = run_fields(run)
        rank: int | None = rank_value if fields["eligible"] else None
        by_workload[run.workload.name].append(
            ImplementationRun(
                **fields,
                rank=rank,
                environment_title=run.environment.title,
                environment_label=environment_label(run.environment),
                availability=availability_text(
                    run.implementation.license,
                    run.implementation.source_available,
                    run.implementation.has_install_recipe,
                ),
                group_size=sizes.get(run.comparison_key, 0),
            )
        )
        titles[run.workload.name] = run.workload.title
        if rank == 1:
            first_places.add(run.comparison_key)
    results = []
    for workload, runs in sorted(by_workload.items()):
        ranked = [run for run in runs if run.rank is not None]
        best = min(ranked, key=lambda run: (run.rank, run.latency_ns, run.name)) if ranked else None
        results.append(
            ImplementationWorkload(
                workload=workload,
                title=titles[workload],
                best_rank=best.rank if best else None,
                best_run=best.name if best else None,
                runs=runs,
            )
        )
    revisions = session.scalars(
        select(Implementation.revision).where(Implementation.project_slug == slug).order_by(Implementation.name)
    )
    return ImplementationDetail(
        **item.model_dump(),
        workload_results=results,
        runs_url=urls.api_runs(implementation=slug),
        revision_list=list(revisions),
        revisions_by_source=revisions_by_source(session, slug),
        first_places=len(first_places),
    )


def revisions_by_source(session: Session, slug: str) -> list[SourceRevisions]:
    """A project's revisions grouped by the source whose runs name them, each group labelled
    with what the source means by them; sources by name, revisions by label."""
    rows = session.execute(
        select(Source.slug, Source.name, Implementation, func.count(Run.id))
        .select_from(Implementation)
        .outerjoin(Run, Run.implementation_id == Implementation.id)
        .outerjoin(Source, Source.id == Run.source_id)
        .where(Implementation.project_slug == slug)
        .group_by(Source.slug, Source.name, Implementation.id)
        .order_by(Source.name, Implementation.revision, Implementation.name)
    )
    names: dict[str | None, str | None] = {}
    revisions: dict[str | None, list[RevisionRuns]] = defaultdict(list)
    for source, source_name, implementation, runs in rows:
        names[source] = source_name
        title = implementation_manifest(implementation).metadata.title
        revisions[source].append(
            RevisionRuns(revision=implementation.revision, implementation=implementation.name, title=title, runs=runs)
        )
    return [
        SourceRevisions(
            source=source,
            source_name=names[source],
            unit="submission" if all(SUBMISSION_LABEL.fullmatch(r.revision) for r in listed) else "revision",
            revisions=listed,
        )
        for source, listed in revisions.items()
    ]
