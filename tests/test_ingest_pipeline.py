"""Mapping in a second process: the writer gets the batches, error lines and drift it would have
made alone, in order, and a mapping process that fails stops the ingest with its reason."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from kernelindex.db.tables import Run, Workload
from kernelindex.ingest import pipeline
from kernelindex.ingest.aiconfigurator import AIConfigurator, find_data_dir
from kernelindex.ingest.pipeline import map_unit, mapped_units
from kernelindex.ingest.sources import SOURCES, ingest
from kernelindex.settings import Settings
from kernelindex.store.batch import Batch, UnitFailure

SLICE = SOURCES["aiconfigurator"].bundled
OBSERVED = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.fixture
def in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every adapter that allows it maps in a second process, however few its units."""
    monkeypatch.setattr(pipeline, "PARALLEL_FROM", 1)
    monkeypatch.setattr(pipeline, "POLL_SECONDS", 0.2)


def slice_adapter() -> tuple[AIConfigurator, list[str]]:
    adapter = AIConfigurator(find_data_dir(SLICE), "0.12.0", OBSERVED)
    return adapter, adapter.discover().units


def manifests(batch: Batch) -> list[tuple[str, str, str]]:
    every = [batch.workload, *batch.protocols, *batch.environments, *batch.implementations]
    every += [record.manifest for record in batch.runs]
    return [(type(m).__name__, m.digest, m.model_dump_json()) for m in every]


def test_batches_mapped_in_a_second_process_equal_those_mapped_here(in_parallel: None) -> None:
    adapter, units = slice_adapter()
    units = units[:60]
    here = [map_unit(adapter, unit) for unit in units]
    adapter, _ = slice_adapter()
    there = list(mapped_units(adapter, units))
    assert [unit for unit, _ in there] == units
    assert all(isinstance(batch, Batch) for batch in here)
    for (_, mapped), alone in zip(there, here, strict=True):
        assert isinstance(mapped, Batch) and isinstance(alone, Batch)
        assert manifests(mapped) == manifests(alone)
        assert [r.external_id for r in mapped.runs] == [r.external_id for r in alone.runs]
        # What the store writes of a run arrives computed: the writer validates no run manifest.
        assert [vars(r)["stored"] for r in mapped.runs] == [r.stored for r in alone.runs]
        assert {"text", "digest"} <= set(mapped.workload.__dict__)


class Scripted:
    """An adapter whose units fail, crash or end the process on cue."""

    maps_in_parallel = True

    def __init__(self, failures: dict[str, str]):
        self.failures = failures
        self.drift: set[str] = set()

    def fetch(self, unit: str) -> str:
        return unit

    def map(self, unit: str, fetched: str) -> Any:
        what = self.failures.get(unit)
        self.drift.add(f"field-of-{unit}")
        if what == "unit":
            raise UnitFailure(f"{unit}: the upstream lists no cases")
        if what == "value":
            raise ValueError("a latency below zero")
        if what == "crash":
            raise KeyError("a bug")
        if what == "exit":
            os._exit(9)
        return fetched


def test_failed_units_come_back_as_their_report_lines_and_drift_comes_back(in_parallel: None) -> None:
    adapter = Scripted({"b": "unit", "c": "value"})
    results = list(mapped_units(adapter, ["a", "b", "c", "d"]))
    assert results == [
        ("a", "a"),
        ("b", "b: the upstream lists no cases"),
        ("c", "c: a latency below zero"),
        ("d", "d"),
    ]
    assert adapter.drift == {"field-of-a", "field-of-b", "field-of-c", "field-of-d"}


def test_a_bug_in_the_mapping_process_stops_the_ingest_with_its_traceback(in_parallel: None) -> None:
    seen = []
    with pytest.raises(RuntimeError, match="mapping b failed in the mapping process") as raised:
        for unit, _ in mapped_units(Scripted({"b": "crash"}), ["a", "b", "c"]):
            seen.append(unit)
    assert seen == ["a"]
    assert "KeyError: 'a bug'" in str(raised.value)


def test_a_mapping_process_that_dies_is_noticed(in_parallel: None) -> None:
    with pytest.raises(RuntimeError, match="the mapping process ended unexpectedly"):
        list(mapped_units(Scripted({"b": "exit"}), ["a", "b", "c"]))


def test_units_come_back_in_order_from_the_processes_that_take_turns(in_parallel: None) -> None:
    adapter = Scripted({})
    units = ["a1", "b1", "b2", "c1", "a2", "d1", "d2", "d3"]
    assert list(mapped_units(adapter, units)) == [(unit, unit) for unit in units]
    assert adapter.drift == {f"field-of-{unit}" for unit in units}


def test_few_units_are_mapped_here() -> None:
    adapter = Scripted({})
    assert list(mapped_units(adapter, ["a"])) == [("a", "a")]
    assert adapter.drift == {"field-of-a"}  # mapped in this process: nothing was copied back


def test_an_ingest_mapped_in_parallel_stores_what_mapping_alone_gives(db: Any, in_parallel: None) -> None:
    adapter, units = slice_adapter()
    batches = [map_unit(adapter, unit) for unit in units]
    assert all(isinstance(batch, Batch) for batch in batches)
    summary = ingest(db.sessions, Settings(database_url=db.url), "aiconfigurator", snapshot=SLICE)
    assert summary.status == "succeeded", summary.errors
    with db.sessions() as session:
        workloads = {tuple(row) for row in session.execute(select(Workload.external_id, Workload.digest))}
        runs = {tuple(row) for row in session.execute(select(Run.name, Run.digest, Run.manifest_json))}
    assert workloads == {(b.external_id, b.workload.digest) for b in batches if isinstance(b, Batch)}
    assert runs == {
        (r.manifest.metadata.name, r.manifest.digest, r.manifest.text)
        for b in batches
        if isinstance(b, Batch)
        for r in b.runs
    }
