"""Fetching and mapping units in other processes while the first one writes.

An ingest of a large source spends most of its time mapping (validating manifests, computing
their digests and stored text) and the rest writing them; the two overlap in separate processes.
An adapter opts in with ``maps_in_parallel = True``. It promises that ``fetch`` and ``map`` touch
neither the store nor anything the writer needs back, apart from ``drift``: each mapping process
is a fork, holding a copy of the adapter as ``discover`` left it, and only the mapped batches,
one error line per failed unit and, at the end, the adapter's ``drift`` come back.

``MAPPERS`` processes take the units in turn (each reads every table once for its share: with
the rows kept columnar until a unit is fetched, that costs little), so that all keep pace with
the writer, which takes each unit from its process in the order the units were listed: an
ingest writes what it would have written alone. (The writer is busy about half the time: on two
cores, two mapping processes and the writer keep both busy.)
"""

from __future__ import annotations

import dataclasses
import gc
import io
import multiprocessing
import pickle
import queue
import traceback
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.queues import Queue
from typing import Any, cast

from kernelindex.ingest.bounds import BoundHit
from kernelindex.ingest.http import UpstreamError
from kernelindex.manifests import BenchmarkRun
from kernelindex.manifests.kinds import Manifest
from kernelindex.store.batch import Batch, RunRecord, StoredRun, UnitFailure

