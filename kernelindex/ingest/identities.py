"""One upstream id, one result: run names met twice in one ingest.

A source that lists one result twice in one ingest, with the same figures under the same
workload, has it stored once. Listed twice with other figures or under another workload, it is
refused both times: neither copy is written, and the report names both places. (When the first
copy was written before the second was read, a group of units earlier, it stays as stored and the
report says so; the second is refused.)
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.figure_gate import Reason, Refused
from kernelindex.store.batch import Batch, RunRecord


@dataclass
class _Met:
    digest: str
    workload: str
    unit: str
    batch: Batch | None  # None once its group is written


class Identities:
    """The run names of one ingest so far: ``admit`` each mapped batch before it is queued for
    writing, ``written`` each group once written."""

    def __init__(self) -> None:
        self.met: dict[str, _Met] = {}
        self.conflicted: set[str] = set()

    def admit(self, batch: Batch) -> None:
        """Drop from ``batch`` (and from an earlier batch not yet written) the runs whose ids
        conflict; count and name them; drop exact repeats as duplicates."""
        kept: list[RunRecord] = []
        for record in batch.runs:
            name = record.stored.name
            earlier = self.met.get(name)
            if name in self.conflicted:
                self._refuse(batch, record, "listed a third time or more")
                continue
            if earlier is None:
                self.met[name] = _Met(record.stored.digest, batch.external_id, batch.unit, batch)
                kept.append(record)
                continue
            if earlier.digest == record.stored.digest and earlier.workload == batch.external_id:
                batch.skipped["duplicate"] += 1
                continue
            self.conflicted.add(name)
            what = "with other figures" if earlier.workload == batch.external_id else "under another workload"
            self._refuse(batch, record, f"listed again {what} than in {earlier.unit}")
            if earlier.batch is batch:  # twice in one unit: the first copy is among those kept
                first = next(run for run in kept if run.stored.name == name)
                kept = [run for run in kept if run.stored.name != name]
                self._refuse(batch, first, "listed twice in it with other figures")
            elif earlier.batch is not None:
                first = next(run for run in earlier.batch.runs if run.stored.name == name)
                earlier.batch.runs = [run for run in earlier.batch.runs if run.stored.name != name]
                self._refuse(earlier.batch, first, f"listed again {what} in {batch.unit}")
            else:
                batch.warnings.append(
                    f"{record.external_id}: the copy in {earlier.unit} was stored before this one was read; "
                    "it is kept as stored"
                )
        batch.runs = kept

    def written(self, group: list[Batch]) -> None:
        for batch in group:
            for record in batch.runs:
                if (met := self.met.get(record.stored.name)) is not None:
                    met.batch = None

    @staticmethod
    def _refuse(batch: Batch, record: RunRecord, why: str) -> None:
        batch.withheld.add(record.stored.name)
        sentence = f"one id, two results: {why}"
        batch.refused.add(record.external_id, Refused(Reason.DUPLICATE_ID, sentence))
