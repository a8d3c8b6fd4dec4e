"""Where each run's uncertainty is kept: three columns of ``run`` (PRODUCT.md §5).

A run's interval is worked out once, when it is written, from its own manifest by the rules of
``kernelindex.uncertainty``, and kept in ``spread_kind``, ``spread_low_ns`` and ``spread_high_ns``,
so that a leaderboard reads each row's interval in the query that reads its figure. A source
whose runs bound nothing themselves but which measured cases twice (AIConfigurator) has its
noise estimated at the regression refresh (``store.regressions``); ``apply_source_noise`` then
writes figure ± noise into its runs that have no interval of their own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Connection, and_, cast, func, or_, update
from sqlalchemy.orm import Session

from kernelindex.db.tables import Run
from kernelindex.uncertainty import SOURCE_NOISE, Uncertainty, figure_uncertainty, suite_uncertainty

# The statistics a case is compared by, most preferred first (``store.sweeps.CENTRES``).
_CASE_CENTRES = ("median", "mean")


def spec_uncertainty(spec: Mapping[str, Any]) -> Uncertainty | None:
    """A run's interval from its manifest's spec (the JSON as stored): its own timing's, or for a
    suite figure the geometric mean of its cases' (``uncertainty.suite_uncertainty``)."""
    timing = spec.get("timing") or {}
    latency: Mapping[str, Any] = timing.get("latencyNs") or {}
    statistic = timing.get("primaryStatistic") or ""
    metrics = (spec.get("sourceNative") or {}).get("metrics") or {}
    own = figure_uncertainty(latency, statistic, metrics)
    figure = latency.get(statistic)
    results: Sequence[Mapping[str, Any]] = spec.get("caseResults") or []
    if own is not None or not results or statistic != "geomean" or not isinstance(figure, int):
        return own
    centres = [result.get("latencyNs") or {} for result in results]
    chosen = next((stat for stat in _CASE_CENTRES if all(stat in centre for centre in centres)), None)
    if chosen is None:
        return None
    return suite_uncertainty([figure_uncertainty(centre, chosen) for centre in centres], figure)


def manifest_uncertainty(manifest_json: str) -> Uncertainty | None:
    return spec_uncertainty(json.loads(manifest_json).get("spec") or {})


def spread_columns(uncertainty: Uncertainty | None) -> dict[str, Any]:
    """The three ``run`` columns that keep ``uncertainty`` (all None: unknown)."""
    if uncertainty is None:
        return {"spread_kind": None, "spread_low_ns": None, "spread_high_ns": None}
    return {
        "spread_kind": uncertainty.kind,
        "spread_low_ns": uncertainty.low_ns,
        "spread_high_ns": uncertainty.high_ns,
    }


def stored_uncertainty(kind: str | None, low_ns: int | None, high_ns: int | None) -> Uncertainty | None:
    """The ``Uncertainty`` the three columns keep (``None``: unknown)."""
    if kind is None or low_ns is None or high_ns is None:
        return None
    return Uncertainty(kind, low_ns, high_ns)


def apply_source_noise(
    session: Session | Connection, source_id: int, bound: float | None, *, only_new: bool = False
) -> int:
    """Write figure ± ``bound`` (a fraction) into the source's runs that have no interval of their
    own, or clear the source-noise intervals where ``bound`` is None (no estimate stands). With
    ``only_new``, only runs that have no interval at all yet (written since the last refresh).

    Rounded to whole ns by the database's cast (SQLite truncates, PostgreSQL rounds), the low
    less one ns and the high plus one, so the interval is never narrower than ``noise_uncertainty``'s."""
    mine = Run.source_id == source_id
    if bound is None:
        cleared = update(Run).where(mine, Run.spread_kind == SOURCE_NOISE).values(spread_columns(None))
        return session.execute(cleared).rowcount  # type: ignore[attr-defined]
    unset = Run.spread_kind.is_(None)
    which = unset if only_new else or_(unset, Run.spread_kind == SOURCE_NOISE)
    values = {
        "spread_kind": SOURCE_NOISE,
        "spread_low_ns": cast(Run.latency_ns * (1 - bound), BigInteger) - 1,
        "spread_high_ns": cast(Run.latency_ns * (1 + bound), BigInteger) + 1,
    }
    found = session.execute(update(Run).where(and_(mine, which)).values(values))
    return found.rowcount  # type: ignore[attr-defined]


def interval_low(run: Any = Run) -> ColumnElement[int]:
    """The low end of a run's interval in SQL (``RunFacts.interval``): its figure where unknown."""
    return func.coalesce(run.spread_low_ns, run.latency_ns)


def interval_high(run: Any = Run) -> ColumnElement[int]:
    return func.coalesce(run.spread_high_ns, run.latency_ns)
