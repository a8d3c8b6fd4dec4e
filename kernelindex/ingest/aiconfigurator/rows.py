"""AIConfigurator rows, checked and grouped: a workload per table × fixed configuration, a run per
system, framework, version and kernel within it, a point per swept value.

Every row is accounted for. A row is skipped, with its reason counted and its file named, when
its latency is missing or not a positive number, or when its device string contradicts the
system folder it was found in (it is never relabelled). The checks are column operations, so
the same rule decides which rows are kept when the tables are surveyed (counting) and when
they are read (grouping).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernelindex.figure_gate import MAX_LATENCY_NS, MIN_LATENCY_NS, NS_PER, Reason, Refusals, Refused
from kernelindex.gpus import Gpu
from kernelindex.ingest.aiconfigurator.tables import Schema, TableFile, classify
from kernelindex.ingest.bounds import NotARegularFile, open_regular

NativeScalar = str | int | float | bool | None


@dataclass(frozen=True)
class System:
    """A system folder's GPU and the device strings its rows may carry (the full name the driver
    reports, and shorter forms some collectors wrote)."""

    gpu: Gpu
    device_names: frozenset[str]


class TableError(Exception):
    """A file that cannot be read as a table at all; the ingest names it and goes on."""


@dataclass(frozen=True)
class WorkloadKey:
    table: str
    config: tuple[tuple[str, NativeScalar], ...]

    @cached_property
    def external_id(self) -> str:
        identity = json.dumps([self.table, list(self.config)], separators=(",", ":"), default=str)
        return f"{self.table.removesuffix('_perf')[:40]}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"

    def value(self, name: str) -> NativeScalar:
        return dict(self.config).get(name)


@dataclass(frozen=True)
class RunKey:
    system: str
    framework: str
    version: str
    kernel: str


@dataclass(frozen=True, slots=True)
class Point:
    """One swept value's row: its latency and the row's other measured columns that hold a value.

    Slotted, with the measured values as pairs (usually none): a large table holds millions."""

    latency_ms: float
    measured: tuple[tuple[str, NativeScalar], ...] = ()


@dataclass
class RunRows:
    files: set[str] = field(default_factory=set)
    # (framework, version) as the rows write them, where that is not the folder's.
    recorded: set[tuple[str, str]] = field(default_factory=set)
    points: dict[tuple[NativeScalar, ...], Point] = field(default_factory=dict)
    duplicates: int = 0
    # A point measured again in the same table: its first repeat's latency (ms), the purest
    # measure of the source's noise there is (same kernel, version, GPU and shape).
    repeats: dict[tuple[NativeScalar, ...], float] = field(default_factory=dict)


@dataclass
class WorkloadRows:
    key: WorkloadKey
    swept: tuple[str, ...]
    runs: dict[RunKey, RunRows] = field(default_factory=dict)


@dataclass
class Checked:
    """One file after the row checks: the kept rows, and what was skipped and why."""

    table: pa.Table
    schema: Schema
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    refused: Refusals = field(default_factory=Refusals)


def read(file: TableFile, columns: list[str] | None = None) -> pa.Table:
    try:
        with open_regular(file.path, file.path.parent) as handle:
            return pq.read_table(handle, columns=columns)
    except NotARegularFile as exc:
        raise TableError(f"{file.relative}: {exc}") from None
    except (OSError, pa.ArrowException) as exc:
        raise TableError(f"{file.relative}: not a readable Parquet table ({exc})") from None


def read_rows(file: TableFile) -> int:
    """A file's row count from its footer, without reading its rows (0 if it cannot be read)."""
    try:
        with open_regular(file.path, file.path.parent) as handle:
            return pq.read_metadata(handle).num_rows
    except (NotARegularFile, OSError, pa.ArrowException):
        return 0


