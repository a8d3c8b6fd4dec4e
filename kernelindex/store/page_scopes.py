"""What a page depends on: the scopes of ``kernelindex.store.version`` that a write must change
for the page to be rendered again.

A page that names none here depends on ``lists`` (and, where it shows attestations apart from
their run, on ``attestations``); every page also depends on ``all``. The two pages named here
are the ones most requested and least often changed: a run and a leaderboard.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelindex.db.tables import Run, Workload
from kernelindex.store.leaderboards import Leaderboard
from kernelindex.store.revisions import REVISION_MARK, problem_of
from kernelindex.store.version import run_scope, source_scope, workload_scope


def run_page_scopes(run: Run) -> list[str]:
    """A run page shows the run (its attestations, history, rerun), its rank in its workload's
    comparison group, and the facts of its source and its workload's (completeness, dates)."""
    sources = {run.workload.source_id, *([run.source_id] if run.source_id is not None else [])}
    return [run_scope(run.id), workload_scope(run.workload_id), *map(source_scope, sorted(sources))]


def leaderboard_scopes(session: Session, board: Leaderboard) -> list[str]:
    """A leaderboard shows its workload's runs, the facts of the sources it lists, and the other
    revisions of its problem (their titles and first observed runs)."""
    workload = board.workload
    scopes = [workload_scope(workload.id), *(source_scope(source.id) for source in board.sources)]
    problem = problem_of(workload.external_id)
    if problem is not None:
        revisions = session.scalars(
            select(Workload.id).where(
                Workload.source_id == workload.source_id,
                Workload.external_id.startswith(problem + REVISION_MARK, autoescape=True),
                Workload.id != workload.id,
            )
        )
        scopes += map(workload_scope, revisions)
    return scopes
