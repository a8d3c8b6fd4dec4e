"""AIConfigurator's kernel database as tables: where the files are and what each column is.

The data is a folder tree, ``<system>/<family>/<framework>/<version>/<table>.parquet``, with a
``collection_meta.yaml`` beside each table set and ``<system>.yaml`` datasheets one level up.
Each table's schema is read, never assumed: a column is either the measured latency, an axis
the table sweeps (the cases of a workload), the identity of a run (framework, version, device,
kernel) or part of the fixed configuration that makes the workload. A table with no latency
column or no kernel column is a schema this module does not map; the ingest reports it with its
row count instead of dropping it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kernelindex.ingest.bounds import NotARegularFile, open_regular, read_regular, regular_file_problem

# Milliseconds per call, under the name each table family uses.
LATENCY_COLUMNS = ("latency", "avg_ms")
# The axes a table sweeps: what changes from case to case of one workload (tokens, batch,
# sequence length, decode step, message size). Every other configuration column is fixed
# within a workload, parallelism included, because it changes the per-GPU shape.
SWEPT_COLUMNS = frozenset(
    {
        "m",
        "num_tokens",
        "num_token",
        "global_num_tokens",
        "dp_num_tokens",
        "rank0_num_tokens",
        "batch_size",
        "isl",
        "seq_len",
        "step",
        "message_size",
    }
)
RUN_COLUMNS = frozenset({"framework", "version", "device", "kernel_source"})
# Measured alongside the latency (power draw, per-phase times); kept with each case, never a key.
MEASURED_COLUMNS = frozenset({"power", "power_limit"})
MEASURED_SUFFIXES = ("_us", "_gbps")
# A collection_meta.yaml or a datasheet is a few kilobytes; one larger is not read.
YAML_BYTES = 1024 * 1024


class DataDirError(Exception):
    """No AIConfigurator data folder where one was expected."""


def find_data_dir(given: Path | None) -> Path:
    """The ``systems/data`` folder: under ``given`` (the folder itself, ``systems/``, an unpacked
    wheel or a checkout of the upstream repository) or, without it, of the installed package."""
    if given is None:
        try:
            package = resources.files("aiconfigurator_core")
        except ModuleNotFoundError:
            raise DataDirError(
                "aiconfigurator-core is not installed: install it with pip install 'kernelindex[aiconfigurator]' "
                "or give --data-dir"
            ) from None
        given = Path(str(package))
    candidates = [
        given,
        given / "data",
        given / "systems" / "data",
        given / "aiconfigurator_core" / "systems" / "data",
        given / "aic-core" / "src" / "aiconfigurator_core" / "systems" / "data",
    ]
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob("*/*/*/*/*.parquet")):
            return candidate
    raise DataDirError(
        f"{given}: no AIConfigurator data here (expected <system>/<family>/<framework>/<version>/*.parquet)"
    )


@dataclass(frozen=True)
class TableFile:
    """One Parquet file and what its place in the tree says about it."""

    path: Path
    relative: str
    system: str
    family: str
    framework: str
    version: str
    table: str

    @property
    def folder(self) -> Path:
        return self.path.parent


def table_files(data_dir: Path) -> tuple[list[TableFile], list[str]]:
    """The tables under ``data_dir``, and a line for each path that is not read: only regular files
    inside the folder are (a link pointing out of it, a device, a FIFO or a socket is refused
    before it is opened, so nothing outside is stored and no read blocks)."""
    files, refused = [], []
    for path in sorted(data_dir.glob("*/*/*/*/*.parquet")):
        relative = path.relative_to(data_dir)
        if (problem := regular_file_problem(path, data_dir)) is not None:
            refused.append(f"{relative.as_posix()}: {problem.removeprefix(path.name + ': ')}")
            continue
        system, family, framework, version, name = relative.parts
        files.append(
            TableFile(path, relative.as_posix(), system, family, framework, version, name.removesuffix(".parquet"))
        )
    return files, refused


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path, path.parent) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Schema:
    """How one table's columns are read; ``unmapped`` says why it cannot be, when it cannot."""

    latency: str | None
    swept: tuple[str, ...]
    config: tuple[str, ...]
    measured: tuple[str, ...]
    unmapped: str | None = None


