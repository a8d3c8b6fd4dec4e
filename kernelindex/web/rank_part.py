"""A ranked row's place as a range and the interval it rests on, as every page and JSON twin gives
them (``kernelindex.uncertainty``): ``rankRange`` [lo, hi], ``rankText`` ("=1", "1–3"),
``distinctFromBest`` and ``uncertainty`` ({kind, low, high} in ns, or null where unknown)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from kernelindex.figures import latency_in, latency_number, latency_unit
from kernelindex.ranking import RankedRun
from kernelindex.store.schemas import UncertaintyItem
from kernelindex.uncertainty import KIND_LABELS, Uncertainty, rank_text

UNKNOWN_TEXT = "spread unknown: ranked by its figure alone"


class UncertaintyPart(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    kind: str  # one of ``uncertainty.KINDS``
    low: int  # ns, as the figure (``latencyNs``)
    high: int
    text: str  # "702.1–750.3 µs (± the source's noise)"


def interval_text(low_ns: int, high_ns: int) -> str:
    """ "702.1–750.3 µs": both ends in one unit."""
    unit = latency_unit([low_ns, high_ns])
    return f"{latency_number(low_ns, unit)}–{latency_in(high_ns, unit)}"


def uncertainty_part(uncertainty: Uncertainty | None) -> UncertaintyPart | None:
    if uncertainty is None:
        return None
    return UncertaintyPart(
        kind=uncertainty.kind,
        low=uncertainty.low_ns,
        high=uncertainty.high_ns,
        text=f"{interval_text(uncertainty.low_ns, uncertainty.high_ns)} ({KIND_LABELS[uncertainty.kind]})",
    )


def item_part(item: UncertaintyItem | None) -> UncertaintyPart | None:
    """An API item's interval (``store.schemas.UncertaintyItem``) as the pages give it."""
    return None if item is None else uncertainty_part(Uncertainty(item.kind, item.low, item.high))


def range_fields(rank_range: list[int] | None, distinct: bool | None, item: UncertaintyItem | None) -> dict[str, Any]:
    """``rank_fields`` from a store answer's fields (``schemas.RankedRunItem``, ``GroupBest``)."""
    return {
        "rank_range": rank_range,
        "rank_text": rank_text(rank_range[0], rank_range[1]) if rank_range else None,
        "distinct_from_best": distinct,
        "uncertainty": item_part(item),
    }


def rank_fields(ranked: RankedRun | None) -> dict[str, Any]:
    """The fields a ranked row adds (all None for a row that is not ranked)."""
    if ranked is None:
        return {"rank_range": None, "rank_text": None, "distinct_from_best": None, "uncertainty": None}
    return {
        "rank_range": list(ranked.rank_range),
        "rank_text": ranked.rank_text or str(ranked.rank),
        "distinct_from_best": ranked.distinct_from_best,
        "uncertainty": uncertainty_part(ranked.run.uncertainty),
    }
