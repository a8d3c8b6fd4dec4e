"""Liger-Kernel's benchmark CSV files, read into checked measurements.

A row is one measurement: one implementation (``kernel_provider``) of one operation
(``kernel_name`` in ``kernel_operation_mode``) at one value of the swept axis (``x_name`` =
``x_value``) under a fixed configuration (``extra_benchmark_config_str``, JSON), on one GPU, at
one time, with one Liger-Kernel release. ``speed`` rows are latencies in ms (the median and
20th/80th percentiles of ``triton.testing.do_bench``); ``memory`` rows are peak memory in MB.

A row that cannot be used is skipped by reason and named by file and line; a file that cannot
be read at all (not UTF-8, not CSV, a header without the columns) is a ``FileError``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from kernelindex.figure_gate import Refusals, Refused, latency_ns, number, positive
from kernelindex.gpus import Gpu, gpu_for_device_name
from kernelindex.ingest.bounds import DEFAULT_MAX_JSON_DEPTH, Bounds, json_depth_over
from kernelindex.ingest.values import first_error, holds_control_characters, utc
from kernelindex.manifests.types import MAX_SAFE_INTEGER

DATA_FILES = (
    "benchmark/data/all_benchmark_data.csv",
    "benchmark/data/all_benchmark_data_cutile.csv",
    "benchmark/data/all_benchmark_data_cutedsl.csv",
)
COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
# The metrics the registry reads, each with the only unit it is published in.
METRIC_UNITS = {"speed": "ms", "memory": "MB"}
# A broken file could hold thousands of bad rows: the report names this many, then counts the rest.
NAMED_ROWS_PER_FILE = 20

# Names that become parts of URLs and manifest names: an identifier, as the source writes them.
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")]
_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


class FileError(Exception):
    """A data file that cannot be read as the source's CSV; the message names the file."""


@dataclass(frozen=True)
class Skip:
    """Why a row is not used: ``malformed_row``, ``unknown_metric`` or ``unknown_gpu``, and what."""

    reason: str
    detail: str


def axis_value(text: str) -> int | float | str:
    """An ``x_value`` as a number when it is one (``4096``, ``0.5``), else the text (``llama_2_7b``)."""
    if _INTEGER.fullmatch(text):
        number = int(text)
        if abs(number) > MAX_SAFE_INTEGER:
            raise ValueError(f"{text} is beyond ±{MAX_SAFE_INTEGER}, which JSON cannot carry exactly")
        return number
    if _DECIMAL.fullmatch(text):
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{text} is not a finite number")
        return value
    return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # JSON reads 1e999999 as infinity, which no manifest can hold.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


@dataclass(frozen=True)
class WorkloadKey:
    """One sweep definition: operation × mode × swept axis × fixed configuration (canonical JSON)."""

    kernel: str
    mode: str
    x_name: str
    config_json: str

    @property
    def config(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.config_json)
        return value

    @property
    def hash8(self) -> str:
        """The first 8 hex digits of the sha256 of the whole key: the part that tells configurations apart."""
        identity = json.dumps([self.kernel, self.mode, self.x_name, self.config_json], separators=(",", ":"))
        return hashlib.sha256(identity.encode()).hexdigest()[:8]

    @property
    def external_id(self) -> str:
        """Stable, readable and at most 64 characters: ``kernel/mode/x_name/hash8``."""
        return f"{f'{self.kernel}/{self.mode}/{self.x_name}'[:55]}/{self.hash8}"


@dataclass(frozen=True)
class SweepKey:
    """One sweep as measured: one implementation on one GPU with one release at one time."""

    gpu_name: str
    provider: str
    version: str
    timestamp: datetime


@dataclass(frozen=True)
class Measurement:
    """One usable row: where it is, what it measured, and its figures as published."""

    file: str
    line: int
    workload: WorkloadKey
    sweep: SweepKey
    metric: str
    x_label: str
    x: int | float | str
    median: Decimal
    p20: Decimal
    p80: Decimal
    gpu: Gpu
    timestamp_text: str


