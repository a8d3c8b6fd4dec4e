"""Each run's uncertainty, kept beside its figure; and the basis of each source's noise estimate.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07

Why: ranks are ranges and records count only beyond the noise (PRODUCT.md §5), so a leaderboard
needs every row's interval in the query that reads its figure, not in each run's manifest
(76 kB for a run of the largest sweep). ``run.spread_kind``, ``spread_low_ns`` and
``spread_high_ns`` keep it (``kernelindex.store.spreads``), filled here from each run's manifest by
the rules the store writes them with; a controlled rerun's suite run from its cases' bootstrap
intervals. ``regression_noise.basis`` says whether a source's noise was estimated from cases it
measured twice ("repeats"), the only estimate that bounds a figure; the noise is then written
into the source's runs that have no interval of their own, as the next refresh would.
"""

import json
from collections import defaultdict
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500


def upgrade() -> None:
    op.add_column("run", sa.Column("spread_kind", sa.String(length=24), nullable=True))
    op.add_column("run", sa.Column("spread_low_ns", sa.BigInteger(), nullable=True))
    op.add_column("run", sa.Column("spread_high_ns", sa.BigInteger(), nullable=True))
    op.add_column("regression_noise", sa.Column("basis", sa.String(length=16), nullable=True))
    _fill()
    # Rank ranges count a group's runs by where their intervals end (``store.common.rank_spans``).
    op.create_index("ix_run_spread_low", "run", ["workload_id", "comparison_key", "spread_low_ns"])
    op.create_index("ix_run_spread_high", "run", ["workload_id", "comparison_key", "spread_high_ns"])


def _fill() -> None:
    # Imported here: the store's rules, as every write applies them.
    from kernelindex.store.spreads import apply_source_noise, manifest_uncertainty, spread_columns
    from kernelindex.uncertainty import figure_uncertainty, suite_uncertainty

    bind = op.get_bind()
    run = sa.table(
        "run",
        sa.column("id", sa.Integer),
        sa.column("manifest_json", sa.Text),
        sa.column("latency_ns", sa.BigInteger),
        sa.column("spread_kind", sa.String),
        sa.column("spread_low_ns", sa.BigInteger),
        sa.column("spread_high_ns", sa.BigInteger),
    )
    updates = []
    manifests = sa.select(run.c.id, run.c.manifest_json).execution_options(yield_per=BATCH)
    for run_id, text in bind.execute(manifests):
        found = manifest_uncertainty(text)
        if found is not None:
            updates.append({"run_id": run_id, **spread_columns(found)})
    # A rerun's suite run: the geometric means of its cases' bootstrap intervals.
    cases: dict[int, list[str]] = defaultdict(list)
    rows = bind.execute(
        sa.text(
            "SELECT rerun_result.run_id, rerun_case.manifest_json FROM rerun_case "
            "JOIN rerun_result ON rerun_result.id = rerun_case.result_id ORDER BY rerun_case.position"
        )
    )
    for run_id, text in rows:
        cases[run_id].append(text)
    latencies = dict(bind.execute(sa.select(run.c.id, run.c.latency_ns).where(run.c.id.in_(sorted(cases)))).all())
    for run_id, texts in cases.items():
        spans = [figure_uncertainty(json.loads(text)["spec"]["timing"]["latencyNs"], "median") for text in texts]
        found = suite_uncertainty(spans, latencies[run_id])
        if found is not None:
            updates.append({"run_id": run_id, **spread_columns(found)})
    statement = (
        run.update()
        .where(run.c.id == sa.bindparam("run_id"))
        .values(
            spread_kind=sa.bindparam("spread_kind"),
            spread_low_ns=sa.bindparam("spread_low_ns"),
            spread_high_ns=sa.bindparam("spread_high_ns"),
        )
    )
    for start in range(0, len(updates), BATCH):
        bind.execute(statement, updates[start : start + BATCH])
    noise = sa.table(
        "regression_noise",
        sa.column("source_id", sa.Integer),
        sa.column("bound", sa.Float),
        sa.column("estimated", sa.Boolean),
        sa.column("method", sa.Text),
        sa.column("basis", sa.String),
    )
    for source_id, bound, estimated, method in bind.execute(
        sa.select(noise.c.source_id, noise.c.bound, noise.c.estimated, noise.c.method)
    ):
        # ``store.regressions.noise_method`` names the cases "the source measured twice".
        basis = "repeats" if "measured twice" in method else "frameworks"
        bind.execute(noise.update().where(noise.c.source_id == source_id).values(basis=basis))
        if estimated and basis == "repeats":
            apply_source_noise(bind, source_id, bound)


def downgrade() -> None:
    op.drop_index("ix_run_spread_high", table_name="run")
    op.drop_index("ix_run_spread_low", table_name="run")
    op.drop_column("regression_noise", "basis")
    op.drop_column("run", "spread_high_ns")
    op.drop_column("run", "spread_low_ns")
    op.drop_column("run", "spread_kind")
