"""Runs per producer and GPU, and each superseded revision's current one.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07

Why: a run's producer (the source that published the figure, or the registry's own reruns) is
not its workload's origin. GPU pages credited every run of a KernelBench workload to KernelBench,
the H200 reruns included; crediting by producer per GPU needs the runs each producer holds of
each workload on each GPU, kept on write (``workload_source_tally.gpu_slug``, with the old
every-GPU rows under ``gpu_slug = ''``). And coverage counted every revision of a revised problem
(B200 "250 of 521" KernelBench workloads, 271 of them older revisions of the same problems):
``workload.superseded_by_id`` names the current revision on each older one, so counts and lists
keep to current revisions with a plain condition; and the revisions of one problem that shared a
title ("Square matrix multiplication", N=2048 and N=4096) get titles that tell them apart.

Both are filled here from the runs, by the rules of the store (``tallies``, ``revisions``).
The downgrade keeps the every-GPU rows and drops the column; the titles stay as told apart
(the next ingest of a changed manifest writes its own title again).
"""

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVERY_GPU = ""


def upgrade() -> None:
    op.drop_index("ix_workload_source_tally_source_id_runs", table_name="workload_source_tally")
    op.drop_table("workload_source_tally")
    _create_source_tally(with_gpu=True)
    op.create_index("ix_workload_source_tally_gpu_slug_source_id", "workload_source_tally", ["gpu_slug", "source_id"])
    op.execute(
        "INSERT INTO workload_source_tally (workload_id, source_id, gpu_slug, runs) "
        "SELECT run.workload_id, run.source_id, environment.gpu_slug, count(*) FROM run "
        "JOIN environment ON environment.id = run.environment_id WHERE run.source_id IS NOT NULL "
        "GROUP BY run.workload_id, run.source_id, environment.gpu_slug"
    )
    op.execute(
        "INSERT INTO workload_source_tally (workload_id, source_id, gpu_slug, runs) "
        f"SELECT workload_id, source_id, '{EVERY_GPU}', count(*) FROM run WHERE source_id IS NOT NULL "
        "GROUP BY workload_id, source_id"
    )
    # No foreign key, like the tallies' run ids: derived, and rewritten with the revisions it names.
    # (SQLite would also have to rebuild the workload table, which every run refers to.)
    op.add_column("workload", sa.Column("superseded_by_id", sa.Integer(), nullable=True))
    _mark_revisions()


def _mark_revisions() -> None:
    # Imported here: the rule that picks the current revision is the store's, a pure function.
    from kernelindex.store.revisions import current_revision, problem_of, revision_facts, revision_titles

    rows = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT w.id, w.source_id, w.external_id, w.manifest_json, "
                "coalesce((SELECT min(r.observed_at) FROM run r "
                "WHERE r.workload_id = w.id AND r.source_id = w.source_id), "
                "(SELECT min(r.observed_at) FROM run r WHERE r.workload_id = w.id)) "
                "FROM workload w WHERE w.external_id LIKE '%@%'"
            )
        )
        .all()
    )
    by_problem: dict[tuple[int, str], list[tuple[int, str, datetime | None]]] = defaultdict(list)
    manifests = {}
    for workload_id, source_id, external_id, manifest_json, published in rows:
        if (problem := problem_of(external_id)) is not None:
            # SQLite returns the timestamp as text; its ISO form orders as the time does.
            when = datetime.fromisoformat(published) if isinstance(published, str) else published
            by_problem[source_id, problem].append((workload_id, external_id, when))
            manifests[workload_id] = (external_id, json.loads(manifest_json))
    update = sa.text("UPDATE workload SET superseded_by_id = :current, title = :title WHERE id = :id")
    retitle = sa.text(
        "UPDATE search_entry SET title = :title "
        "WHERE kind = 'workload' AND slug = (SELECT name FROM workload WHERE id = :id)"
    )
    for revisions in by_problem.values():
        if len(revisions) < 2:
            continue
        current = current_revision(revisions)
        titles = revision_titles([revision_facts(i, *manifests[i]) for i, _, _ in revisions])
        changes = [
            {"current": None if i == current else current, "title": titles[i][:300], "id": i} for i, _, _ in revisions
        ]
        op.get_bind().execute(update, changes)
        # Search shows the titles it stored: the same ones (its terms are rebuilt by the next ingest).
        op.get_bind().execute(retitle, [{"title": c["title"], "id": c["id"]} for c in changes])


def _create_source_tally(with_gpu: bool) -> None:
    op.create_table(
        "workload_source_tally",
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        *([sa.Column("gpu_slug", sa.String(200), nullable=False)] if with_gpu else []),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], name="fk_workload_source_tally_workload_id_workload"),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"], name="fk_workload_source_tally_source_id_source"),
        sa.PrimaryKeyConstraint(
            "workload_id", "source_id", *(["gpu_slug"] if with_gpu else []), name="pk_workload_source_tally"
        ),
    )
    op.create_index("ix_workload_source_tally_source_id_runs", "workload_source_tally", ["source_id", "runs"])


def downgrade() -> None:
    op.drop_column("workload", "superseded_by_id")
    op.rename_table("workload_source_tally", "workload_source_tally_by_gpu")
    op.drop_index("ix_workload_source_tally_source_id_runs", table_name="workload_source_tally_by_gpu")
    op.drop_index("ix_workload_source_tally_gpu_slug_source_id", table_name="workload_source_tally_by_gpu")
    if op.get_bind().dialect.name == "postgresql":
        # The renamed table keeps its constraint names, which the recreated one needs.
        for name in (
            "pk_workload_source_tally",
            "fk_workload_source_tally_workload_id_workload",
            "fk_workload_source_tally_source_id_source",
        ):
            op.execute(f"ALTER TABLE workload_source_tally_by_gpu DROP CONSTRAINT {name}")
    _create_source_tally(with_gpu=False)
    op.execute(
        "INSERT INTO workload_source_tally (workload_id, source_id, runs) "
        f"SELECT workload_id, source_id, runs FROM workload_source_tally_by_gpu WHERE gpu_slug = '{EVERY_GPU}'"
    )
    op.drop_table("workload_source_tally_by_gpu")
