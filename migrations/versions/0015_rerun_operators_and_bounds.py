"""Rerun operators, leases and two bounds per rerun.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05

Why: evidence between controlled reruns now depends on who ran them. ``rerun_bundle.operator``
keeps the operator the key registry named for the signing key at import (NULL: none named), and
``rerun_bundle.session_id`` the runner's lease, read from the stored bundle. A second agreeing
rerun of the same operator is "reproduced"; only one by another operator is "replicated". No
stored bundle has an operator yet, so the reruns marked ``replicated`` become ``verified``;
importing the bundles again with a key registry that names operators derives their evidence anew.

The bound stored so far (``bound_ns``) was computed from ceilings the runner measured, which some
kernels beat: it moves to ``achievable_bound_ns``, and ``bound_ns`` becomes the speed of light,
recomputed here from each stored bundle's byte and FLOP counts and its GPU's datasheet peaks
(0 where the GPU is not in the datasheet table). A run no maintainer has reviewed is held for
review only when it is faster than that speed of light.
"""

import json
import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from kernelindex.gpu_specs import gpu_spec_table, speed_of_light_ns

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, not a batch copy: SQLite would have to drop tables that others refer to. The
# server defaults only fill the rows that exist; each is overwritten below.
def upgrade() -> None:
    op.add_column("rerun_bundle", sa.Column("operator", sa.String(200), nullable=True))
    op.add_column("rerun_bundle", sa.Column("session_id", sa.String(64), nullable=False, server_default=""))
    for table in ("rerun_result", "rerun_case"):
        op.add_column(table, sa.Column("achievable_bound_ns", sa.BigInteger(), nullable=False, server_default="0"))
    connection = op.get_bind()
    connection.execute(sa.text("UPDATE rerun_result SET achievable_bound_ns = bound_ns"))
    connection.execute(sa.text("UPDATE rerun_case SET achievable_bound_ns = bound_ns"))
    for bundle_row_id, bundle_json in connection.execute(sa.text("SELECT id, bundle_json FROM rerun_bundle")).all():
        payload = json.loads(bundle_json)["payload"]
        connection.execute(
            sa.text("UPDATE rerun_bundle SET session_id = :session WHERE id = :id"),
            {"session": payload["sessionId"], "id": bundle_row_id},
        )
        _speed_of_light(connection, bundle_row_id, payload)
    connection.execute(
        sa.text(
            "UPDATE run SET evidence = 'verified' WHERE evidence = 'replicated' "
            "AND id IN (SELECT run_id FROM rerun_result)"
        )
    )


def _speed_of_light(connection: sa.Connection, bundle_row_id: int, payload: dict[str, Any]) -> None:
    spec = gpu_spec_table().by_device_name(payload["environment"]["gpu"]["name"])
    rtol = float(payload["protocol"]["correctness"]["rtol"])
    result = connection.execute(
        sa.text("SELECT id, run_id FROM rerun_result WHERE bundle_id = :id"), {"id": bundle_row_id}
    ).first()
    if result is None:
        return
    bounds = {}
    for case in payload["cases"]:
        roofline = case.get("roofline")
        if spec is None or not roofline:
            bounds = {}
            break
        bounds[case["index"]] = speed_of_light_ns(roofline["bytes"], roofline["flops"], spec, rtol)
    for position, bound in bounds.items():
        connection.execute(
            sa.text("UPDATE rerun_case SET bound_ns = :bound WHERE result_id = :result AND position = :position"),
            {"bound": round(bound), "result": result.id, "position": position},
        )
    suite = round(math.exp(sum(math.log(b) for b in bounds.values()) / len(bounds))) if bounds else 0
    if not bounds:
        connection.execute(
            sa.text("UPDATE rerun_case SET bound_ns = 0 WHERE result_id = :result"), {"result": result.id}
        )
    connection.execute(
        sa.text("UPDATE rerun_result SET bound_ns = :bound WHERE id = :id"), {"bound": suite, "id": result.id}
    )
    connection.execute(
        sa.text(
            "UPDATE run SET held_for_review = (latency_ns < :bound AND :bound > 0) "
            "WHERE id = :run AND review_state IS NULL"
        ),
        {"bound": suite, "run": result.run_id},
    )


def downgrade() -> None:
    # The achievable bound was the stored bound before; operators and leases were not kept.
    connection = op.get_bind()
    connection.execute(sa.text("UPDATE rerun_result SET bound_ns = achievable_bound_ns"))
    connection.execute(sa.text("UPDATE rerun_case SET bound_ns = achievable_bound_ns"))
    connection.execute(
        sa.text(
            "UPDATE run SET evidence = 'verified' WHERE evidence IN ('reproduced', 'replicated') "
            "AND id IN (SELECT run_id FROM rerun_result)"
        )
    )
    for table in ("rerun_result", "rerun_case"):
        op.drop_column(table, "achievable_bound_ns")
    op.drop_column("rerun_bundle", "session_id")
    op.drop_column("rerun_bundle", "operator")