class Row(BaseModel):
    """One CSV row, checked field by field (columns the registry does not read are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kernel_name: Identifier
    kernel_provider: Identifier
    kernel_operation_mode: Identifier
    metric_name: str
    metric_unit: str
    x_name: Identifier
    x_label: Annotated[str, StringConstraints(max_length=200)]
    x_value: int | float | str
    # The figures as written (text: this is CSV), checked by the figure gate in ``_classify``.
    y_value_50: str
    y_value_20: str
    y_value_80: str
    config: dict[str, Any] = Field(alias="extra_benchmark_config_str")
    gpu_name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    timestamp: datetime
    timestamp_text: str
    liger_version: Identifier

    @model_validator(mode="before")
    @classmethod
    def _plain_text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if any(holds_control_characters(value) for value in data.values()):
                raise ValueError("a field holds control characters")
            data = {**data, "timestamp_text": data.get("timestamp")}
        return data

    @field_validator("x_value", mode="before")
    @classmethod
    def _x(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise ValueError("empty")
        return axis_value(value)

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, value: Any) -> Any:
        # The scripts write nothing when a benchmark has no fixed configuration.
        if value == "":
            return {}
        if not isinstance(value, str):
            raise ValueError("expected JSON text")
        try:
            config = json.loads(value, parse_constant=_reject_constant, parse_float=_finite_float)
        except RecursionError:
            raise ValueError("too deep: JSON nested deeper than can be read") from None
        if json_depth_over(config, DEFAULT_MAX_JSON_DEPTH):
            raise ValueError(f"too deep: JSON nested deeper than {DEFAULT_MAX_JSON_DEPTH} levels")
        if not isinstance(config, dict):
            raise ValueError("expected a JSON object")
        for key, item in config.items():
            if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_SAFE_INTEGER:
                raise ValueError(f"{key} is beyond ±{MAX_SAFE_INTEGER}, which JSON cannot carry exactly")
        return config

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("expected text")
        # ISO 8601 only: Pydantic would also read a bare number as seconds since the epoch.
        return utc(datetime.fromisoformat(value))


@dataclass
class FileReading:
    """The usable rows of one file and what was skipped in it."""

    rows: list[Measurement] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    drift: set[str] = field(default_factory=set)
    refused: Refusals = field(default_factory=Refusals)


def read_file(path: str, body: bytes, bounds: Bounds | None = None) -> FileReading:
    """Every row of one data file, checked; raises ``FileError`` when the file as a whole is unusable
    (a header of more columns than ``bounds`` allow included). A row wider than they allow is skipped."""
    bounds = bounds or Bounds()
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    reading = FileReading()
    malformed: list[str] = []
    unknown_gpus: Counter[str] = Counter()
    try:
        header = reader.fieldnames or []
        if len(header) > bounds.max_csv_columns:
            raise FileError(
                f"{path}: too large: the header has {len(header)} columns, more than the {bounds.max_csv_columns} "
                "a table may have (KERNELINDEX_INGEST_MAX_CSV_COLUMNS); not read: check the upstream"
            )
        if missing := [column for column in COLUMNS if column not in header]:
            raise FileError(f"{path}: the header lacks the column(s) {', '.join(missing)}")
        reading.drift |= {f"csv.{column}" for column in header if column not in COLUMNS}
        for raw in reader:
            line = reader.line_num
            result = _classify(path, line, raw) if _width(raw) <= bounds.max_row_chars else _too_wide(bounds)
            if isinstance(result, Measurement):
                reading.rows.append(result)
                continue
            if isinstance(result, Refused):
                reading.refused.add(f"{path}:{line}", result)
                continue
            reading.skipped[result.reason] += 1
            if result.reason == "unknown_gpu":
                unknown_gpus[result.detail] += 1
            elif result.reason == "malformed_row":
                malformed.append(f"{path}:{line}: {result.detail}")
    except csv.Error as exc:
        raise FileError(f"{path}: not readable as CSV at line {reader.line_num} ({exc})") from None
    reading.warnings += malformed[:NAMED_ROWS_PER_FILE]
    if len(malformed) > NAMED_ROWS_PER_FILE:
        reading.warnings.append(f"{path}: {len(malformed) - NAMED_ROWS_PER_FILE} more malformed rows skipped")
    reading.warnings += [
        f"{path}: {count} row(s) measured on {name!r}, a GPU not in the registry's GPU table, were skipped"
        for name, count in sorted(unknown_gpus.items())
    ]
    return reading


def _figures(metric: str, row: Row) -> tuple[Decimal, Decimal, Decimal]:
    """The median, 20th and 80th percentiles through the figure gate: a latency in ms (1 ns to an
    hour) or a peak memory in MB (positive); ``Refused`` names the first that is not."""
    columns = ("y_value_50", "y_value_20", "y_value_80")
    for column in columns:
        if metric == "speed":
            latency_ns(column, getattr(row, column), "ms", text=True)
        else:
            positive(column, getattr(row, column), text=True)
    median, p20, p80 = (Decimal(number(column, getattr(row, column), text=True)) for column in columns)
    return median, p20, p80


def _width(raw: dict[str | None, Any]) -> int:
    """The characters of a row's fields (those past the header's too)."""
    return sum(len(value) if isinstance(value, str) else sum(map(len, value or ())) for value in raw.values())


def _too_wide(bounds: Bounds) -> Skip:
    return Skip("malformed_row", f"wider than {bounds.max_row_chars} characters (KERNELINDEX_INGEST_MAX_ROW_CHARS)")


def _classify(path: str, line: int, raw: dict[str | None, Any]) -> Measurement | Skip | Refused:
    """The row as a measurement, why it is not one, or the figure the gate refused."""
    if None in raw:
        return Skip("malformed_row", "more fields than the header")
    if missing := [column for column in COLUMNS if raw.get(column) is None]:
        return Skip("malformed_row", f"no value for {', '.join(missing)} (fewer fields than the header)")
    try:
        row = Row.model_validate(raw)
    except ValidationError as exc:
        return Skip("malformed_row", _first_error(exc))
    if METRIC_UNITS.get(row.metric_name) != row.metric_unit:
        return Skip("unknown_metric", f"{row.metric_name} in {row.metric_unit}")
    gpu = gpu_for_device_name(row.gpu_name)
    if gpu is None:
        return Skip("unknown_gpu", row.gpu_name)
    try:
        median, p20, p80 = _figures(row.metric_name, row)
    except Refused as refused:
        return refused
    workload = WorkloadKey(
        row.kernel_name,
        row.kernel_operation_mode,
        row.x_name,
        json.dumps(row.config, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    )
    return Measurement(
        file=path,
        line=line,
        workload=workload,
        sweep=SweepKey(row.gpu_name, row.kernel_provider, row.liger_version, row.timestamp),
        metric=row.metric_name,
        x_label=row.x_label,
        x=row.x_value,
        median=median,
        p20=p20,
        p80=p80,
        gpu=gpu,
        timestamp_text=row.timestamp_text,
    )


def _first_error(error: ValidationError) -> str:
    # The model names the parsed configuration ``config``; the file's column is named otherwise.
    text = first_error(error, whole="row")
    return "extra_benchmark_config_str" + text.removeprefix("config") if text.startswith("config:") else text