# Below this many units the fork and the copying cost more than the overlap gains.
PARALLEL_FROM = 2_000
# Mapping processes: see the module's note.
MAPPERS = 2
# Batches each maps ahead of the writer: enough to keep all busy, few enough to bound memory.
AHEAD = 64
# How often the writer, waiting for a batch, checks that the mapping process is still alive.
POLL_SECONDS = 5.0
# Allocations between two runs of the cyclic garbage collector while units are mapped and written
# (Python's default is 700): see ``fewer_collections``.
COLLECT_EVERY = 10_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the cyclic garbage collector less often: mapping makes millions of short-lived dicts
    (one per case result) beside the long-lived rows of the table being read, and at the default
    every collection walked those again. It took a third of a mapping process's time: 1,500
    AIConfigurator workloads mapped in 30.9 s, and in 20.9 s with this. Memory is bounded as
    before; cycles are only freed a little later."""
    before = gc.get_threshold()
    gc.set_threshold(COLLECT_EVERY, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def map_unit(adapter: Any, unit: str) -> Batch | str:
    """The unit's batch, or the line the ingest report gives for a unit that failed: one
    sentence per failure class (the adapter's own line where it gave one), never a traceback."""
    try:
        return adapter.map(unit, adapter.fetch(unit))
    except (UnitFailure, UpstreamError, BoundHit) as exc:
        return str(exc)  # the adapter's own line, naming the unit and the URL
    except UNREPORTED as exc:
        return failure_line(unit, exc)


# What an adapter may let through from a value it did not expect (pyarrow's wrong column type is a
# TypeError); each is one line of the report. A KeyError or an AttributeError is a bug, and stops
# the ingest (the command line words it, and keeps its traceback in a file).
UNREPORTED = (RecursionError, MemoryError, ArithmeticError, ValueError, TypeError)


def failure_line(where: str, exc: BaseException) -> str:
    """One sentence for a failure no adapter worded, by class: too deep, too large, out of range,
    malformed, wrong type; ``where`` names the unit or what was being read."""
    said = (str(exc).splitlines() or [""])[0][:300]
    if isinstance(exc, RecursionError):
        return f"{where}: too deep: it nests values deeper than can be read; not stored: check the upstream"
    if isinstance(exc, MemoryError):
        return f"{where}: too large to hold in memory; not stored: check the upstream"
    if isinstance(exc, ArithmeticError):
        return f"{where}: a number out of range ({type(exc).__name__}: {said}); not stored: check the upstream"
    if isinstance(exc, ValueError):
        return f"{where}: {exc}"  # malformed, as the parser said
    return f"{where}: a value of the wrong type or shape ({type(exc).__name__}: {said}); not stored: check the upstream"


def mapped_units(adapter: Any, units: Sequence[str]) -> Generator[tuple[str, Batch | str], None, None]:
    """Each unit with its batch or error line, in order; mapped in forked processes when the
    adapter allows it and the units are many enough."""
    with fewer_collections():
        if not getattr(adapter, "maps_in_parallel", False) or len(units) < PARALLEL_FROM:
            for unit in units:
                yield unit, map_unit(adapter, unit)
        else:
            yield from _mapped_in_parallel(adapter, units)


def _mapped_in_parallel(adapter: Any, units: Sequence[str]) -> Iterator[tuple[str, Batch | str]]:
    shares = [units[number::MAPPERS] for number in range(min(MAPPERS, len(units)))]
    context = multiprocessing.get_context("fork")
    queues: list[Queue[tuple[str, Any]]] = [context.Queue(maxsize=AHEAD) for _ in shares]
    processes = [
        context.Process(target=_map_all, args=(adapter, share, results), daemon=True)
        for share, results in zip(shares, queues, strict=True)
    ]
    for process in processes:
        process.start()
    try:
        for index, unit in enumerate(units):
            number = index % len(shares)  # the share ``units[number::MAPPERS]`` holds it
            kind, value = _next(queues[number], processes[number])
            if kind == "crashed":
                raise RuntimeError(f"mapping {unit} failed in the mapping process:\n{value}")
            yield unit, pickle.loads(value) if isinstance(value, bytes) else value
        for results, process in zip(queues, processes, strict=True):
            kind, value = _next(results, process)
            if kind == "drift":
                adapter.drift |= value
    finally:
        for process in processes:
            process.kill()
            process.join()
        for results in queues:
            results.close()


def _next(results: Queue[tuple[str, Any]], process: multiprocessing.process.BaseProcess) -> tuple[str, Any]:
    while True:
        try:
            return results.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if not process.is_alive():
                raise RuntimeError(f"the mapping process ended unexpectedly (exit code {process.exitcode})") from None


def _map_all(adapter: Any, units: Sequence[str], results: Queue[tuple[str, Any]]) -> None:
    try:
        for unit in units:
            mapped = map_unit(adapter, unit)
            results.put(("batch", _pack(mapped) if isinstance(mapped, Batch) else mapped))
        results.put(("drift", set(adapter.drift)))
    except BaseException:
        results.put(("crashed", traceback.format_exc()))
    results.close()
    results.join_thread()


class _ManifestPickler(pickle.Pickler):
    """Sends each manifest as its stored text and digest, computed here where the work overlaps
    the writes, and each run as what the store writes of it: the writer validates the text of the
    other manifests again (a fraction of unpickling their models), but a batch's runs, the bulk
    of it (a sweep's run holds dozens of case results, each a model of its own), not at all."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, RunRecord):
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name != "manifest"}
            return _unpack_run, (obj.stored, fields)
        if isinstance(obj, Manifest):
            return _unpack_manifest, (type(obj), obj.text, obj.digest)
        return NotImplemented


def _pack(batch: Batch) -> bytes:
    buffer = io.BytesIO()
    _ManifestPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(batch)
    return buffer.getvalue()


def _unpack_manifest(kind: type[Manifest], text: str, digest: str) -> Manifest:
    manifest = kind.model_validate_json(text)
    # The cached properties, as computed by the mapping process from the same manifest.
    manifest.__dict__.update(text=text, digest=digest)
    return manifest


class _ReceivedRun(RunRecord):
    """A run record as the writer receives it: ``stored`` as the mapping process computed it, the
    manifest validated from that text only if something reads it."""

    @property
    def manifest(self) -> BenchmarkRun:
        if (manifest := self.__dict__.get("_manifest")) is None:
            manifest = _unpack_manifest(BenchmarkRun, self.stored.text, self.stored.digest)
            self.__dict__["_manifest"] = manifest
        return cast(BenchmarkRun, manifest)


def _unpack_run(stored: StoredRun, fields: dict[str, Any]) -> RunRecord:
    record = object.__new__(_ReceivedRun)  # not __init__: the manifest is not set, but derived
    record.__dict__.update(fields, stored=stored)
    return record