def check(file: TableFile, system: System, table: pa.Table) -> Checked:
    """Keep the rows with a positive latency and a device string that names the folder's GPU."""
    schema = classify(table.column_names)
    checked = Checked(table, schema)
    if schema.unmapped:
        return checked
    assert schema.latency is not None
    column = table.column(schema.latency)
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        # The figure gate's rule for a whole column: a Parquet latency is a typed number.
        sentence = f"the column {schema.latency} holds {column.type}, not numbers (milliseconds)"
        checked.refused.add(file.relative, Refused(Reason.WRONG_TYPE, sentence), rows=table.num_rows)
        checked.table = table.slice(0, 0)
        return checked
    latency = pc.cast(column, pa.float64())
    # The gate's rules, as column operations: finite, and 1 ns to an hour once in ns. A missing
    # latency, or one of zero or less, is no result and is skipped as ever.
    finite = pc.fill_null(pc.is_finite(latency), False)
    positive = pc.and_(finite, pc.fill_null(pc.greater(latency, 0.0), False))
    low, high = MIN_LATENCY_NS / NS_PER["ms"], MAX_LATENCY_NS / NS_PER["ms"]
    in_range = pc.and_(pc.greater_equal(latency, low), pc.less_equal(latency, high))
    _refuse(file, checked, pc.invert(pc.is_finite(latency)), latency, Reason.NOT_FINITE, "not a finite number")
    _refuse(file, checked, pc.and_(positive, pc.invert(in_range)), latency, Reason.OUT_OF_RANGE,
            f"outside 1 ns to 1 hour (in ms: {low:g} to {high:g})")  # fmt: skip
    keep = pc.and_(positive, in_range)
    kept = pc.sum(pc.cast(keep, pa.int64())).as_py() or 0
    missing = table.num_rows - kept - checked.refused.total
    if missing:
        checked.skipped["latency_missing_or_not_positive"] += missing
        checked.warnings.append(f"{file.relative}: {missing} rows without a positive latency, skipped")
    if "device" in table.column_names:
        devices = [value for value in pc.unique(table.column("device")).to_pylist()]
        wrong = [value for value in devices if value not in system.device_names]
        if wrong:
            contradicts = pc.fill_null(pc.is_in(table.column("device"), value_set=pa.array(wrong)), True)
            count = pc.sum(pc.cast(pc.and_(keep, contradicts), pa.int64())).as_py() or 0
            keep = pc.and_(keep, pc.invert(contradicts))
            if count:
                checked.skipped["device_contradicts_folder"] += count
                names = ", ".join(repr(value) for value in wrong)
                checked.warnings.append(
                    f"{file.relative}: {count} rows name the device {names}, not the folder's "
                    f"{system.gpu.product}: skipped, not relabelled"
                )
    checked.table = table.filter(keep)
    return checked


def _refuse(file: TableFile, checked: Checked, rows: Any, latency: Any, reason: Reason, what: str) -> None:
    """Count the rows the ``rows`` mask selects as refused for ``reason``, naming the first."""
    found = pc.indices_nonzero(pc.fill_null(rows, False))
    if len(found) == 0:
        return
    first = found[0].as_py()
    name = checked.schema.latency
    sentence = f"{name} is {latency[first].as_py()!r}, {what}"
    where = f"{file.relative}: row {first + 1}" + (f" and {len(found) - 1} more" if len(found) > 1 else "")
    checked.refused.add(where, Refused(reason, sentence), rows=len(found))


def workload_keys(file: TableFile, checked: Checked) -> list[WorkloadKey]:
    """The distinct workloads of a checked file, without reading its rows one by one."""
    schema = checked.schema
    if not schema.config:
        return [WorkloadKey(file.table, ())]
    distinct = checked.table.select(list(schema.config)).group_by(list(schema.config)).aggregate([])
    columns = [_scalars(distinct.column(name)) for name in schema.config]
    return [
        WorkloadKey(file.table, tuple(zip(schema.config, values, strict=True))) for values in zip(*columns, strict=True)
    ]


def _scalars(column: pa.ChunkedArray) -> list[NativeScalar]:
    """``_scalar`` of each cell: read as they are where Arrow already gives JSON scalars (a full
    package's distinct configurations are a few hundred thousand cells)."""
    values: list[Any] = column.to_pylist()
    if pa.types.is_integer(column.type) or pa.types.is_string(column.type) or pa.types.is_boolean(column.type):
        return values
    return [_scalar(value) for value in values]