def classify(columns: list[str]) -> Schema:
    latency = next((name for name in LATENCY_COLUMNS if name in columns), None)
    swept = tuple(name for name in columns if name in SWEPT_COLUMNS)
    measured = tuple(
        name
        for name in columns
        if name in MEASURED_COLUMNS or (name not in LATENCY_COLUMNS and name.endswith(MEASURED_SUFFIXES))
    )
    # Sorted: two files of one table may order their columns differently.
    config = tuple(
        sorted(
            name
            for name in columns
            if name not in RUN_COLUMNS
            and name not in SWEPT_COLUMNS
            and name not in measured
            and name not in LATENCY_COLUMNS
        )
    )
    unmapped = None
    if latency is None:
        unmapped = (
            "no latency column (its times are per phase: " + ", ".join(measured) + ")"
            if measured
            else "no latency column"
        )
    elif "kernel_source" not in columns:
        unmapped = "no kernel_source column"
    elif not swept:
        unmapped = "no swept axis"
    return Schema(latency, swept, config, measured, unmapped)


@dataclass(frozen=True)
class Collection:
    """``collection_meta.yaml`` of one folder: collected or carried over (legacy), and per-table status."""

    provenance: str
    table_status: dict[str, str] = field(default_factory=dict)


def _safe_yaml(text: str) -> Any:
    # libyaml's loader where PyYAML was built with it: a full package has a few hundred
    # collection_meta.yaml files, and the pure-Python loader spends a second on them.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_collection(folder: Path) -> Collection:
    path = folder / "collection_meta.yaml"
    if not path.exists():
        return Collection("not recorded")
    try:
        meta = _safe_yaml(read_regular(path, folder, YAML_BYTES).decode("utf-8")) or {}
    except NotARegularFile as exc:
        raise ValueError(str(exc)) from None
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path.name}: not readable YAML ({type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path.name}: not a mapping")
    tables = meta.get("tables") if isinstance(meta.get("tables"), dict) else {}
    status = {
        str(name): str(entry.get("status"))
        for name, entry in (tables or {}).items()
        if isinstance(entry, dict) and entry.get("status") is not None
    }
    return Collection(str(meta.get("provenance") or "not recorded"), status)


def read_datasheet(data_dir: Path, system: str) -> tuple[dict[str, float | int], str | None] | None:
    """The figures ``<system>.yaml`` (beside the data folder) gives for one GPU of the system, by
    name (bytes, bytes per second, FLOP/s per data type, watts), and the datasheet it cites."""
    path = data_dir.parent / f"{system}.yaml"
    if not path.exists():
        return None
    try:
        text = read_regular(path, data_dir.parent, YAML_BYTES).decode("utf-8")
        sheet = _safe_yaml(text) or {}
    except (NotARegularFile, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None
    found = sheet.get("gpu") if isinstance(sheet, dict) else None
    gpu: dict[str, Any] = found if isinstance(found, dict) else {}
    names = {"mem_bw": "memory_bandwidth_bytes_per_s", "mem_capacity": "memory_bytes", "power": "power_w"}
    figures: dict[str, float | int] = {}
    for key, value in gpu.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if key in names:
            figures[names[key]] = value
        elif key.endswith("_tc_flops"):
            figures[f"{key.removesuffix('_tc_flops')}_tensor_flops_per_s"] = value
        elif key == "sm_version":
            figures["sm_version"] = value
    reference = next((line.strip("# ").strip() for line in text.splitlines() if line.startswith("# http")), None)
    return figures, reference


def by_table(files: list[TableFile]) -> Iterator[tuple[str, list[TableFile]]]:
    """Files grouped by table name, in name order: a workload is one table × configuration, on any system."""
    grouped: dict[str, list[TableFile]] = {}
    for item in files:
        grouped.setdefault(item.table, []).append(item)
    yield from sorted(grouped.items())
