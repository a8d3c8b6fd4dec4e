"""One Liger-Kernel workload's rows arranged as the registry shows them: its cases and its runs.

A run is one sweep: one implementation measured over the swept axis on one GPU with one
release at one time (the scripts stamp a whole sweep with one timestamp). Memory sweeps are
measured separately, a few seconds or minutes apart; each is shown beside the speed sweep of
the same implementation, GPU and release that is nearest to it in time.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from kernelindex.gpus import Gpu
from kernelindex.ingest.liger_kernel.rows import Measurement, SweepKey


@dataclass
class SweepRun:
    """One speed sweep, with the memory sweep shown beside it if there is one."""

    key: SweepKey
    gpu: Gpu
    # Case index → the row that measured it.
    speed: dict[int, Measurement] = field(default_factory=dict)
    memory: dict[int, Measurement] = field(default_factory=dict)
    memory_observed_at: datetime | None = None

    @property
    def files(self) -> list[str]:
        return sorted({row.file for row in self.speed.values()})


@dataclass
class Sweeps:
    """A workload's cases (values of the swept axis) and runs, with what did not fit."""

    x_label: str
    cases: list[int | float | str]
    runs: list[SweepRun]
    skipped: Counter[str] = field(default_factory=Counter)
    anomalies: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)


def ordered_cases(values: list[int | float | str]) -> list[int | float | str]:
    """Numbers ascending, then text in the order first seen; each value once."""
    numbers = sorted({value for value in values if not isinstance(value, str)})
    texts = list(dict.fromkeys(value for value in values if isinstance(value, str)))
    return [*numbers, *texts]


def arrange(unit: str, rows: list[Measurement]) -> Sweeps:
    """The cases and runs of one workload's rows (every row of ``rows`` belongs to it)."""
    kept, duplicates = _first_of_each(rows)
    speed = [row for row in kept if row.metric == "speed"]
    sweeps = Sweeps(x_label=speed[0].x_label if speed else "", cases=ordered_cases([row.x for row in speed]), runs=[])
    if duplicates:
        sweeps.anomalies["duplicate_row"] += len(duplicates)
        first = duplicates[0]
        sweeps.warnings.append(
            f"{unit}: {len(duplicates)} row(s) repeat a measurement already read "
            f"(the first at {first.file}:{first.line}); the first reading is kept"
        )
    index = {value: position for position, value in enumerate(sweeps.cases)}
    runs: dict[SweepKey, SweepRun] = {}
    for row in speed:
        run = runs.setdefault(row.sweep, SweepRun(row.sweep, row.gpu))
        run.speed[index[row.x]] = row
    sweeps.runs = sorted(runs.values(), key=lambda run: _order(run.key))
    _attach_memory(sweeps, [row for row in kept if row.metric == "memory"], index)
    _check_case_sets(unit, sweeps)
    return sweeps


def _order(key: SweepKey) -> tuple[str, str, str, datetime]:
    return (key.provider, key.gpu_name, key.version, key.timestamp)


def _first_of_each(rows: list[Measurement]) -> tuple[list[Measurement], list[Measurement]]:
    """The rows with each (metric, sweep, case) once, in file order, and the repeats left out."""
    seen: set[tuple[str, SweepKey, int | float | str]] = set()
    kept, repeats = [], []
    for row in rows:
        key = (row.metric, row.sweep, row.x)
        if key in seen:
            repeats.append(row)
        else:
            seen.add(key)
            kept.append(row)
    return kept, repeats


def _attach_memory(sweeps: Sweeps, memory: list[Measurement], index: dict[int | float | str, int]) -> None:
    """Each memory sweep goes beside the nearest speed sweep of its implementation, GPU and release;
    when two memory sweeps are nearest to one speed sweep, the nearer one is shown."""
    by_sweep: dict[SweepKey, list[Measurement]] = defaultdict(list)
    for row in memory:
        by_sweep[row.sweep].append(row)
    candidates: dict[tuple[str, str, str], list[SweepRun]] = defaultdict(list)
    for run in sweeps.runs:
        candidates[(run.key.gpu_name, run.key.provider, run.key.version)].append(run)

    choices: list[tuple[float, SweepKey, SweepRun]] = []
    for key, rows in by_sweep.items():
        peers = candidates.get((key.gpu_name, key.provider, key.version))
        if not peers:
            sweeps.skipped["memory_without_speed_run"] += len(rows)
            continue
        nearest = min(
            peers, key=lambda run: (abs((run.key.timestamp - key.timestamp).total_seconds()), _order(run.key))
        )
        choices.append((abs((nearest.key.timestamp - key.timestamp).total_seconds()), key, nearest))

    for _, key, run in sorted(choices, key=lambda choice: (choice[0], _order(choice[1]))):
        rows = by_sweep[key]
        if run.memory_observed_at is not None:
            sweeps.skipped["memory_superseded"] += len(rows)
            continue
        run.memory_observed_at = key.timestamp
        for row in rows:
            position = index.get(row.x)
            if position is None or position not in run.speed:
                sweeps.skipped["memory_without_speed_run"] += 1
            else:
                run.memory[position] = row


def _check_case_sets(unit: str, sweeps: Sweeps) -> None:
    """Runs of one comparison group (one GPU, one release) should have measured the same cases;
    where they did not, their suite figures are not like with like, and the report says so."""
    groups: dict[tuple[str, str], set[frozenset[int]]] = defaultdict(set)
    for run in sweeps.runs:
        groups[(run.key.gpu_name, run.key.version)].add(frozenset(run.speed))
    for (gpu_name, version), case_sets in sorted(groups.items()):
        if len(case_sets) > 1:
            sweeps.anomalies["case_set_differs"] += 1
            counts = sorted({len(cases) for cases in case_sets})
            sweeps.warnings.append(
                f"{unit}: runs on {gpu_name} with Liger-Kernel {version} measured different cases "
                f"({' or '.join(str(n) for n in counts)} of {len(sweeps.cases)}), so their suite figures "
                "cover different cases"
            )