@dataclass
class GroupedFile:
    """One file's checked rows grouped by Arrow: a row per configuration and kernel (a run), its
    swept values, latencies and other measured values as lists. Kept columnar until a workload
    is fetched: a table's rows as Python objects would take gigabytes."""

    file: TableFile
    schema: Schema
    recorded: set[tuple[str, str]]
    kernels: list[str]
    runs: pa.Table

    def add_run(self, index: int, rows: WorkloadRows) -> None:
        """Add the run at ``index`` to its workload's ``rows``: its points in the order of the file."""
        schema = self.schema
        assert schema.latency is not None
        # The folder names the framework and version; the rows' own columns are kept as recorded.
        file = self.file
        run = rows.runs.setdefault(RunKey(file.system, file.framework, file.version, self.kernels[index]), RunRows())
        run.files.add(file.relative)
        run.recorded |= self.recorded
        points = zip(*(self._list(name, index) for name in schema.swept), strict=True)
        latencies = self._list(schema.latency, index)
        measured = [self._list(name, index) for name in schema.measured]
        found = run.points
        # One pass per case of every run of the package (12.6 million): kept to plain lookups.
        for position, (point, latency) in enumerate(zip(points, latencies, strict=True)):
            if point in found:
                run.duplicates += 1
                run.repeats.setdefault(point, float(latency))
                continue
            extra = (
                tuple(
                    (name, column[position])
                    for name, column in zip(schema.measured, measured, strict=True)
                    if column[position] is not None
                )
                if measured
                else ()
            )
            found[point] = Point(float(latency), extra)

    def _list(self, name: str, index: int) -> list[Any]:
        values: list[Any] = self.runs.column(f"{name}_list")[index].as_py()
        return values


@dataclass
class PendingWorkload:
    """A workload's runs in the grouped files, not yet read out (``rows`` does)."""

    key: WorkloadKey
    swept: tuple[str, ...]
    runs: list[tuple[GroupedFile, int]] = field(default_factory=list)

    def rows(self) -> WorkloadRows:
        rows = WorkloadRows(self.key, self.swept)
        for grouped, index in self.runs:
            grouped.add_run(index, rows)
        return rows


def group(file: TableFile, checked: Checked, workloads: dict[str, PendingWorkload]) -> None:
    """Add the checked rows of ``file`` to ``workloads`` (by external id): a run per configuration
    and kernel, grouped by Arrow and read out only when its workload is (``PendingWorkload.rows``)."""
    schema = checked.schema
    assert schema.latency is not None
    table = _exact_integers(checked.table, schema)
    values = [*schema.swept, schema.latency, *schema.measured]
    runs = table.group_by([*schema.config, "kernel_source"], use_threads=False).aggregate(
        [(name, "list") for name in values]
    )
    grouped = GroupedFile(
        file,
        schema,
        recorded_stacks(file, table),
        [str(kernel) for kernel in runs.column("kernel_source").to_pylist()],
        runs.select([f"{name}_list" for name in values]),
    )
    configs = zip(*(runs.column(name).to_pylist() for name in schema.config), strict=True) if schema.config else None
    keys: dict[tuple[Any, ...], PendingWorkload] = {}
    for index in range(runs.num_rows):
        config = next(configs) if configs is not None else ()
        pending = keys.get(config)
        if pending is None:
            key = WorkloadKey(file.table, tuple(zip(schema.config, map(_scalar, config), strict=True)))
            pending = workloads.get(key.external_id)
            if pending is None:
                pending = workloads[key.external_id] = PendingWorkload(key, schema.swept)
            keys[config] = pending
        pending.runs.append((grouped, index))


def _exact_integers(table: pa.Table, schema: Schema) -> pa.Table:
    """Float columns of the shape that hold only whole numbers, as integers: a shape is a count,
    and 4096.0 and 4096 must be one case."""
    for name in (*schema.swept, *schema.config):
        column = table.column(name)
        if not pa.types.is_floating(column.type) or table.num_rows == 0:
            continue
        finite = pc.drop_null(column)
        whole = len(finite) == 0 or pc.all(pc.equal(finite, pc.floor(finite))).as_py()
        if whole:
            table = table.set_column(table.column_names.index(name), name, pc.cast(column, pa.int64()))
    return table


def recorded_stacks(file: TableFile, table: pa.Table) -> set[tuple[str, str]]:
    """The (framework, version) pairs the rows write that differ from the folder's."""
    if "framework" not in table.column_names or "version" not in table.column_names:
        return set()
    pairs = table.select(["framework", "version"]).group_by(["framework", "version"]).aggregate([]).to_pylist()
    return {
        (str(pair["framework"]), str(pair["version"]))
        for pair in pairs
        if str(pair["framework"]).lower() != file.framework or str(pair["version"]) != file.version
    }


def _scalar(value: Any) -> NativeScalar:
    """A cell as a JSON scalar: whole floats as integers (a shape is a count), NaN as missing."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() else value
    if value is None or isinstance(value, str | bool | int):
        return value
    return str(value)
